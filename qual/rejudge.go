package qual

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/publish"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// RejudgeOptions configure `trtmc-qual report --rejudge`.
type RejudgeOptions struct {
	// Roots are the result roots (OUT directories).
	Roots []string
	Group string
	// Families is the family configuration the criteria are taken from
	// (tolerances, comparators, labels...): never from the row judged. A
	// row whose family it lacks, or whose stored criteria differ from it,
	// is not qualified (criteria_differ). nil: no configuration, no row
	// can qualify.
	Families *families.Config
	// Registry resolves the extractors and comparators the criteria name.
	Registry       families.Registry
	Now            time.Time
	HarnessVersion string
	// NoJoined skips reading joined.jsonl for the report (only HTML plots it).
	NoJoined bool
	// NoWrite writes nothing beside the evidence (no result.rejudged.json):
	// the re-derivation a publication checks its figures against.
	NoWrite bool
}

// rederived are the problem codes a rejudge derives afresh: a stored one is
// dropped, and found again if it still holds.
var rederived = []verdict.Code{verdict.CodeJoinInput, verdict.CodeCorrectnessOutput, verdict.CodeEvidenceChanged, verdict.CodeEvidenceMalformed,
	verdict.CodeCriteriaDiffer, verdict.CodeSealLegacy, verdict.CodeInventoryUnbound}

// Rejudge re-derives every current row of a group from its raw artifacts
// and re-applies the verdict rules: the counts, unclaimed ids, latencies,
// tokens or boxes and image sizes come from the one join over dataset.jsonl,
// AIPerf's exports, the server's records and the native answers (never from
// joined.jsonl or stored counts); the correctness result from
// correctness.json; the throughput from AIPerf's summary; and the whole
// directory is checked against the seal the run wrote. What cannot be
// re-derived — the workload, the pins, the provenance, the problems the
// stages recorded — is taken from result.json, whose own digest the seal
// covers. A missing or malformed artifact makes the row an error naming
// file, line and field.
//
// The rows are made through the loader's own walk (reports.LoadWith with
// Rederive), so the directories a rejudge sees are exactly those a report
// shows, and one without result.json is an error row (result_missing), not
// skipped. The report it returns is built from the rows derived here and
// now; each is also written as result.rejudged.json beside result.json
// (which is never modified), for people to read — no verb reads that file
// back, because the seal does not cover it. It returns the report and the
// files written. The error is for a missing group (wrapping
// reports.ErrNoEvidence), an interruption or a file that cannot be written.
func Rejudge(ctx context.Context, o RejudgeOptions) (*reports.GroupReport, []string, error) {
	var written []string
	derive := func(dir, group, profile string, entry *verdict.InventoryEntry) (*verdict.Result, error) {
		n := rejudgeRow(ctx, dir, group, profile, judgeBy{o.Families, o.Registry, entry})
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n.Rejudged = &verdict.Rejudge{At: o.Now.UTC(), HarnessVersion: o.HarnessVersion, OriginalVerdict: n.Rejudged.OriginalVerdict}
		if o.NoWrite {
			return n, nil
		}
		data, err := json.MarshalIndent(n, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("rejudge %s: %w", dir, err)
		}
		out := filepath.Join(dir, reports.RejudgedFile)
		if err := fileio.WriteFileMode(out, append(data, '\n'), 0o644); err != nil {
			return nil, err
		}
		written = append(written, out)
		return n, nil
	}
	rep, err := reports.LoadWith(o.Roots, o.Group, reports.LoadOptions{Rederive: derive, NoJoined: o.NoJoined})
	return rep, written, err
}

// Publishable is a group's report as a publication shows it (`export`,
// `report --update-doc`, `report -o summary`): every row re-derived from
// its raw artifacts by the family configuration's criteria (Rejudge, which
// writes nothing beside the evidence when o.NoWrite), checked against the
// rows as stored: a row whose stored verdict or figures are not the
// re-derived ones refuses the publication (*publish.FigureError), so a
// figure edited and resealed is never published. It returns the
// re-derived report and the files Rejudge wrote.
func Publishable(ctx context.Context, o RejudgeOptions) (*reports.GroupReport, []string, error) {
	stored, err := reports.LoadWith(o.Roots, o.Group, reports.LoadOptions{NoJoined: true})
	if err != nil {
		return nil, nil, err
	}
	derived, written, err := Rejudge(ctx, o)
	if err != nil {
		return nil, written, err
	}
	if err := publish.CheckRederived(stored, derived); err != nil {
		return nil, written, err
	}
	return derived, written, nil
}

