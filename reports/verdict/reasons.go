package verdict

import "slices"

// Class is what kind of "not qualified" a reason is. The verdict and the
// CLI's exit status are derived from the classes of a row's reasons, never
// from their codes or messages.
type Class string

// Reason classes, most severe first (the order Judge sorts reasons in).
const (
	// ClassInterrupted: the run was stopped (Ctrl-C, SIGTERM) before the row
	// was complete. Verdict interrupted.
	ClassInterrupted Class = "interrupted"
	// ClassNotRun: the checkpoint never started (e.g. a Slurm array task
	// cancelled while queued). Verdict not-run.
	ClassNotRun Class = "not-run"
	// ClassSetup: something the row needs was unavailable or misconfigured
	// (the server never came up, AIPerf unusable, GPU busy, the family
	// configuration, an input that cannot be prepared). Verdict error; `run`
	// exits 3.
	ClassSetup Class = "setup"
	// ClassBroken: a stage broke or the evidence cannot be trusted (a child
	// crashed, exports are incomplete or malformed, evidence changed after
	// the run). Verdict error.
	ClassBroken Class = "broken"
	// ClassFailed: the row ran on complete data and does not meet the
	// qualification contract (a gate, a match, the workload, the bundle pin,
	// the AIPerf version). Verdict failed.
	ClassFailed Class = "failed"
	// ClassExcluded: the inventory takes the profile out, with a reason.
	// Verdict excluded.
	ClassExcluded Class = "excluded"
)

// classRank orders classes by severity.
func classRank(c Class) int {
	switch c {
	case ClassInterrupted:
		return 0
	case ClassNotRun:
		return 1
	case ClassSetup:
		return 2
	case ClassBroken:
		return 3
	case ClassFailed:
		return 4
	case ClassExcluded:
		return 5
	}
	return 3 // unknown: as broken
}

// Code is a reason code: what a Reason or a Problem says went wrong. Every
// code is one of the constants below and has a row in Codes (its class);
// producers use the constants, never a string of their own, so a typo does
// not compile and no code falls silently to the default class
// (TestEveryCodeProducedIsInTheTable checks that no other value is made).
// In JSON a code is its string.
type Code string

// CodeInfo documents one reason code.
type CodeInfo struct {
	Code  Code
	Class Class
	// Stage is where the code arises ("" for several stages).
	Stage   string
	Meaning string
}

