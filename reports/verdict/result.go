package verdict

import (
	"time"
)

// ResultSchema is the schema id written in every result.json. v2: typed
// reasons (class, phase), problems, workload, unclaimed ids, the latency
// set, the answer semantics and the bundle pin.
const ResultSchema = "trtmc-qual/result/v2"

// Verdicts of a checkpoint's run.
const (
	VerdictQualified   = "qualified"   // every gate passed on complete data
	VerdictFailed      = "failed"      // a qualification outcome: a gate or a match failed
	VerdictError       = "error"       // a stage broke; the data is incomplete
	VerdictInterrupted = "interrupted" // the run was stopped before it finished
	VerdictExcluded    = "excluded"    // the inventory excludes it, with a reason
	VerdictSkipped     = "skipped"     // --resume found an identical finished result
	// VerdictNotRun is a checkpoint its run never started: the scheduler
	// found the host cannot run it as declared (more GPUs than the run has,
	// another hardware scope, a GPU family without a GPU), or a Slurm array
	// task was cancelled while still queued; its reasons say why.
	VerdictNotRun = "not-run"
)

// Result is one checkpoint's result: the authoritative evidence record.
// JSON field names are a contract (see README "result.json").
type Result struct {
	Schema     string `json:"schema"`
	Group      string `json:"group"`
	Profile    string `json:"profile"`
	Checkpoint string `json:"checkpoint"`
	Revision   string `json:"revision,omitempty"`
	Family     string `json:"family"`
	Task       string `json:"task"`
	Kind       string `json:"kind"`
	VariantOf  string `json:"variant_of,omitempty"`
	Precision  string `json:"precision"`
	// Parallelism is "tp1", "tp4-cp2"...
	Parallelism string `json:"parallelism"`
	Endpoint    string `json:"endpoint_type"`
	Route       string `json:"route"`

	Verdict string `json:"verdict"`
	// Reasons say why a verdict is not qualified, most severe first. Only
	// Judge writes them, from the facts below.
	Reasons []Reason `json:"reasons"`
	// Problems are what the pipeline saw go wrong (a stage broke, output
	// was lost, the run was interrupted): facts Judge turns into reasons.
	Problems []Problem `json:"problems"`
	// Workload is what the row was measured with.
	Workload Workload `json:"workload"`
	// Answers are the family's semantics as its configuration defines them
	// (Semantics.Stated): what the join used, and what the row's criteria
	// digest pins with Route.
	Answers Semantics `json:"answers"`

	Requests        Counts            `json:"requests"`
	RequestsByPhase map[string]Counts `json:"requests_by_phase"` // "warmup", "measured"
	LatencyMS       Latency           `json:"latency_ms"`
	// ImagesPerSec is AIPerf's request_throughput (one image a request);
	// with repeated trials, the median across them.
	ImagesPerSec *float64 `json:"images_per_sec"`
	// ImagesPerSecInterval is images/s estimated from the measured
	// requests' cycles with its interval (one trial; each trial has its
	// own); ImagesPerSecAcrossTrials the spread of ImagesPerSec over the
	// trials.
	ImagesPerSecInterval     *RateInterval `json:"images_per_sec_interval,omitempty"`
	ImagesPerSecAcrossTrials *TrialSpread  `json:"images_per_sec_across_trials,omitempty"`
	// Trials are the row's repeated trials, when its workload ran more
	// than one (Workload.Trials): the figures above are then the median
	// across them, the counts their sums.
	Trials []Trial `json:"trials,omitempty"`
	// OutputTokens (vision-language) and Boxes (detection) over measured requests.
	OutputTokens *int        `json:"output_tokens,omitempty"`
	Boxes        *int        `json:"boxes,omitempty"`
	ImageSizes   []ImageSize `json:"image_sizes,omitempty"`
	// Unclaimed counts request ids of a source that no client record claims.
	Unclaimed Unclaimed `json:"unclaimed"`
	// Examples are the join's first request of each phase and status that
	// did not match, with its problem (the reasons quote them).
	Examples []RequestExample `json:"examples,omitempty"`
	// HTTPErrors count the failed requests by the server's answer: status,
	// error type and code (trtmc-server's error envelope), per phase.
	HTTPErrors []HTTPError `json:"http_errors,omitempty"`
	// Notes are what a reader must know about the row's evidence (the
	// join writes them: a route without server records, Task times that
	// disagree); they never change the verdict.
	Notes []string `json:"notes,omitempty"`

	Correctness *Correctness `json:"correctness"`
	// GPUChecks are the GPU hygiene checks of the row's GPUs (docs/gpu.md):
	// idle before timing, in use by the server while serving (GPU families),
	// released after the server stopped.
	GPUChecks  []GPUCheck `json:"gpu_checks,omitempty"`
	Stages     []Stage    `json:"stages"`
	Provenance Provenance `json:"provenance"`
	// Command reproduces the row: the trtmc-qual invocation, shell-quoted
	// by text.ShellJoin and text.ShellQuote.
	Command string `json:"command"`
	// RunKey identifies the inputs of this run (for --resume).
	RunKey    string    `json:"run_key"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`

	// GPUTelemetry is what AIPerf's GPU telemetry saw of the row's GPU
	// during the measured phase; only for rows measured on a GPU.
	GPUTelemetry *GPUTelemetry `json:"gpu_telemetry,omitempty"`

	// Exclusion is set for excluded profiles.
	Exclusion string `json:"exclusion,omitempty"`
	// Rejudged is set when `report --rejudge` re-applied the verdict rules.
	Rejudged *Rejudge `json:"rejudged,omitempty"`
}

