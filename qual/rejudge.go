package qual

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
)

// RejudgeOptions configure `trtmc-qual report --rejudge`.
type RejudgeOptions struct {
	// Roots are the result roots (OUT directories).
	Roots []string
	Group string
	// Registry resolves the answer semantics recorded in each row.
	Registry       families.Registry
	Now            time.Time
	HarnessVersion string
	// NoJoined skips reading joined.jsonl for the report (only HTML plots it).
	NoJoined bool
}

// rederived are the problem codes a rejudge derives afresh: a stored one is
// dropped, and found again if it still holds.
var rederived = []reports.Code{reports.CodeJoinInput, reports.CodeCorrectnessOutput, reports.CodeEvidenceChanged, reports.CodeEvidenceMalformed}

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
	derive := func(dir, group, profile string) (*reports.Result, error) {
		n := rejudgeRow(ctx, dir, group, profile, o.Registry)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n.Rejudged = &reports.Rejudge{At: o.Now.UTC(), HarnessVersion: o.HarnessVersion, OriginalVerdict: n.Rejudged.OriginalVerdict}
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

// rejudgeRow re-derives one row (see Rejudge). Rejudged.OriginalVerdict is
// set; the rest of Rejudged is the caller's.
func rejudgeRow(ctx context.Context, dir, group, profile string, reg families.Registry) *reports.Result {
	path := filepath.Join(dir, reports.ResultFile)
	data, err := fileio.ReadFile(ctx, path, fileio.MaxDocumentBytes)
	var stored *reports.Result
	if err == nil {
		stored, err = reports.DecodeResult(path, data, group, profile)
	}
	if err != nil {
		r := reports.BrokenResult(group, profile, reports.CodeEvidenceMalformed, err.Error())
		reports.CheckSeal(r, dir, evidence.Digests{})
		r.Rejudged = &reports.Rejudge{}
		return r
	}
	n := *stored
	n.Rejudged = &reports.Rejudge{OriginalVerdict: stored.Verdict}
	n.Problems = slices.DeleteFunc(slices.Clone(stored.Problems), func(p reports.Problem) bool { return slices.Contains(rederived, p.Code) })
	broken := func(stage string, err error) {
		n.Problems = append(n.Problems, reports.Problem{Stage: stage, Code: reports.CodeEvidenceMalformed, Message: err.Error()})
	}
	// Nothing derived is kept: what the artifacts no longer give, the row
	// does not have.
	n.Requests, n.RequestsByPhase, n.Unclaimed = reports.Counts{}, map[string]reports.Counts{}, reports.Unclaimed{}
	n.LatencyMS, n.ImagesPerSec, n.OutputTokens, n.Boxes, n.ImageSizes = reports.Latency{}, nil, nil, nil, nil
	// The join digests what it parses in the manifest's algorithm, so the
	// seal check need not read those files again.
	known := evidence.Digests{Algorithm: evidence.DigestAlgorithm, Files: map[string]string{}}
	if m, f := evidence.ReadManifest(dir); f == nil {
		known.Algorithm = m.Algorithm
	}
	if n.StageRan(reports.StageJoin) {
		res, err := joinRow(ctx, dir, &n, reg, joinOutputs{digests: true, digestAlgorithm: known.Algorithm})
		if err != nil {
			broken("rejudge", fmt.Errorf("join: %w", err))
		} else {
			known.Algorithm = res.DigestAlgorithm
			for p, d := range res.Digests {
				if rel, err := filepath.Rel(dir, p); err == nil {
					known.Files[filepath.ToSlash(rel)] = d
				}
			}
		}
	}
	if n.StageRan(reports.StageAIPerf) {
		s, err := aiperf.ParseSummary(filepath.Join(dir, dirAIPerf, aiperf.FileSummary))
		if err != nil {
			broken("rejudge", err)
		} else if m, ok := s.Metric("request_throughput"); ok && m.Avg != nil {
			v := *m.Avg
			n.ImagesPerSec = &v
		}
	}
	if n.StageRan(reports.StageCorrectness) {
		c, err := reports.ReadCorrectness(filepath.Join(dir, fileCorrectness))
		if err != nil {
			broken("rejudge", err)
			n.Correctness = nil
		} else {
			n.Correctness = c
		}
	}
	reports.CheckSeal(&n, dir, known)
	return &n
}