// Reason codes. Judge derives every reason of a row from the row's facts:
// the problems the pipeline recorded (their codes are in this table too),
// the correctness result, the join's counts, the workload and provenance.
const (
	// Recorded by the pipeline (Problem codes).
	CodeFamilyConfig      Code = "family_config"
	CodeMissingInput      Code = "missing_input"
	CodePrepareFailed     Code = "prepare_failed"
	CodeBundleUnreadable  Code = "bundle_unreadable"
	CodeDatasetIdentity   Code = "dataset_identity"
	CodeGPUBusy           Code = "gpu_busy"
	CodePort              Code = "port"
	CodePortInUse         Code = "port_in_use"
	CodeServerStart       Code = "server_start"
	CodeServerNotReady    Code = "server_not_ready"
	CodeServerExit        Code = "server_exit"
	CodeServerDied        Code = "server_died"
	CodeListenOffLoopback Code = "listen_off_loopback"
	CodeListenUnchecked   Code = "listen_unchecked"
	CodeCorrectnessNone   Code = "correctness_missing"
	CodeCorrectnessCrash  Code = "correctness_crashed"
	CodeCorrectnessOutput Code = "correctness_output"
	CodeDataset           Code = "dataset"
	CodeRequestTooLarge   Code = "request_too_large"
	CodeTokenizer         Code = "tokenizer"
	CodeAIPerfSetup       Code = "aiperf_setup"
	CodeAIPerfFailed      Code = "aiperf_failed"
	CodeAIPerfIncomplete  Code = "aiperf_incomplete"
	CodeServerRecords     Code = "server_records"
	CodeNativeFailed      Code = "native_failed"
	CodeNativeOutput      Code = "native_output"
	CodeJoinInput         Code = "join_input"
	CodeOutputLost        Code = "output_lost"
	CodeOrphan            Code = "orphan"
	CodeEvidenceDir       Code = "evidence_dir"
	CodeWriteFailed       Code = "write_failed"
	CodeStageFailed       Code = "stage_failed"
	CodeInterrupted       Code = "interrupted"
	CodeEvidenceChanged   Code = "evidence_changed"
	CodeEvidenceMalformed Code = "evidence_malformed"
	CodeExcluded          Code = "excluded"
	// Written by the Slurm executor for tasks that left no row of their own
	// (qual/slurm; stage "slurm").
	// GPU slots and hygiene (docs/gpu.md).
	CodeInsufficientGPUs        Code = "insufficient_gpus"
	CodeHardwareMismatch        Code = "hardware_mismatch"
	CodeGPURequired             Code = "gpu_required"
	CodeGPUProbe                Code = "gpu_probe"
	CodeGPUUnused               Code = "gpu_unused"
	CodeGPULeak                 Code = "gpu_leak"
	CodeHardwareMismatchAllowed Code = "hardware_mismatch_allowed"
	CodeSlurmNotStarted         Code = "slurm_not_started"
	CodeSlurmTaskEnded          Code = "slurm_task_ended"
	CodeSlurmTaskLost           Code = "slurm_task_lost"
	// No green row, third pass (issue 25).
	CodeResultMissing Code = "result_missing"
	CodeSurvivor      Code = "survivor"
	// Publication read closed (issue 32).
	CodeInventoryUnbound Code = "inventory_unbound"
	CodeSealLegacy       Code = "seal_legacy"
	CodeCriteriaDiffer   Code = "criteria_differ"

	// Derived by Judge from the data.
	CodeExplorationWorkload    Code = "exploration_workload"
	CodeBundleNotPinned        Code = "bundle_not_pinned"
	CodeBundleIdentity         Code = "bundle_identity"
	CodeBundleMismatch         Code = "bundle_mismatch"
	CodeBundleChangedValidate  Code = "bundle_changed_by_validation"
	CodeBundleChangedServing   Code = "bundle_changed_by_serving"
	CodeAIPerfVersion          Code = "aiperf_version"
	CodeCorrectnessNotRun      Code = "correctness_not_run"
	CodeCorrectnessIncomplete  Code = "correctness_incomplete"
	CodeCorrectnessFailed      Code = "correctness_failed"
	CodeCorrectnessInconsist   Code = "correctness_inconsistent"
	CodeNotJoined              Code = "not_joined"
	CodeNoRequests             Code = "no_requests"
	CodeShortCount             Code = "short_count"
	CodeUnmatched              Code = "unmatched"
	CodeMismatched             Code = JoinMismatched
	CodeErrored                Code = JoinErrored
	CodeMissingNative          Code = JoinMissingNative
	CodeMissingHTTP            Code = JoinMissingHTTP
	CodeMissingServerRec       Code = JoinMissingServerRecord
	CodeDuplicate              Code = JoinDuplicate
	CodeMeaningless            Code = JoinMeaningless
	CodeUnknownConversation    Code = JoinUnknownConversation
	CodeInconsistent           Code = JoinInconsistent
	CodeEchoMissing            Code = JoinEchoMissing
	CodeEchoMismatched         Code = JoinEchoMismatched
	CodeUnclaimedServerRecords Code = "unclaimed_server_records"
	CodeUnclaimedNative        Code = "unclaimed_native_answers"
	CodeUnclaimedRaw           Code = "unclaimed_raw_records"
	CodeCountsInconsist        Code = "counts_inconsistent"
	CodeLatencyIncomplete      Code = "latency_incomplete"
	CodeServerBusy             Code = JoinServerBusy
)

// Codes is the one table of reason codes: each code's class, where it
// arises and what it means, most severe class first, one function per
// class. docs/reliability.md prints it (a test keeps the two equal).
func Codes() []CodeInfo {
	return slices.Concat(notRunCodes(), setupCodes(), brokenCodes(), failedCodes(), excludedCodes())
}