// GPUTelemetry is AIPerf's GPU telemetry of the row's GPU over the
// measured phase (warmup excluded by AIPerf). It informs; it never changes
// a verdict. Collected is false, with Note saying why, when the collector
// ran but reported nothing for this GPU.
type GPUTelemetry struct {
	Collector string `json:"collector"` // AIPerf's collector: "pynvml"
	Collected bool   `json:"collected"`
	Note      string `json:"note,omitempty"`
	GPUIndex  *int   `json:"gpu_index,omitempty"`
	GPUUUID   string `json:"gpu_uuid,omitempty"`
	GPUName   string `json:"gpu_name,omitempty"`
	// UtilizationPct is the share of time a kernel ran (0-100).
	UtilizationPct *TelemetryStat `json:"utilization_pct,omitempty"`
	MemoryUsedGB   *TelemetryStat `json:"memory_used_gb,omitempty"`
	PowerW         *TelemetryStat `json:"power_w,omitempty"`
	// EnergyMJ is the energy the GPU used during the phase, in megajoules.
	EnergyMJ *float64 `json:"energy_mj,omitempty"`
}

// TelemetryStat is a telemetry metric's mean and peak; nil when not given.
type TelemetryStat struct {
	Avg *float64 `json:"avg"`
	Max *float64 `json:"max"`
}

// Reason explains a non-qualified verdict: a typed code (Codes lists them)
// with its class, the stage and, for per-phase findings, the phase.
type Reason struct {
	Code  Code   `json:"code"`
	Class Class  `json:"class"`
	Stage string `json:"stage"`
	Phase string `json:"phase,omitempty"`
	// Trial is the 1-based trial a finding is about, in a row of repeated
	// trials (0: the row as a whole).
	Trial   int    `json:"trial,omitempty"`
	Message string `json:"message"`
}

