package qual

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/qual/streamjoin"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Phases of a run's requests (reports owns the names).
const (
	PhaseWarmup   = verdict.PhaseWarmup
	PhaseMeasured = verdict.PhaseMeasured
)

// taskScope is what the Task latency of a row whose source is src times:
// the server's own Task timing, or what the native runner stated in
// native_meta.json. usable is false when the runner said its task_ms times
// nothing (or its statement could not be read): its values then count as
// missing.
func taskScope(src string, native *verdict.NativeRun) (scope string, usable bool) {
	if src != verdict.TaskTimeNative {
		// What the records carry decides (streamjoin: task_ms, or
		// model_call_ms of scope public_task_call_wall).
		return "", true
	}
	switch {
	case native == nil || native.TimingScope == "":
		return "unstated (the native runner wrote no " + fileNativeMeta + ")", true
	case native.TimingScope == "none" || strings.HasPrefix(native.TimingScope, "unknown"):
		return native.TimingScope, false
	}
	return native.TimingScope, true
}

// stageMS is the wall time the harness measured for a stage of the row (0
// when the stage did not finish).
func stageMS(r *verdict.Result, name string) float64 {
	for _, s := range r.Stages {
		if s.Name == name && s.Status == verdict.StageOK {
			return s.DurationMS
		}
	}
	return 0
}

// joinOutputs says what per-request evidence a join writes.
type joinOutputs struct {
	// write makes the join write joined.jsonl and mismatches.jsonl (the
	// run); a rejudge writes nothing beside the sealed evidence.
	write bool
	// digests computes the digest of every file the join reads, in
	// digestAlgorithm (default evidence.DigestAlgorithm).
	digests         bool
	digestAlgorithm string
}

// joinRow runs the one join (qual/streamjoin) over a checkpoint's evidence
// directory with the semantics and workload recorded in the row (the
// family's, as its configuration defines them: verdict.Semantics),
// and writes its result into the row. The `join` stage of `run` and
// `report --rejudge` both call it. A row of repeated trials joins each
// trial whose AIPerf directory is there (joinTrials). The error names the
// artifact (file, line, field) that could not be read; the row is then
// left unchanged.
func joinRow(ctx context.Context, dir string, r *verdict.Result, reg families.Registry, out joinOutputs) ([]*streamjoin.Result, error) {
	if r.Workload.TrialCount() > 1 {
		return joinTrials(ctx, dir, r, reg, out)
	}
	res, err := joinFiles(ctx, dir, streamjoin.CheckpointFiles(dir), r, reg, out, streamjoin.FileJoined, streamjoin.FileMismatches)
	if err != nil {
		return nil, err
	}
	res.Apply(r)
	return []*streamjoin.Result{res}, nil
}

// joinTrials joins each trial of a row of repeated trials on its own
// (streamjoin.TrialFiles: the other trials' ids are theirs), its
// joined.jsonl and mismatches.jsonl under trial-K/, reads each trial's
// images/s from its AIPerf summary, and writes them into the row
// (streamjoin.ApplyTrials). The trials joined are those AIPerf left a
// directory for, in order: a trial that never started is missing from the
// row, and Judge names it.
func joinTrials(ctx context.Context, dir string, r *verdict.Result, reg families.Registry, out joinOutputs) ([]*streamjoin.Result, error) {
	n := r.Workload.TrialCount()
	var ks []int
	for k := 1; k <= n; k++ {
		if fi, err := os.Lstat(filepath.Join(dir, verdict.TrialDir(k))); err != nil || !fi.IsDir() {
			break
		}
		ks = append(ks, k)
	}
	joins := make([]*streamjoin.Result, 0, len(ks))
	rates := make([]*float64, 0, len(ks))
	for _, k := range ks {
		if out.write {
			if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(verdict.TrialJoined(k))), 0o755); err != nil {
				return nil, err
			}
		}
		res, err := joinFiles(ctx, dir, streamjoin.TrialFiles(dir, k, ks), r, reg, out, verdict.TrialJoined(k), verdict.TrialMismatches(k))
		if err != nil {
			return nil, fmt.Errorf("trial %d of %d: %w", k, n, err)
		}
		rate, err := trialThroughput(dir, k)
		if err != nil {
			return nil, fmt.Errorf("trial %d of %d: %w", k, n, err)
		}
		joins, rates = append(joins, res), append(rates, rate)
	}
	streamjoin.ApplyTrials(r, joins, rates)
	return joins, nil
}

// trialThroughput is a trial's images/s as AIPerf measured it: the
// request_throughput of its summary (one image a request), nil when the
// summary has none.
func trialThroughput(dir string, k int) (*float64, error) {
	s, err := aiperf.ParseSummary(filepath.Join(dir, verdict.TrialDir(k), aiperf.FileSummary))
	if err != nil {
		return nil, err
	}
	if m, ok := s.Metric("request_throughput"); ok && m.Avg != nil {
		v := *m.Avg
		return &v, nil
	}
	return nil, nil
}

// joinFiles is one join over files, its per-request evidence written to
// joined and mismatches (relative to dir) when out says so.
func joinFiles(ctx context.Context, dir string, in streamjoin.Files, r *verdict.Result, reg families.Registry, out joinOutputs, joined, mismatches string) (*streamjoin.Result, error) {
	sem := r.Answers
	ex, ok := reg.Extractors[sem.Extractor]
	if !ok {
		return nil, fmt.Errorf("the row's answer extractor %q is not registered", sem.Extractor)
	}
	cmp, ok := reg.Comparators[sem.Comparator]
	if !ok {
		return nil, fmt.Errorf("the row's answer comparator %q is not registered", sem.Comparator)
	}
	scope, usable := taskScope(sem.TaskTimeSource(), r.Provenance.Native)
	served := sem.ServedModel
	if served == "" {
		served = r.Profile // rows written before the field: the default served name
	}
	opts := streamjoin.Options{Semantics: &sem, Route: r.Route, Extractor: ex, Comparator: cmp, Digests: out.digests, DigestAlgorithm: out.digestAlgorithm,
		Expected: map[string]int{PhaseWarmup: r.Workload.Warmup, PhaseMeasured: r.Workload.Measured},
		TaskTime: sem.TaskTimeSource(), TaskScope: scope, ServedModel: served, NoServerRecords: !sem.Recorded(),
		Agreement: sem.Agreement(), NativeWallMS: stageMS(r, "native")}
	var files []*fileio.AtomicFile
	defer func() {
		for _, f := range files {
			f.Abort()
		}
	}()
	if out.write {
		for _, w := range []struct {
			name string
			to   *io.Writer
		}{{joined, &opts.Joined}, {mismatches, &opts.Mismatches}} {
			f, err := fileio.CreateAtomic(filepath.Join(dir, w.name))
			if err != nil {
				return nil, err
			}
			files = append(files, f)
			*w.to = f
		}
	}
	res, err := streamjoin.Join(ctx, in, opts)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := f.Commit(); err != nil {
			return nil, err
		}
	}
	files = nil
	if !usable {
		res.MeasuredTask, res.MeasuredTaskStart = nil, nil
	}
	return res, nil
}