// notRunCodes are the codes of the interrupted and not-run classes: the
// run was stopped, or the checkpoint never started.
func notRunCodes() []CodeInfo {
	return []CodeInfo{
		{CodeInterrupted, ClassInterrupted, "", "the run was interrupted (Ctrl-C, SIGTERM) in this stage; the row is incomplete"},
		{CodeSlurmNotStarted, ClassNotRun, "slurm", "the Slurm task never started (e.g. cancelled while queued)"},
		{CodeInsufficientGPUs, ClassNotRun, "schedule", "the profile needs more GPUs (tp x cp) than the run has: never started on fewer"},
		{CodeHardwareMismatch, ClassNotRun, "schedule", "the inventory's hardware scope does not admit the run's GPUs (--allow-hardware-mismatch runs it anyway)"},
	}
}

// setupCodes are the codes of the setup class: what the row needs was
// unavailable or misconfigured.
func setupCodes() []CodeInfo {
	return []CodeInfo{
		{CodeFamilyConfig, ClassSetup, "preflight", "the family configuration does not fit the group or does not expand"},
		{CodeMissingInput, ClassSetup, "preflight", "a bundle or corpus is missing and the family cannot prepare it"},
		{CodePrepareFailed, ClassSetup, "preflight", "the family's prepare command (bundle or corpus) failed"},
		{CodeBundleUnreadable, ClassSetup, "preflight", "the bundle cannot be read to digest it"},
		{CodeBundleIdentity, ClassSetup, "preflight", "the bundle the preflight digested is not the one the inventory pins (its sha256 differs): never served, not the bundle to qualify"},
		{CodeDatasetIdentity, ClassSetup, "preflight", "corpus.json's sha256 differs from the group's pin"},
		{CodeGPUBusy, ClassSetup, "preflight", "a GPU of the slot is not idle before timing (utilisation, or a foreign compute process)"},
		{CodeGPURequired, ClassSetup, "schedule", "the family needs a GPU and the run has only CPU slots"},
		{CodeGPUProbe, ClassSetup, "preflight", "nvidia-smi could not be read to check the slot's GPUs"},
		{CodePort, ClassSetup, "server", "no free port"},
		{CodePortInUse, ClassSetup, "server", "the family's port is held by another process"},
		{CodeServerStart, ClassSetup, "server", "the server could not be started"},
		{CodeServerNotReady, ClassSetup, "server", "the server never answered ready before the startup deadline"},
		{CodeServerExit, ClassSetup, "server", "the server exited during startup"},
		{CodeCorrectnessNone, ClassSetup, "correctness", "the family declares no correctness case"},
		{CodeAIPerfSetup, ClassSetup, "aiperf", "AIPerf cannot be run (missing, wrong version, bad tokenizer)"},
		{CodeDataset, ClassSetup, "aiperf", "the corpus cannot be read or the AIPerf dataset cannot be written"},
		{CodeRequestTooLarge, ClassSetup, "preflight", "a corpus entry's request is over one of the family's server limits (max_body_bytes, the server's --max-body-bytes; max_prompt_bytes, its --max-prompt-bytes): refused, naming the entry, its size and the limit, before the server starts"},
		{CodeTokenizer, ClassSetup, "preflight", "the tokenizer AIPerf chat loads is missing, unloadable offline, not its pin, or another checkpoint's"},
		{CodeListenUnchecked, ClassSetup, "server", "the addresses the server listens on cannot be checked on this host (not Linux): a row is never qualified unchecked"},
	}
}