// Problem is something the pipeline saw go wrong in a stage.
type Problem struct {
	Stage   string `json:"stage"`
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// The qualification contract's fixed parts (Judge enforces them).
const (
	QualificationWarmup        = 5
	QualificationMeasured      = 50
	QualificationConcurrency   = 1
	QualificationAIPerfVersion = "0.13.0"
)

// Workload purposes.
const (
	PurposeQualification = "qualification"
	PurposeExploration   = "exploration"
)

// Workload is the group workload a row was measured with. Purpose is
// derived by Judge: only the qualification workload can qualify.
type Workload struct {
	Warmup      int    `json:"warmup"`
	Measured    int    `json:"measured"`
	Concurrency int    `json:"concurrency"`
	Purpose     string `json:"purpose"`
	// Trials is the number of repeated trials, each a complete warmup +
	// measured run (omitted for one, as in rows of earlier versions).
	Trials int `json:"trials,omitempty"`
}

// IsQualification reports whether w is the qualification workload.
func (w Workload) IsQualification() bool {
	return w.Warmup == QualificationWarmup && w.Measured == QualificationMeasured && w.Concurrency == QualificationConcurrency
}

// RequestExample is one request that did not match, and why.
type RequestExample struct {
	Phase     string `json:"phase"`
	Status    string `json:"status"`
	RequestID string `json:"request_id"`
	Problem   string `json:"problem"`
}

// Unclaimed counts ids no client record claims, per source.
type Unclaimed struct {
	ServerRecords int `json:"server_records"`
	NativeAnswers int `json:"native_answers"`
	RawRecords    int `json:"raw_records"`
	// Examples are a few of the ids, sorted.
	Examples []string `json:"examples,omitempty"`
}

// Counts of requests, warmup and measured alike.
type Counts struct {
	// Expected is the number the workload asked for.
	Expected int `json:"expected"`
	// Sent is the number of records AIPerf reported.
	Sent                int `json:"sent"`
	Matched             int `json:"matched"`
	Mismatched          int `json:"mismatched"`
	Errored             int `json:"errored"`
	MissingNative       int `json:"missing_native"`
	MissingHTTP         int `json:"missing_http"`
	MissingServerRecord int `json:"missing_server_record"`
	Duplicates          int `json:"duplicates"`
	Meaningless         int `json:"meaningless"`
	UnknownConversation int `json:"unknown_conversation"`
	Inconsistent        int `json:"inconsistent"`
	// EchoMissing and EchoMismatched are requests whose identity the
	// server's answer does not prove (JoinEchoMissing, JoinEchoMismatched).
	// (Omitted when 0, as in rows of earlier versions.)
	EchoMissing    int `json:"echo_missing,omitempty"`
	EchoMismatched int `json:"echo_mismatched,omitempty"`
	// EchoProven counts the requests, of any status, whose answer echoed
	// the X-Request-ID sent, as AIPerf's HTTP trace shows it: every
	// matched request must be among them (a row of an earlier version,
	// which did not check the echo, has none).
	EchoProven int `json:"echo_proven,omitempty"`
	// ServerBusy counts requests the server refused 429 server_busy: its
	// one replica was busy with a request someone else sent at the same
	// time (trtmc-server has no queue).
	ServerBusy int `json:"server_busy,omitempty"`
}

// Add returns the element-wise sum.
func (c Counts) Add(o Counts) Counts {
	return Counts{
		Expected: c.Expected + o.Expected, Sent: c.Sent + o.Sent, Matched: c.Matched + o.Matched,
		Mismatched: c.Mismatched + o.Mismatched, Errored: c.Errored + o.Errored,
		MissingNative: c.MissingNative + o.MissingNative, MissingHTTP: c.MissingHTTP + o.MissingHTTP,
		MissingServerRecord: c.MissingServerRecord + o.MissingServerRecord,
		Duplicates:          c.Duplicates + o.Duplicates, Meaningless: c.Meaningless + o.Meaningless,
		UnknownConversation: c.UnknownConversation + o.UnknownConversation, Inconsistent: c.Inconsistent + o.Inconsistent,
		EchoMissing: c.EchoMissing + o.EchoMissing, EchoMismatched: c.EchoMismatched + o.EchoMismatched, EchoProven: c.EchoProven + o.EchoProven,
		ServerBusy: c.ServerBusy + o.ServerBusy,
	}
}

// MissingJoins is the number of requests that could not be joined.
func (c Counts) MissingJoins() int {
	return c.MissingNative + c.MissingHTTP + c.MissingServerRecord + c.EchoMissing
}

// LatencySetMeasuredMatched names the one set of requests both latency
// series cover: the measured requests whose HTTP and native answers matched.
const LatencySetMeasuredMatched = "measured_matched"

// Latency holds percentiles of HTTP and Task latency over one stated set of
// requests (Set); nil means not measured.
type Latency struct {
	Set  string      `json:"set"`
	HTTP Percentiles `json:"http"`
	Task Percentiles `json:"task"`
	// TaskSource is where the Task series was read: "server" (the server's
	// request records' task_ms) or "native" (the native answers' task_ms),
	// as the family declares (families.yaml `task_time`).
	TaskSource string `json:"task_source,omitempty"`
	// TaskScope is what those values time: TaskScopeServer for the server's
	// records, or the native runner's own statement (native_meta.json
	// timing_scope: public_task_call_wall, trtmc_run_prefill_plus_decode,
	// ...).
	TaskScope string `json:"task_scope,omitempty"`
	// TaskAgreement compares, when the Task source is the server's
	// records and the native replay times the Task too, the two Task
	// times of each measured matched request. It informs; the verdict does
	// not depend on it (the two are different calls).
	TaskAgreement *TaskAgreement `json:"task_agreement,omitempty"`
	// HTTPSplit explains the HTTP series of the same set: each request's
	// HTTP time split, at AIPerf's HTTP trace, into the client's own time,
	// sending, waiting and receiving, and its waiting into the Task time
	// and the rest (nil in rows of earlier versions).
	HTTPSplit *HTTPSplit `json:"http_split,omitempty"`
}

// HTTPSplit is the HTTP time of the measured matched requests split at
// AIPerf's HTTP trace (--export-http-trace). Per request, HTTP = client +
// sending + waiting + receiving exactly, and waiting = Task + outside Task;
// so the means add up the same way (HTTP mean - Task mean = client +
// sending + outside Task + receiving), while percentiles of the parts
// only describe each part. Every part is over the one set (Count of
// Latency.Set's requests have a split; the parts are withheld, as the
// latencies are, when one lacks it).
type HTTPSplit struct {
	Count          int    `json:"count"`
	MissingExample string `json:"missing_example,omitempty"`
	// HTTPMean and TaskMean are the means of the row's two series.
	HTTPMean *float64 `json:"http_mean"`
	TaskMean *float64 `json:"task_mean"`
	// Client is AIPerf's time before the request's first byte was sent
	// (request_latency minus the exchange).
	Client SplitPart `json:"client"`
	// Sending is from the first to the last byte of the request, a new
	// connection's set-up included (aiohttp starts it before connecting).
	Sending SplitPart `json:"sending"`
	// Waiting is from the request's last byte to the answer's first byte:
	// the server's handling, the Task call inside it, and the network.
	Waiting SplitPart `json:"waiting"`
	// Receiving is from the answer's first byte to its last.
	Receiving SplitPart `json:"receiving"`
	// OutsideTask is each request's waiting minus its Task time: the
	// server's time around the Task call, plus the network.
	OutsideTask SplitPart `json:"outside_task"`
}

// SplitPart is one part of the HTTP split, in milliseconds over the set.
type SplitPart struct {
	Mean *float64 `json:"mean"`
	P50  *float64 `json:"p50"`
	P95  *float64 `json:"p95"`
}

// TaskAgreement is how the server's and the native Task times of the
// measured matched requests compare.
type TaskAgreement struct {
	// Other is the source compared with the row's Task source.
	Other     string    `json:"other"`
	Tolerance Tolerance `json:"tolerance"`
	// Compared requests had both values; Disagreeing differ by more than
	// the tolerance (Example names the first).
	Compared    int    `json:"compared"`
	Disagreeing int    `json:"disagreeing"`
	Example     string `json:"example,omitempty"`
}

// TaskScopeServer is the scope of the server records' task_ms: the Task call
// as the server itself times it inside its request handler.
const TaskScopeServer = "server_task_call"

// Percentiles of a latency series in milliseconds. P50 and P95 (and P90,
// P99) are set only when the series has a value for every request of the
// stated set: a series with gaps is never summarised over a different set.
// In a row of repeated trials each is the median across the trials of the
// trial's figure (AcrossTrials gives their range and variation).
type Percentiles struct {
	P50 *float64 `json:"p50"`
	P95 *float64 `json:"p95"`
	// Count is the number of requests of the set that have a value.
	Count int `json:"count"`
	// MissingExample is a request of the set without a value, when any.
	MissingExample string `json:"missing_example,omitempty"`
	// P90 and P99 complete the figures (omitted in rows of earlier
	// versions).
	P90 *float64 `json:"p90,omitempty"`
	P99 *float64 `json:"p99,omitempty"`
	// Intervals are p50, p90, p95 and p99 (IntervalPercents), each with
	// its n and its distribution-free 95 % interval (one run; a row of
	// repeated trials has them per trial).
	Intervals []PercentileInterval `json:"intervals,omitempty"`
	// AcrossTrials are the same figures over repeated trials: median,
	// range and coefficient of variation.
	AcrossTrials []TrialSpread `json:"across_trials,omitempty"`
	// Drift is the stability check of the series within the run.
	Drift *DriftCheck `json:"drift,omitempty"`
}

// ImageSize is one distinct image size seen and how often.
type ImageSize struct {
	Width  int `json:"width"`
	Height int `json:"height"`
	Count  int `json:"count"`
}

// Correctness is the family's correctness case on the served bundle.
type Correctness struct {
	Ran     bool               `json:"ran"`
	Passed  bool               `json:"passed"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
	Gates   []Gate             `json:"gates,omitempty"`
	// Output is the correctness output file, relative to the evidence dir.
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Gate is one correctness threshold and whether it held.
type Gate struct {
	Name      string  `json:"name"`
	Value     float64 `json:"value"`
	Op        string  `json:"op"`
	Threshold float64 `json:"threshold"`
	Passed    bool    `json:"passed"`
}

// Stage is one pipeline stage's outcome and timing.
type Stage struct {
	Name       string  `json:"name"`
	Status     string  `json:"status"` // ok, error, skipped, interrupted
	DurationMS float64 `json:"duration_ms"`
	// Code is the problem code of a stage that broke.
	Code  Code   `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
	// ChildMS is the time spent inside child processes during the stage.
	ChildMS float64 `json:"child_ms"`
}

// Provenance is what a reviewer needs to trust and reproduce a row.
type Provenance struct {
	HarnessVersion string `json:"harness_version"`
	HarnessCommit  string `json:"harness_commit"`
	AIPerfVersion  string `json:"aiperf_version"`
	// AIPerfVersionMismatch is set when a mismatch was explicitly allowed.
	AIPerfVersionMismatch string `json:"aiperf_version_mismatch,omitempty"`
	PipFreezeSHA256       string `json:"pip_freeze_sha256,omitempty"`
	ServerBinary          string `json:"server_binary"`
	ServerBinarySHA256    string `json:"server_binary_sha256"`
	// ServerListen is every TCP address the server's process group
	// listened on, checked after readiness and before the server is
	// stopped (Linux; see docs/reliability.md).
	ServerListen []string `json:"server_listen,omitempty"`
	// AIPerfVersionRequired is the version the run was configured to require.
	AIPerfVersionRequired string `json:"aiperf_version_required"`
	BundlePath            string `json:"bundle_path"`
	BundleSHA256          string `json:"bundle_sha256"`
	// BundlePinnedSHA256 is the inventory's pin ("" when it pins none).
	BundlePinnedSHA256 string `json:"bundle_pinned_sha256"`
	// InventoryEntrySHA256 is the digest of the inventory entry the row
	// was run for (InventoryEntry.Digest): a row stands only for the
	// snapshot entry with this digest.
	InventoryEntrySHA256 string `json:"inventory_entry_sha256"`
	// InventorySnapshotSHA256 is the sha256 of the group's inventory
	// snapshot (OUT/<group>/inventory.json) as the row's run wrote it: the
	// latest row of a root seals the snapshot beside it.
	InventorySnapshotSHA256 string `json:"inventory_snapshot_sha256,omitempty"`
	// FamilyCriteriaSHA256 is the digest of the judging criteria of the
	// row's family as its run had them (CriteriaDigest, with the route): a rejudge takes
	// its criteria from the family configuration, and holds it to this pin.
	FamilyCriteriaSHA256 string `json:"family_criteria_sha256,omitempty"`
	DatasetSHA256        string `json:"dataset_sha256"`
	// SourceCommit is the measurement source commit (the TRTMC commit the
	// bundle was built from), when known.
	SourceCommit string `json:"source_commit,omitempty"`
	Host         string `json:"host"`
	// GPUs are the devices of the row's slot (tp x cp of them), as
	// nvidia-smi described them when the checkpoint started; empty on a
	// CPU slot.
	GPUs []GPU `json:"gpus,omitempty"`
	// HardwareScope is the scope the row ran on (h200, gb300, cpu...).
	HardwareScope string `json:"hardware_scope,omitempty"`
	// HardwareMismatch is set when the inventory's hardware scope did not
	// match and --allow-hardware-mismatch let the row run anyway; such a
	// row never qualifies.
	HardwareMismatch string `json:"hardware_mismatch,omitempty"`
	// Slurm is the Slurm job the row was measured in, when it ran in one
	// (`run --executor slurm`), and how Slurm says it ended when the
	// driver had to write the row itself.
	Slurm    *SlurmTask `json:"slurm,omitempty"`
	Commands []Command  `json:"commands"`

	// Native says which native path answered and what its task_ms
	// measures (TRTMC families; nil when the runner reports nothing).
	Native *NativeRun `json:"native,omitempty"`
	// Preprocessing is the family's image preparation (resize, letterbox,
	// normalisation) as its configuration declares it.
	Preprocessing string `json:"preprocessing,omitempty"`
	// Tokenizer is the tokenizer AIPerf counted chat tokens with.
	Tokenizer *FileIdentity `json:"tokenizer,omitempty"`
	// DatasetImageSizes are the sizes of the images of every request
	// line sent (warmup and measured), read from the images themselves.
	DatasetImageSizes []ImageSize `json:"dataset_image_sizes,omitempty"`
	// PipFreezeFile is the evidence file (relative to the row's directory)
	// holding the whole `pip freeze --all` whose digest PipFreezeSHA256 is.
	PipFreezeFile string `json:"pip_freeze_file,omitempty"`
	// GoVersion is the Go toolchain that built the harness (runtime.Version).
	GoVersion string `json:"go_version,omitempty"`
	// Roots are the named directories of the run (the evidence root, the
	// trtmc-qual and TRTMC checkouts, AIPerf's environment, ...): published
	// text writes a path under one as $NAME/rest (see reports/publish.Scrubber).
	Roots []Root `json:"roots,omitempty"`
	// HostTopDirs are the directories at / of the host the row ran on:
	// published text treats an absolute path starting with one as a path
	// of that host, whatever host the report is rendered on later. Private
	// evidence only: it fingerprints the host, so it is never published
	// (Public and the evidence pack drop it; the pack's text is mapped).
	HostTopDirs []string `json:"host_top_dirs,omitempty"`
	// HostUsers are the user names of the run (its $USER, $LOGNAME,
	// $SUDO_USER, the owner of $HOME): published text masks them wherever
	// it is rendered (a published row holds them masked).
	HostUsers []string `json:"host_users,omitempty"`

	// Checkouts are the git checkouts of the run's programs (the
	// harness's, $TRTMC_REPO's), each with its commit and digests of what
	// its work tree adds to it: a dirty tree is visible, never silent.
	Checkouts []Checkout `json:"checkouts,omitempty"`
	// AIPerfDist is AIPerf's installed distribution, beside its version:
	// the digests of its dist-info METADATA and RECORD (RECORD lists the
	// sha256 of every installed file).
	AIPerfDist *Distribution `json:"aiperf_dist,omitempty"`
	// ServerLoaded is every executable and shared library the server's
	// process group had mapped while it served (the native worker and
	// TRTMC's runtime libraries among them), with their digests.
	ServerLoaded *LoadedFiles `json:"server_loaded,omitempty"`
	// BundleChecks are the served bundle digested again after each stage
	// that could change it: after the correctness case and after the run
	// (serving and the native replay). A digest other than the one before
	// fails the row.
	BundleChecks []BundleCheck `json:"bundle_checks,omitempty"`
}

// Root is a named directory of the run host: published text writes a path
// under it as $NAME/rest.
type Root struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// The masks published text writes in place of what names the run host
// (reports/publish's Scrubber): a published row holds them (its host is
// MaskHost).
const (
	MaskPrivatePath = "[private]"
	MaskHost        = "[host]"
	MaskUser        = "[user]"
	MaskIP          = "[ip]"
)

// Checkout is a git checkout as the run found it.
type Checkout struct {
	// Name is the root's name (HARNESS, TRTMC: Root names).
	Name   string `json:"name"`
	Path   string `json:"path"`
	Commit string `json:"commit,omitempty"`
	// Dirty is set when tracked files differ from Commit or untracked
	// files exist.
	Dirty bool `json:"dirty"`
	// ChangedFiles are the tracked files that differ from Commit (staged
	// or not); DiffSHA256 is the sha256 of `git diff --binary HEAD`
	// ("" when none differ).
	ChangedFiles int    `json:"changed_files"`
	DiffSHA256   string `json:"diff_sha256,omitempty"`
	// UntrackedFiles are the files git neither tracks nor ignores;
	// UntrackedSHA256 digests their names and contents ("" when none).
	UntrackedFiles  int    `json:"untracked_files"`
	UntrackedSHA256 string `json:"untracked_sha256,omitempty"`
	// Error says why the checkout could not be read (not a git checkout,
	// git failed, too much untracked data): nothing about it is proven.
	Error string `json:"error,omitempty"`
}

// Distribution is an installed Python distribution (a dist-info
// directory).
type Distribution struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	DistInfo string `json:"dist_info"`
	// MetadataSHA256 and RecordSHA256 are the sha256 of its METADATA and
	// RECORD files.
	MetadataSHA256 string `json:"metadata_sha256,omitempty"`
	RecordSHA256   string `json:"record_sha256,omitempty"`
	Error          string `json:"error,omitempty"`
}

