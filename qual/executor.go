package qual

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Executor runs the selected checkpoints of a group somewhere — on this
// host (Local) or spread over a cluster (qual/slurm) — and returns when
// every selected profile has its row under Out/<group>/ and the group
// tables are written. Whatever runs a checkpoint runs it through Run, the
// same pipeline, so a row is a row wherever it ran. A qualification outcome
// (failed rows) is not an error; the error is for setup problems, I/O
// failures and interruption, as for Run.
//
// The seam also answers what the assembly of a group run (RunBuilder)
// needs of this host: OnThisHost says whether checkpoints run on this
// host's slots, so the GPU selection is probed into Options.Hardware.Pool,
// or where the executor places them (Slurm allocates each task its GPUs).
// An executor that submits and returns (Slurm's --detach) names what it
// submitted in Outcome.Submitted.
type Executor interface {
	Run(ctx context.Context, opts Options) (*Outcome, error)
	OnThisHost() bool
}

// Local runs every checkpoint on this host, each on its own GPUs (tp x cp
// of the pool) or CPU slot.
type Local struct{}

// Run implements Executor.
func (Local) Run(ctx context.Context, opts Options) (*Outcome, error) { return Run(ctx, opts) }

// OnThisHost implements Executor: the checkpoints run on this host's slots.
func (Local) OnThisHost() bool { return true }

// Prepared is a group run checked and set up for an executor that runs its
// checkpoints elsewhere: the profiles are selected, AIPerf is checked and
// the inventory snapshot is written, as Run does before its first
// checkpoint.
type Prepared struct {
	Group *inventory.Group
	// Profiles are the selected profiles, in inventory order.
	Profiles []*inventory.Profile
	gr       *groupRun
	// lock is the group's evidence lock (nil inside a Slurm task).
	lock *evidence.Lock
	// tmp is the run's private temporary directory.
	tmp string
}

// Release removes the run's private temporary directory and gives up the
// group's evidence lock; the process ending gives up the lock too (and the
// next run removes the directory a killed one left).
func (p *Prepared) Release() error {
	os.RemoveAll(p.tmp)
	return p.lock.Unlock()
}

// Prepare selects, checks and sets up a group run (see Prepared).
func Prepare(ctx context.Context, opts Options) (*Prepared, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return prepare(ctx, opts)
}

// Excluded writes an excluded profile's row, as Run does.
func (p *Prepared) Excluded(prof *inventory.Profile) *verdict.Result {
	return p.gr.checkpoint(context.Background(), prof, Slot{Name: "none"}, placement{})
}

// RunKey is the run key this run gives the profile's row (Finished
// compares with it). Only tests call it: an executor's tests write a finished
// row with it to check that a resumed run keeps that row.
func (p *Prepared) RunKey(prof *inventory.Profile) (string, error) {
	return p.gr.newCheckpointRun(prof, Slot{Name: "none"}, placement{}).runKey(context.Background())
}

// Finished returns the profile's finished (qualified or failed) result when
// its run key equals the one this run would have: what --resume skips.
func (p *Prepared) Finished(prof *inventory.Profile) (*verdict.Result, bool) {
	cr := p.gr.newCheckpointRun(prof, Slot{Name: "none"}, placement{})
	key, err := cr.runKey(context.Background())
	if err != nil {
		return nil, false
	}
	return cr.finishedWithKey(key)
}

// WriteTables writes OUT/<group>/results.* from the stored evidence, as
// Run does at its end.
func (p *Prepared) WriteTables() error {
	return writeGroupTables(p.gr.opts.Out, p.gr.opts.Group, p.gr.opts.Publish)
}

// WriteGroupTables writes OUT/<group>/results.* from the stored evidence
// (the same code Run and `trtmc-qual report` use).
func WriteGroupTables(out, group string) error { return writeGroupTables(out, group) }