// brokenCodes are the codes of the broken class: a stage broke or the
// evidence cannot be trusted.
func brokenCodes() []CodeInfo {
	return []CodeInfo{
		{CodeServerDied, ClassBroken, "aiperf", "the server exited while AIPerf measured it"},
		{CodeListenOffLoopback, ClassBroken, "", "the server's process group listens on an address off loopback (named), found after readiness or before the stop; nothing is measured on it"},
		{CodeCorrectnessCrash, ClassBroken, "correctness", "the correctness case crashed, hung or was killed"},
		{CodeCorrectnessOutput, ClassBroken, "correctness", "correctness.json is missing or malformed (file, field named)"},
		{CodeAIPerfFailed, ClassBroken, "aiperf", "AIPerf failed"},
		{CodeAIPerfIncomplete, ClassBroken, "aiperf", "AIPerf's exports are incomplete or inconsistent (fail-closed checks)"},
		{CodeServerRecords, ClassBroken, "stop-server", "the server's request records are missing or malformed"},
		{CodeNativeFailed, ClassBroken, "native", "the native runner failed"},
		{CodeNativeOutput, ClassBroken, "native", "the native answers are missing or malformed"},
		{CodeJoinInput, ClassBroken, "join", "an artifact the join reads is missing or malformed (file, line, field named)"},
		{CodeOutputLost, ClassBroken, "", "a child's output could not be kept in the evidence"},
		{CodeOrphan, ClassBroken, "stop", "the server's process group outlived SIGKILL"},
		{CodeGPUUnused, ClassBroken, "aiperf", "the server of a GPU family holds no memory on some GPU of its slot"},
		{CodeGPULeak, ClassBroken, "gpu-release", "a process of the run (or one not attributable) holds GPU memory after every child stopped"},
		{CodeEvidenceDir, ClassBroken, "preflight", "the evidence directory cannot be prepared"},
		{CodeWriteFailed, ClassBroken, "report", "result.json could not be written"},
		{CodeStageFailed, ClassBroken, "", "a stage failed without a more specific code"},
		{CodeEvidenceChanged, ClassBroken, "evidence", "a file of the evidence is missing, added or changed since the run sealed it (manifest.json)"},
		{CodeSlurmTaskEnded, ClassBroken, "slurm", "the Slurm task ended without a row of its own, or in a state that voids it (timeout, preemption, node failure, cancellation)"},
		{CodeSlurmTaskLost, ClassBroken, "slurm", "Slurm no longer knows the task and it left no row"},
		{CodeEvidenceMalformed, ClassBroken, "rejudge", "an artifact rejudge re-derives from is missing or malformed (file, line, field named)"},
		{CodeSurvivor, ClassBroken, "", "a process the run started, or a descendant, outlived its child outside the child's process group (setsid, setpgid): found by the sweep, killed, named by pid and argv"},
		{CodeServerBusy, ClassBroken, "join", "a request was refused 429 rate_limit_error server_busy: trtmc-server has no queue, so something else sent a request to the served model at the same time (a second client, a correctness case, a native replay or a probe overlapping the run; the harness never overlaps its own stages): the run was disturbed, run it again alone"},
		{CodeSealLegacy, ClassBroken, "evidence", "the evidence is sealed with the retired sha256-tree-1mib: its stored verdict and figures are not trusted as they are (`report --rejudge` re-derives them)"},
		{CodeCriteriaDiffer, ClassBroken, "rejudge", "a judging criterion the row stores (route, extractor, comparator, tolerance, labels, Task time source, served model...) or its criteria digest differs from the family configuration's or the inventory entry's, or the configuration has no such family: the row is re-judged by the configuration, never by itself, and the difference is itself a finding"},
		{CodeInventoryUnbound, ClassBroken, "evidence", "the row was not run for the inventory snapshot entry it is shown for (another entry digest or bundle pin, e.g. a row of another root's inventory when roots are merged): never qualified for it"},
		{CodeResultMissing, ClassBroken, "evidence", "a profile's evidence directory holds no result.json (a run that did not finish, or a result moved or removed): an error row, never skipped"},
	}
}