// LoadedFiles are the files a server's process group had mapped.
type LoadedFiles struct {
	// File is the evidence file (relative to the row's directory) listing
	// every one with its size and sha256; SHA256 is that file's digest.
	File   string `json:"file,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	Count  int    `json:"count"`
	// Executables are the programs the group's processes ran (the server,
	// its native worker), Native the loaded libraries of TRTMC's own
	// (libtrtmc*), each with its sha256.
	Executables []FileIdentity `json:"executables,omitempty"`
	Native      []FileIdentity `json:"native,omitempty"`
	// Error says why the mappings could not be read (not Linux, the
	// server had exited).
	Error string `json:"error,omitempty"`
}

// LoadedListSchema is the schema id of the server's loaded files list.
const LoadedListSchema = "trtmc-qual/server-loaded/v1"

// LoadedFile is the name of that list in a row's evidence directory.
const LoadedFile = "server_loaded.json"

// LoadedList is OUT/<group>/<profile>/server_loaded.json: every file the
// server's process group had mapped while it served, with its digest.
type LoadedList struct {
	Schema string       `json:"schema"`
	Files  []LoadedPath `json:"files"`
}

// LoadedPath is one mapped file.
type LoadedPath struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
	// Executable: a process of the group runs it.
	Executable bool `json:"executable,omitempty"`
	// Deleted: the file was deleted (or replaced) while mapped.
	Deleted bool   `json:"deleted,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Bundle checks (BundleCheck.After).
const (
	BundleAfterCorrectness = "correctness"
	BundleAfterRun         = "run"
)

// BundleCheck is the served bundle digested again after a stage.
type BundleCheck struct {
	After  string `json:"after"`
	SHA256 string `json:"sha256,omitempty"`
	Error  string `json:"error,omitempty"`
}

// NativeRun describes the native answers of a row.
type NativeRun struct {
	// Path is "worker" (a persistent native worker) or "cli" (one process
	// per request).
	Path string `json:"path"`
	// TimingScope is what task_ms measures: public_task_call_wall (the
	// Task call), trtmc_run_prefill_plus_decode, or none.
	TimingScope string `json:"timing_scope"`
	// TokenCounts says whether chat answers carry the Task's token count.
	TokenCounts bool     `json:"token_counts"`
	Argv        []string `json:"argv,omitempty"`
	// WorkerProtocol and WorkerCapabilities are the worker's handshake.
	WorkerProtocol     int      `json:"worker_protocol,omitempty"`
	WorkerCapabilities []string `json:"worker_capabilities,omitempty"`
	// WorkerBinary, WorkerBinarySHA256 and WorkerBinarySource name the
	// native worker program that answered and how it was found
	// (--worker-binary, TRTMC_WORKER_BINARY, launcher, package, source-build).
	WorkerBinary       string `json:"worker_binary,omitempty"`
	WorkerBinarySHA256 string `json:"worker_binary_sha256,omitempty"`
	WorkerBinarySource string `json:"worker_binary_source,omitempty"`
}

// FileIdentity is a directory or file and the sha256 that pins it.
type FileIdentity struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256,omitempty"`
}