// BaseResult is the row of a profile before anything ran: its identity
// from the inventory, the expected request counts of the workload (nil:
// unknown), no verdict yet. Every row the pipeline writes starts from it,
// and so does a row an executor writes for a checkpoint that left none.
func BaseResult(group string, w *inventory.Workload, p *inventory.Profile) verdict.Result {
	r := verdict.Result{
		Schema: verdict.ResultSchema, Group: group, Profile: p.ID, Checkpoint: p.Checkpoint,
		Revision: p.Revision, Family: p.Family, Task: p.Task, Kind: p.Kind, VariantOf: p.VariantOf,
		Precision: p.Precision, Parallelism: p.Parallelism.String(),
		Reasons: []verdict.Reason{}, Problems: []verdict.Problem{}, RequestsByPhase: map[string]verdict.Counts{}, Stages: []verdict.Stage{},
		Provenance: verdict.Provenance{InventoryEntrySHA256: profileDigest(p), SourceCommit: p.SourceCommit,
			BundlePinnedSHA256: p.Bundle.SHA256, Commands: []verdict.Command{}},
	}
	if w != nil {
		r.Workload = verdict.Workload{Warmup: w.Warmup, Measured: w.Measured, Concurrency: w.Concurrency}
		if n := w.TrialCount(); n > 1 {
			r.Workload.Trials = n
		}
		n := r.Workload.TrialCount() // every trial sends the workload's requests
		r.Endpoint = w.EndpointType
		r.RequestsByPhase[PhaseWarmup] = verdict.Counts{Expected: n * w.Warmup}
		r.RequestsByPhase[PhaseMeasured] = verdict.Counts{Expected: n * w.Measured}
		r.Requests = verdict.Counts{Expected: n * (w.Warmup + w.Measured)}
	}
	return r
}

// WriteRow writes a row an executor made for a checkpoint that left none
// (or whose own row it amends) into OUT/<group>/<profile>/result.json,
// atomically. With setAside, earlier evidence in that directory is set
// aside first, as a new run of the checkpoint would.
func WriteRow(out string, r *verdict.Result, setAside bool, now func() time.Time) error {
	dir := filepath.Join(out, r.Group, r.Profile)
	if setAside {
		if _, err := os.Stat(dir); err == nil {
			t := now().UTC()
			aside := dir + "." + t.Format("20060102T150405Z")
			for i := 1; exists(aside); i++ {
				aside = dir + "." + t.Add(time.Duration(i)*time.Second).Format("20060102T150405Z")
			}
			if err := os.Rename(dir, aside); err != nil {
				return fmt.Errorf("set earlier evidence aside: %w", err)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := fileio.WriteJSON(filepath.Join(dir, fileResult), r); err != nil {
		return err
	}
	// The row is sealed with whatever the task left beside it, so that
	// `report` can tell it from evidence changed afterwards.
	return evidence.Seal(dir, map[string]any{"written_by": "executor", "harness_version": r.Provenance.HarnessVersion})
}

// ReadRow reads OUT/<group>/<profile>/ through reports.ReadRow, the one
// loader every verdict is shown through: result.json checked, the seal
// checked, the verdict re-derived; (nil, nil) when there is no result.json.
func ReadRow(out, group, profile string) (*verdict.Result, error) {
	return reports.ReadRow(filepath.Join(out, group, profile), group, profile)
}

// timeLimitSlack covers what no stage deadline bounds: the AIPerf version
// check, reading and joining, writing evidence.
const timeLimitSlack = 5 * time.Minute

// TimeLimit is the longest a checkpoint of the family can take when every
// stage runs to its deadline (preparing a missing bundle and corpus, server
// start-up, correctness, AIPerf, stopping, the native runner), plus a slack
// for the work no deadline bounds. A scheduler's time limit for one
// checkpoint is this, so a task is never killed while the pipeline would
// still wait on a stage.
func TimeLimit(f *families.Family) time.Duration {
	var t families.Timeouts
	if f != nil {
		t = f.Timeouts
	}
	return 2*defaultPrepareTimeout + t.Startup.Or(defaultStartupTimeout) + t.Correctness.Or(defaultCorrectnessTimeout) +
		t.AIPerf.Or(defaultAIPerfTimeout) + t.Stop.Or(defaultStopGrace) + t.Native.Or(defaultNativeTimeout) + timeLimitSlack
}