// judgeBy is what a rejudge judges a row by, none of it from the row: the
// family configuration, the registry of extractors and comparators, and
// the inventory snapshot entry the row is shown for (nil: none).
type judgeBy struct {
	families *families.Config
	reg      families.Registry
	entry    *verdict.InventoryEntry
}

// rejudgeRow re-derives one row (see Rejudge). Rejudged.OriginalVerdict is
// set; the rest of Rejudged is the caller's.
func rejudgeRow(ctx context.Context, dir, group, profile string, by judgeBy) *verdict.Result {
	path := filepath.Join(dir, reports.ResultFile)
	data, err := fileio.ReadFile(ctx, path, fileio.MaxDocumentBytes)
	var stored *verdict.Result
	if err == nil {
		stored, err = verdict.DecodeResult(path, data, group, profile)
	}
	if err != nil {
		r := verdict.BrokenResult(group, profile, verdict.CodeEvidenceMalformed, err.Error())
		reports.CheckSeal(r, dir, evidence.Digests{})
		r.Rejudged = &verdict.Rejudge{}
		return r
	}
	n := *stored
	n.Rejudged = &verdict.Rejudge{OriginalVerdict: stored.Verdict}
	n.Problems = slices.DeleteFunc(slices.Clone(stored.Problems), func(p verdict.Problem) bool { return slices.Contains(rederived, p.Code) })
	broken := func(stage string, err error) {
		n.Problems = append(n.Problems, verdict.Problem{Stage: stage, Code: verdict.CodeEvidenceMalformed, Message: err.Error()})
	}
	// Nothing derived is kept: what the artifacts no longer give, the row
	// does not have.
	// What the workload expects is the workload's (as run writes it before
	// anything ran); what was sent and how it went, only the join says.
	w, k := n.Workload, n.Workload.TrialCount()
	n.Requests, n.Unclaimed = verdict.Counts{Expected: k * (w.Warmup + w.Measured)}, verdict.Unclaimed{}
	n.RequestsByPhase = map[string]verdict.Counts{PhaseWarmup: {Expected: k * w.Warmup}, PhaseMeasured: {Expected: k * w.Measured}}
	n.LatencyMS, n.ImagesPerSec, n.OutputTokens, n.Boxes, n.ImageSizes = verdict.Latency{}, nil, nil, nil, nil
	n.ImagesPerSecInterval, n.ImagesPerSecAcrossTrials, n.Trials = nil, nil, nil
	// The join digests what it parses in the manifest's algorithm, so the
	// seal check need not read those files again.
	known := evidence.Digests{Algorithm: evidence.DigestAlgorithm, Files: map[string]string{}}
	if m, f := evidence.ReadManifest(dir); f == nil {
		known.Algorithm = m.Algorithm
	}
	joined := false
	if derives(stored, verdict.StageJoin, verdict.CodeJoinInput) {
		// The criteria come from the configuration, never from the row
		// (a row that never joined judged nothing by them).
		judged, found := criteriaFromConfiguration(&n, by.families, by.entry)
		n.Problems = append(n.Problems, found...)
		if judged {
			joined = rederiveJoin(ctx, dir, &n, by.reg, &known, broken)
		}
	}
	if k == 1 { // a row of trials has each trial's, from the join
		n.ImagesPerSec = rederiveThroughput(dir, &n, joined, broken)
	}
	if derives(stored, verdict.StageCorrectness, verdict.CodeCorrectnessOutput) {
		c, err := verdict.ReadCorrectness(filepath.Join(dir, fileCorrectness))
		if err != nil {
			broken("rejudge", err)
			// As the correctness stage records a result it cannot read.
			n.Correctness = &verdict.Correctness{Output: fileCorrectness, Error: "no valid result file"}
		} else {
			n.Correctness = c
		}
	}
	reports.CheckSeal(&n, dir, known)
	if m, f := evidence.ReadManifest(dir); f == nil && evidence.Retired(m.Algorithm) {
		n.Notes = append(n.Notes, fmt.Sprintf("the evidence is sealed with the retired %s: re-judged from its raw artifacts, never trusted as stored", m.Algorithm))
	}
	return &n
}