// GPU identifies a device a row was measured on and its state at the
// start of the checkpoint. A nil number was not reported by nvidia-smi.
type GPU struct {
	Index  string `json:"index"`
	Name   string `json:"name"`
	UUID   string `json:"uuid"`
	Driver string `json:"driver"`
	// CUDAVersion is the driver's CUDA version (nvidia-smi's banner).
	CUDAVersion    string   `json:"cuda_version,omitempty"`
	MemoryTotalMiB *int     `json:"memory_total_mib,omitempty"`
	MemoryUsedMiB  *int     `json:"memory_used_mib,omitempty"`
	UtilizationPct *int     `json:"utilization_pct,omitempty"`
	ClockSMMHz     *int     `json:"clock_sm_mhz,omitempty"`
	ClockMaxSMMHz  *int     `json:"clock_max_sm_mhz,omitempty"`
	PowerLimitW    *float64 `json:"power_limit_w,omitempty"`
	MIGMode        string   `json:"mig_mode,omitempty"`
	ComputeCap     string   `json:"compute_cap,omitempty"`
	PCIBusID       string   `json:"pci_bus_id,omitempty"`
	ComputeMode    string   `json:"compute_mode,omitempty"`
	// Scope is the hardware scope of the name (inventory.ScopeOfGPU).
	Scope string `json:"scope,omitempty"`
}

