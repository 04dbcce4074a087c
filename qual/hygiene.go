package qual

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// GPU hygiene (docs/gpu.md): before timing every GPU of the slot is idle;
// while the server of a GPU family serves, it holds memory on every GPU of
// its slot; after the server (and every other child) stopped, no process
// of the run holds memory on those GPUs. Each check is recorded in
// result.json (gpu_checks) with what nvidia-smi showed.

// Defaults of the hygiene checks.
const (
	// defaultMaxIdleUtilization is the highest utilisation (%) counted as
	// idle before timing.
	defaultMaxIdleUtilization = 10
	// defaultReleaseWait is how long the release check waits for the
	// driver to let go of a stopped process's memory.
	defaultReleaseWait = 15 * time.Second
	releasePoll        = 250 * time.Millisecond
)

// markerEnv is set in every child's environment; a process that carries
// this checkpoint's value belongs to it, wherever it was reparented.
const markerEnv = "TRTMC_QUAL_CHECKPOINT"

// gpuSnapshot is the slot's GPUs and their compute processes, at one time.
type gpuSnapshot struct {
	at   time.Time
	gpus []verdict.GPU
	apps []ComputeApp
}

// snapshot reads the slot's GPUs and the compute processes on them.
func (cr *checkpointRun) snapshot(ctx context.Context) (*gpuSnapshot, error) {
	probe := cr.gr.opts.Hardware.Probe
	if probe == nil {
		return nil, errors.New("no GPU probe")
	}
	all, err := probe.List(ctx)
	if err != nil {
		return nil, err
	}
	apps, err := probe.Apps(ctx)
	if err != nil {
		return nil, err
	}
	snap := &gpuSnapshot{at: cr.now()}
	for _, u := range cr.slot.UUIDs() {
		found := false
		for _, g := range all {
			if g.UUID == u {
				snap.gpus = append(snap.gpus, g)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("GPU %s of slot %s is no longer listed by nvidia-smi", u, cr.slot.Name)
		}
	}
	for _, a := range apps {
		if contains(cr.slot.UUIDs(), a.GPUUUID) {
			snap.apps = append(snap.apps, a)
		}
	}
	return snap, nil
}

// record turns a snapshot into a check with per-GPU states.
func (cr *checkpointRun) gpuCheck(snap *gpuSnapshot, name, stage string) verdict.GPUCheck {
	c := verdict.GPUCheck{Name: name, Stage: stage, At: snap.at, Passed: true, GPUs: []verdict.GPUState{}}
	for _, g := range snap.gpus {
		st := verdict.GPUState{UUID: g.UUID, UtilizationPct: g.UtilizationPct, MemoryUsedMiB: g.MemoryUsedMiB, Processes: []verdict.GPUProcess{}}
		for _, a := range snap.apps {
			if a.GPUUUID == g.UUID {
				st.Processes = append(st.Processes, verdict.GPUProcess{PID: a.PID, Name: a.Name, UsedMiB: a.UsedMiB, Ours: cr.ours(a.PID)})
			}
		}
		c.GPUs = append(c.GPUs, st)
	}
	return c
}

func (cr *checkpointRun) addCheck(c verdict.GPUCheck) {
	cr.res.GPUChecks = append(cr.res.GPUChecks, c)
}

// checkIdle is the preflight check, before the server starts: every GPU
// of the slot at most MaxIdleUtilization busy and running no compute
// process at all. It also records the GPUs' provenance at start.
func (cr *checkpointRun) checkIdle(ctx context.Context) error {
	snap, err := cr.snapshot(ctx)
	if err != nil {
		return stageFailure(verdict.CodeGPUProbe, fmt.Errorf("cannot check that the slot's GPUs are idle: %w", err))
	}
	cr.res.Provenance.GPUs = snap.gpus
	cr.preexisting = map[int]bool{}
	for _, a := range snap.apps {
		cr.preexisting[a.PID] = true
	}
	c := cr.gpuCheck(snap, verdict.GPUCheckIdle, "preflight")
	problems := idleProblems(snap.gpus, snap.apps, cr.gr.opts.Hardware.MaxIdleUtilization)
	if len(problems) > 0 {
		c.Passed, c.Problem = false, strings.Join(problems, "; ")
		cr.addCheck(c)
		return stageFailure(verdict.CodeGPUBusy, fmt.Errorf("gpu busy before timing: %s", c.Problem))
	}
	cr.addCheck(c)
	return nil
}

// checkServing runs right before AIPerf: no foreign compute process on the
// slot's GPUs; for a GPU family, the server's processes hold memory on
// every GPU of the slot (a tp=N profile really spreads over N GPUs).
func (cr *checkpointRun) checkServing(ctx context.Context) error {
	snap, err := cr.snapshot(ctx)
	if err != nil {
		return stageFailure(verdict.CodeGPUProbe, fmt.Errorf("cannot check the slot's GPUs before timing: %w", err))
	}
	c := cr.gpuCheck(snap, verdict.GPUCheckServing, "aiperf")
	var foreign, unused []string
	for _, g := range c.GPUs {
		used := false
		for _, p := range g.Processes {
			if !p.Ours {
				foreign = append(foreign, fmt.Sprintf("GPU %s runs a foreign compute process: pid %d %s%s", g.UUID, p.PID, p.Name, mib(p.UsedMiB)))
			} else if p.UsedMiB == nil || *p.UsedMiB > 0 {
				used = true
			}
		}
		if !used {
			unused = append(unused, g.UUID)
		}
	}
	switch {
	case len(foreign) > 0:
		c.Passed, c.Problem = false, strings.Join(foreign, "; ")
		cr.addCheck(c)
		return stageFailure(verdict.CodeGPUBusy, fmt.Errorf("gpu busy before timing: %s", c.Problem))
	case cr.family.NeedsGPU && len(unused) > 0:
		c.Passed = false
		c.Problem = fmt.Sprintf("family %s needs a GPU, but its server holds no memory on %d of the slot's %d GPU(s): %s",
			cr.family.Name, len(unused), len(c.GPUs), strings.Join(unused, ", "))
		cr.addCheck(c)
		return stageFailure(verdict.CodeGPUUnused, errors.New(c.Problem))
	}
	cr.addCheck(c)
	return nil
}

// checkReleased runs after every child of the checkpoint ended: no process
// of the run may hold memory on the slot's GPUs. A process that cannot be
// told apart from ours counts as a leak too (fail closed), except one the
// idle check already found there before anything started (the foreign
// process that made the row a gpu_busy error). It waits up to ReleaseWait
// for the driver to let go of stopped processes.
func (cr *checkpointRun) checkReleased(ctx context.Context) error {
	wait := cr.gr.opts.Hardware.ReleaseWait
	if wait <= 0 {
		wait = defaultReleaseWait
	}
	// Not the run's context: an interrupted run must still check that it
	// left nothing on the GPUs.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait+30*time.Second)
	defer cancel()
	deadline := time.Now().Add(wait)
	for {
		snap, err := cr.snapshot(ctx)
		if err != nil {
			return stageFailure(verdict.CodeGPUProbe, fmt.Errorf("cannot check that the run released the slot's GPUs: %w", err))
		}
		left := 0
		for _, a := range snap.apps {
			if !cr.preexisting[a.PID] || cr.ours(a.PID) {
				left++
			}
		}
		if left == 0 {
			cr.addCheck(cr.gpuCheck(snap, verdict.GPUCheckReleased, "gpu-release"))
			return nil
		}
		if time.Now().After(deadline) {
			c := cr.gpuCheck(snap, verdict.GPUCheckReleased, "gpu-release")
			var leaks []string
			for _, g := range c.GPUs {
				for _, p := range g.Processes {
					if cr.preexisting[p.PID] && !p.Ours {
						continue
					}
					who := "a process of this run"
					if !p.Ours {
						who = "a process not identifiable as this run's"
					}
					leaks = append(leaks, fmt.Sprintf("pid %d %s (%s)%s on GPU %s", p.PID, p.Name, who, mib(p.UsedMiB), g.UUID))
				}
			}
			c.Passed = false
			c.Problem = fmt.Sprintf("%s after the server stopped: %s", text.Count(len(leaks), "process holds", "processes hold")+" GPU memory", strings.Join(leaks, "; "))
			cr.addCheck(c)
			return stageFailure(verdict.CodeGPULeak, errors.New(c.Problem))
		}
		t := time.NewTimer(releasePoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return stageFailure(verdict.CodeGPUProbe, fmt.Errorf("release check: %w", ctx.Err()))
		case <-t.C:
		}
	}
}

// idleProblems is the one definition of an idle GPU: at most maxUtil %
// utilised (default 10) and no compute process. It lists what is not idle.
func idleProblems(gpus []verdict.GPU, apps []ComputeApp, maxUtil int) []string {
	if maxUtil <= 0 {
		maxUtil = defaultMaxIdleUtilization
	}
	var problems []string
	for _, g := range gpus {
		if g.UtilizationPct != nil && *g.UtilizationPct > maxUtil {
			problems = append(problems, fmt.Sprintf("GPU %s (%s) is %d%% utilised (idle means at most %d%%)", g.Index, g.UUID, *g.UtilizationPct, maxUtil))
		}
	}
	for _, a := range apps {
		for _, g := range gpus {
			if a.GPUUUID == g.UUID {
				problems = append(problems, fmt.Sprintf("GPU %s runs a foreign compute process: pid %d %s%s", a.GPUUUID, a.PID, a.Name, mib(a.UsedMiB)))
			}
		}
	}
	return problems
}

// CheckIdle checks one GPU as the preflight does (trtmc-qual doctor asks
// it too): an error saying why it is not idle, or nil.
func CheckIdle(ctx context.Context, probe GPUProbe, g verdict.GPU) error {
	apps, err := probe.Apps(ctx)
	if err != nil {
		return err
	}
	if p := idleProblems([]verdict.GPU{g}, apps, 0); len(p) > 0 {
		return fmt.Errorf("gpu busy: %s", strings.Join(p, "; "))
	}
	return nil
}

func mib(v *int) string {
	if v == nil {
		return ""
	}
	return fmt.Sprintf(", %d MiB", *v)
}

// ours reports whether pid belongs to this checkpoint: it carries the
// checkpoint's marker in its environment, or it or one of its ancestors is
// in the process group of the server while it runs. The ancestry matters:
// trtmc-server's control plane starts each native worker in a session of
// its own with an allowlisted environment (worker.py idx@a4ba28be:
// start_new_session, _worker_environment), so the worker that holds the
// GPU carries neither the marker nor the server's group, only its parent.
func (cr *checkpointRun) ours(pid int) bool {
	if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil {
		want := []byte(markerEnv + "=" + cr.marker)
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				return true
			}
		}
	}
	if cr.serverPID > 0 {
		for p, depth := pid, 0; p > 1 && depth < 64; depth++ {
			pg, ppid, ok := statOf(p)
			if !ok {
				break
			}
			if pg == cr.serverPID || p == cr.serverPID {
				return true
			}
			p = ppid
		}
	}
	return false
}

// statOf reads a process's group and parent from /proc/PID/stat.
func statOf(pid int) (pgid, ppid int, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 3 {
		return 0, 0, false
	}
	pg, err := strconv.Atoi(f[2])
	pp, perr := strconv.Atoi(f[1])
	return pg, pp, err == nil && perr == nil
}