// failedCodes are the codes of the failed class: the row ran on complete
// data and does not meet the qualification contract.
func failedCodes() []CodeInfo {
	return []CodeInfo{
		{CodeExplorationWorkload, ClassFailed, "workload", "the workload is not the qualification workload (5 warmup + 50 measured at concurrency 1): exploration only"},
		{CodeHardwareMismatchAllowed, ClassFailed, "schedule", "the row ran outside its inventory hardware scope (allowed by flag): never qualifies"},
		{CodeBundleNotPinned, ClassFailed, "preflight", "the inventory pins no bundle sha256: nothing proves which bundle was served"},
		{CodeBundleMismatch, ClassFailed, "preflight", "the row records no sha256 of the bundle it served, though it ran: nothing shows the served bundle is the pinned one"},
		{CodeBundleChangedValidate, ClassFailed, "correctness", "validation changed the bundle: its sha256 after the correctness case differs from the one served (both named), or it was not re-hashed after it"},
		{CodeBundleChangedServing, ClassFailed, "bundle-check", "serving changed the bundle: its sha256 after the run (serving, the native replay) differs from the one before (both named), or it was not re-hashed after it"},
		{CodeAIPerfVersion, ClassFailed, "aiperf", "AIPerf is not the required version (a mismatch allowed by flag runs, but never qualifies)"},
		{CodeCorrectnessNotRun, ClassFailed, "correctness", "the correctness case did not run on the served bundle"},
		{CodeCorrectnessIncomplete, ClassFailed, "correctness", "the correctness result has no gate, or a gate lacks its value, operator, threshold or outcome"},
		{CodeCorrectnessFailed, ClassFailed, "correctness", "a correctness gate does not hold, or the case reports failure"},
		{CodeCorrectnessInconsist, ClassFailed, "correctness", "a gate's recorded outcome contradicts its value, operator and threshold"},
		{CodeNotJoined, ClassFailed, "join", "the join did not run: no request is accounted for"},
		{CodeNoRequests, ClassFailed, "join", "no measured request was expected"},
		{CodeShortCount, ClassFailed, "join", "the client reported more or fewer requests than the workload asked for"},
		{CodeUnmatched, ClassFailed, "join", "fewer requests matched than were expected"},
		{CodeMismatched, ClassFailed, "join", "a request's HTTP answer differs from its native answer (mismatches.jsonl keeps both and the diff)"},
		{CodeErrored, ClassFailed, "join", "a request failed at the client (HTTP error, transport error, cancellation)"},
		{CodeMissingNative, ClassFailed, "join", "a request has no usable native answer"},
		{CodeMissingHTTP, ClassFailed, "join", "a request has no usable HTTP answer (no raw record, or it does not extract)"},
		{CodeMissingServerRec, ClassFailed, "join", "a request has no server record"},
		{CodeDuplicate, ClassFailed, "join", "a request id appears more than once in a source, or two requests used one dataset line"},
		{CodeMeaningless, ClassFailed, "join", "a request's HTTP answer is incomplete or meaningless (a chat answer without usage.completion_tokens included)"},
		{CodeUnknownConversation, ClassFailed, "join", "a request's conversation_id is not a line of dataset.jsonl"},
		{CodeInconsistent, ClassFailed, "join", "the records and raw exports disagree on a request's phase or conversation, the server's record and the HTTP answer on its completion tokens, the HTTP answer names another model than the served --model-name, or a Task time is outside its domain (not above zero, not of the one timing scope, longer than a timing of its own record that encloses the call — handler_ms, worker_roundtrip_ms — or than the call that was timed)"},
		{CodeEchoMissing, ClassFailed, "join", "nothing shows the server answered a request's id: its answer carries no X-Request-ID, AIPerf's records hold no HTTP trace of it (--export-http-trace), or the row does not record that the echo was checked"},
		{CodeEchoMismatched, ClassFailed, "join", "the server's answer echoes another X-Request-ID than the one sent (or the request's own header is not its record's id)"},
		{CodeUnclaimedServerRecords, ClassFailed, "join", "the server recorded request ids the client never reported"},
		{CodeUnclaimedNative, ClassFailed, "join", "the native runner answered request ids the client never reported"},
		{CodeUnclaimedRaw, ClassFailed, "join", "the raw export holds request ids the records export does not"},
		{CodeCountsInconsist, ClassFailed, "join", "the request totals are not the sum of the phases"},
		{CodeLatencyIncomplete, ClassFailed, "join", "HTTP and Task latencies do not cover the same stated set of requests (a value of the family's Task time source is missing: its percentiles are withheld), or the HTTP split that explains HTTP minus Task (AIPerf's trace: sending, waiting, receiving) is missing for one of them"},
	}
}

// excludedCodes are the codes of the excluded class: the inventory takes
// the profile out.
func excludedCodes() []CodeInfo {
	return []CodeInfo{
		{CodeExcluded, ClassExcluded, "inventory", "the inventory excludes the profile, with a reason"},
	}
}

// ClassOf returns a code's class. An unknown code is broken: a code this
// harness does not know can never let a row qualify.
func ClassOf(code Code) Class {
	for _, c := range Codes() {
		if c.Code == code {
			return c.Class
		}
	}
	return ClassBroken
}

// HasClass reports whether any of the row's reasons is of class c.
func (r *Result) HasClass(c Class) bool {
	for _, rs := range r.Reasons {
		if rs.Class == c {
			return true
		}
	}
	return false
}