// GPU hygiene checks (Result.GPUChecks).
const (
	GPUCheckIdle     = "idle_before_timing"
	GPUCheckServing  = "in_use_while_serving"
	GPUCheckReleased = "released_after_stop"
)

// GPUCheck is one hygiene check of the row's GPUs and what nvidia-smi
// showed for it.
type GPUCheck struct {
	Name   string     `json:"name"`
	Stage  string     `json:"stage"`
	At     time.Time  `json:"at"`
	Passed bool       `json:"passed"`
	GPUs   []GPUState `json:"gpus"`
	// Problem says why the check failed.
	Problem string `json:"problem,omitempty"`
}

// GPUState is one GPU as a hygiene check saw it.
type GPUState struct {
	UUID           string       `json:"uuid"`
	UtilizationPct *int         `json:"utilization_pct,omitempty"`
	MemoryUsedMiB  *int         `json:"memory_used_mib,omitempty"`
	Processes      []GPUProcess `json:"processes"`
}

// GPUProcess is a compute process nvidia-smi listed on a GPU.
type GPUProcess struct {
	PID     int    `json:"pid"`
	Name    string `json:"name"`
	UsedMiB *int   `json:"used_mib,omitempty"`
	// Ours says the process belongs to this checkpoint (its server's
	// process group, or it carries the checkpoint's environment marker).
	Ours bool `json:"ours"`
}

