package qual

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/families"
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
// `report --rejudge` both call it. The error names the artifact (file,
// line, field) that could not be read; the row is then left unchanged.
func joinRow(ctx context.Context, dir string, r *verdict.Result, reg families.Registry, out joinOutputs) (*streamjoin.Result, error) {
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
		}{{streamjoin.FileJoined, &opts.Joined}, {streamjoin.FileMismatches, &opts.Mismatches}} {
			f, err := fileio.CreateAtomic(filepath.Join(dir, w.name))
			if err != nil {
				return nil, err
			}
			files = append(files, f)
			*w.to = f
		}
	}
	res, err := streamjoin.Join(ctx, streamjoin.CheckpointFiles(dir), opts)
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
		res.MeasuredTask = nil
	}
	res.Apply(r)
	return res, nil
}