// derives reports whether a rejudge re-derives what a stage of the stored
// row produced: the stage ran, or it broke on an artifact the rejudge
// reads again (its problem, code, is one of those re-derived: dropped, it
// must be found again, never lost), exactly as the run derived it.
func derives(stored *verdict.Result, stage string, code verdict.Code) bool {
	return stored.StageRan(stage) || slices.ContainsFunc(stored.Problems, func(p verdict.Problem) bool { return p.Code == code })
}

// rederiveJoin runs the one join over the row's raw artifacts into n,
// recording in known the digests it computed; a join that fails breaks
// the row. It reports whether the join succeeded.
func rederiveJoin(ctx context.Context, dir string, n *verdict.Result, reg families.Registry, known *evidence.Digests, broken func(string, error)) bool {
	joins, err := joinRow(ctx, dir, n, reg, joinOutputs{digests: true, digestAlgorithm: known.Algorithm})
	if err != nil {
		broken("rejudge", fmt.Errorf("join: %w", err))
		return false
	}
	for _, res := range joins {
		known.Algorithm = res.DigestAlgorithm
		for p, d := range res.Digests {
			if rel, err := filepath.Rel(dir, p); err == nil {
				known.Files[filepath.ToSlash(rel)] = d
			}
		}
	}
	return true
}

// rederiveThroughput is the row's images/s as the run derives it: AIPerf's
// request_throughput from its summary, once the join succeeded. A summary
// the AIPerf stage passed must parse (else the row breaks); one of an
// AIPerf stage that recorded a problem is read when it is there.
func rederiveThroughput(dir string, n *verdict.Result, joined bool, broken func(string, error)) *float64 {
	path := filepath.Join(dir, dirAIPerf, aiperf.FileSummary)
	ran := n.StageRan(verdict.StageAIPerf)
	if !ran {
		if _, err := os.Lstat(path); err != nil || !joined {
			return nil
		}
	}
	s, err := aiperf.ParseSummary(path)
	if err != nil {
		if ran {
			broken("rejudge", err)
		}
		return nil
	}
	if m, ok := s.Metric("request_throughput"); ok && m.Avg != nil && joined {
		v := *m.Avg
		return &v
	}
	return nil
}

// criteriaFromConfiguration sets the row's judging criteria — its route
// and answer semantics: extractor, comparator, tolerances, labels, the
// reading of a null finish_reason, the Task time source, server records,
// the Task agreement — from its family in the configuration, and its
// served model from the inventory snapshot entry it is shown for (the
// row's own when there is none). What the row stored is only compared:
// every criterion that differs, a criteria digest the row pins that is
// not the configuration's, a served model that is not the entry's, and a
// family the configuration lacks are findings (criteria_differ). judged
// is false when there is no family to judge by: the join then does not
// run, and nothing is derived.
func criteriaFromConfiguration(r *verdict.Result, fams *families.Config, entry *verdict.InventoryEntry) (judged bool, found []verdict.Problem) {
	file := "the family configuration"
	var fam *families.Family
	if fams != nil {
		file, fam = fams.File, fams.Families[r.Family]
	}
	finding := func(format string, args ...any) {
		found = append(found, verdict.Problem{Stage: "rejudge", Code: verdict.CodeCriteriaDiffer, Message: fmt.Sprintf(format, args...)})
	}
	if fam == nil {
		finding("%s has no family %q: a row is judged by its family's criteria in the configuration, never by those it stores (pass --families)", file, r.Family)
		return false, found
	}
	want := verdict.CriteriaDigest(fam.Route, fam.Semantics)
	if pin := r.Provenance.FamilyCriteriaSHA256; pin != "" && pin != want {
		finding("the row was run with criteria of digest %s; family %s in %s has criteria of digest %s", shortDigest(pin), r.Family, file, shortDigest(want))
	}
	for _, d := range verdict.CriteriaDifferences(r.Route, r.Answers, fam.Route, fam.Semantics) {
		finding("the row stores %s (family %s, %s): it is judged by the configuration's", d, r.Family, file)
	}
	served := r.Answers.ServedModel
	if served == "" {
		served = r.Profile // rows written before the field: the default served name
	}
	if entry != nil && entry.Served() != served {
		finding("the row stores served model %q; its inventory entry serves %q: it is judged by the entry's", served, entry.Served())
		served = entry.Served()
	}
	r.Route, r.Answers = fam.Route, fam.Semantics.Stated()
	r.Answers.ServedModel = served
	return true, found
}

func shortDigest(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}