// SlurmTask identifies the Slurm (array) task a row ran in.
type SlurmTask struct {
	// JobID is "<array job id>_<array task id>" for an array task (what
	// scancel and scontrol accept), else the plain job id.
	JobID string `json:"job_id"`
	// Submission is the nonce of the submission that started the task
	// (TRTMC_QUAL_SLURM_SUBMISSION, written into the job record before
	// sbatch): job ids repeat across clusters and slurmctld resets, so a
	// row is a task's own only when it carries the task's nonce too.
	Submission  string `json:"submission,omitempty"`
	ArrayJobID  string `json:"array_job_id,omitempty"`
	ArrayTaskID string `json:"array_task_id,omitempty"`
	Cluster     string `json:"cluster,omitempty"`
	Partition   string `json:"partition,omitempty"`
	// Node is the node the task ran on ("" when it never started).
	Node string `json:"node,omitempty"`
	// GPUs are the GPU indexes Slurm allocated on that node
	// (SLURM_JOB_GPUS); CUDAVisibleDevices is what Slurm set.
	GPUs               string `json:"gpus,omitempty"`
	CUDAVisibleDevices string `json:"cuda_visible_devices,omitempty"`
	// State, Reason and ExitCode are Slurm's account of how the task ended
	// (scontrol), recorded when the task did not leave a row of its own.
	State    string `json:"state,omitempty"`
	Reason   string `json:"reason,omitempty"`
	ExitCode string `json:"exit_code,omitempty"`
}

// Command is one child's exact argv (secrets redacted) and how it ended.
type Command struct {
	Stage    string   `json:"stage"`
	Argv     []string `json:"argv"`
	ExitCode int      `json:"exit_code"`
	Signal   string   `json:"signal,omitempty"`
}

// Rejudge records a re-application of the verdict rules to stored evidence.
type Rejudge struct {
	OriginalVerdict string    `json:"original_verdict"`
	At              time.Time `json:"at"`
	HarnessVersion  string    `json:"harness_version"`
}

// Measured reports whether the row has measurements to show: excluded and
// not-run rows measured nothing, and a row whose evidence does not hold its
// seal has no figure anyone can trust (they come from files that changed
// since the run), so every measurement cell is missing.
func (r *Result) Measured() bool {
	return r.Verdict != VerdictExcluded && r.Verdict != VerdictNotRun && r.EvidenceIntact()
}
