package qual

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Pool is what a run schedules its checkpoints on: the GPUs --gpus
// selected, or N CPU slots when there are none (docs/gpu.md).
type Pool struct {
	// GPUs of the run, in the order --gpus named them (nvidia-smi's index
	// order by default). Empty: a CPU pool.
	GPUs []verdict.GPU
	// CPUSlots is the number of CPU slots of a CPU pool.
	CPUSlots int
	// Selection is the --gpus value, for reasons ("" = every GPU).
	Selection string
}

// CPU reports whether the pool has no GPU.
func (p *Pool) CPU() bool { return len(p.GPUs) == 0 }

// Describe is "2 GPUs (--gpus 0,1)" or "1 CPU slot".
func (p *Pool) Describe() string {
	if p.CPU() {
		return text.Count(max(p.CPUSlots, 1), "CPU slot", "CPU slots")
	}
	s := text.Count(len(p.GPUs), "GPU", "GPUs")
	if p.Selection != "" {
		s += " (--gpus " + p.Selection + ")"
	}
	return s
}

// maxCPUSlots is the most CPU slots "cpu:N" may ask for.
const maxCPUSlots = 64

// gpuIDRE is one element of a GPU list: an nvidia-smi index, or a GPU or
// MIG UUID ("GPU-5a1b…", "MIG-GPU-5a1b…/1/0").
var gpuIDRE = regexp.MustCompile(`^(?:[0-9]+|(?:GPU|MIG)-[0-9A-Za-z/_-]+)$`)

// CheckGPUSelection checks the syntax of a GPU selection (--gpus,
// TRTMC_QUAL_GPUS, the config file's gpus): "", "cpu", "cpu:N" (N from 1 to
// 64, digits only), or a comma-separated list of distinct GPU indexes or
// UUIDs. A malformed selection is a usage mistake, whatever GPUs the host
// has; the error (a *UsageError) names the element and wants the caller
// to say where the value came from.
func CheckGPUSelection(sel string) error {
	bad := func(format string, args ...any) error {
		return &UsageError{Err: fmt.Errorf("%q: "+format, append([]any{sel}, args...)...)}
	}
	switch {
	case sel == "" || sel == "cpu":
		return nil
	case strings.HasPrefix(sel, "cpu:"):
		n := sel[len("cpu:"):]
		k, err := strconv.Atoi(n)
		if err != nil || strings.Trim(n, "0123456789") != "" || k < 1 || k > maxCPUSlots {
			return bad("want cpu:N with N a whole number from 1 to %d, got %q", maxCPUSlots, n)
		}
		return nil
	}
	seen := map[string]bool{}
	for _, id := range strings.Split(sel, ",") {
		id = strings.TrimSpace(id)
		switch {
		case id == "":
			return bad("an empty element (want GPU indexes or UUIDs separated by commas)")
		case id == "cpu" || strings.HasPrefix(id, "cpu:"):
			return bad("%q is a whole selection (cpu or cpu:N), not an element of a GPU list", id)
		case !gpuIDRE.MatchString(id):
			return bad("%q is neither a GPU index nor a GPU UUID", id)
		case seen[id]:
			return bad("GPU %s is named twice", id)
		}
		seen[id] = true
	}
	return nil
}

// NewPool turns a --gpus selection into the run's pool: "" means every GPU
// the probe lists (or one CPU slot when there are none); "cpu" one CPU
// slot and "cpu:N" N of them; "0,1" or "GPU-<uuid>,..." selects GPUs by
// index or UUID. A malformed selection is a *UsageError (CheckGPUSelection);
// a GPU the host does not have, a *SetupError.
func NewPool(ctx context.Context, probe GPUProbe, sel string) (*Pool, error) {
	if err := CheckGPUSelection(sel); err != nil {
		return nil, err
	}
	if sel == "cpu" {
		return &Pool{CPUSlots: 1, Selection: sel}, nil
	}
	if n, ok := strings.CutPrefix(sel, "cpu:"); ok {
		k, _ := strconv.Atoi(n)
		return &Pool{CPUSlots: k, Selection: sel}, nil
	}
	var gpus []verdict.GPU
	if probe != nil {
		var err error
		if gpus, err = probe.List(ctx); err != nil {
			if sel != "" {
				err = fmt.Errorf("%q: %w", sel, err)
			}
			return nil, &SetupError{err}
		}
	}
	if sel == "" {
		if len(gpus) == 0 {
			return &Pool{CPUSlots: 1}, nil
		}
		return &Pool{GPUs: gpus}, nil
	}
	pool := &Pool{Selection: sel}
	seen := map[string]bool{}
	for _, id := range strings.Split(sel, ",") {
		id = strings.TrimSpace(id)
		var found *verdict.GPU
		for i := range gpus {
			if gpus[i].Index == id || gpus[i].UUID == id {
				found = &gpus[i]
			}
		}
		if found == nil {
			return nil, &SetupError{fmt.Errorf("%q: GPU %s does not exist on this host (found %d GPU(s)%s)", sel, id, len(gpus), listGPUs(gpus))}
		}
		if seen[found.UUID] {
			return nil, &UsageError{fmt.Errorf("%q: GPU %s is named twice (by index and by UUID)", sel, id)}
		}
		seen[found.UUID] = true
		pool.GPUs = append(pool.GPUs, *found)
	}
	return pool, nil
}

func listGPUs(gpus []verdict.GPU) string {
	if len(gpus) == 0 {
		return ""
	}
	ids := make([]string, len(gpus))
	for i, g := range gpus {
		ids[i] = g.Index + " " + g.UUID
	}
	return ": " + strings.Join(ids, ", ")
}

// Slot is the place one checkpoint runs: the GPUs it holds for its whole
// run (tp x cp of them), or a CPU slot (no GPU).
type Slot struct {
	Name string
	GPUs []verdict.GPU
}

// CUDAVisibleDevices is the value children of this slot get: the GPUs'
// UUIDs, so that no index renumbering can hand a child another GPU; ""
// (no GPU visible) on a CPU slot.
func (s Slot) CUDAVisibleDevices() string {
	ids := make([]string, len(s.GPUs))
	for i, g := range s.GPUs {
		ids[i] = g.UUID
	}
	return strings.Join(ids, ",")
}

// Env is the device environment of the slot's children.
func (s Slot) Env() []string {
	return []string{"CUDA_VISIBLE_DEVICES=" + s.CUDAVisibleDevices(), "CUDA_DEVICE_ORDER=PCI_BUS_ID"}
}

// UUIDs of the slot's GPUs.
func (s Slot) UUIDs() []string {
	out := make([]string, len(s.GPUs))
	for i, g := range s.GPUs {
		out[i] = g.UUID
	}
	return out
}

// GPUsNeeded is the number of GPUs a profile holds while it runs: tp x cp.
// The pipeline's scheduler and the Slurm executor both use it.
func GPUsNeeded(p *inventory.Profile) int { return p.Parallelism.GPUs() }

// Reason codes of rows the scheduler does not start (verdict.Codes has
// their classes).
const (
	CodeInsufficientGPUs = verdict.CodeInsufficientGPUs
	CodeHardwareMismatch = verdict.CodeHardwareMismatch
	CodeGPURequired      = verdict.CodeGPURequired
	// CodeHardwareMismatchAllowed keeps a row that ran on the wrong
	// hardware (explicitly allowed) from qualifying.
	CodeHardwareMismatchAllowed = verdict.CodeHardwareMismatchAllowed
)

// placement is what the scheduler decides for a profile before anything
// runs: how many GPUs (or one CPU slot) it needs and which it may use, or
// why it cannot run on this pool at all.
type placement struct {
	need int
	// eligible indexes pool.GPUs.
	eligible []int
	scope    string
	// mismatch is set when the hardware scope did not match and the
	// mismatch was allowed.
	mismatch string
	// notRun is why the profile is not run on this pool: the scheduler's
	// problem (Judge makes its reason).
	notRun *verdict.Problem
}

// place decides where a profile may run. It never shrinks a profile: one
// that needs more GPUs than the pool has is not run.
func (p *Pool) place(prof *inventory.Profile, fam *families.Family, allowMismatch bool) placement {
	notRun := func(code verdict.Code, format string, args ...any) placement {
		return placement{notRun: &verdict.Problem{Stage: "schedule", Code: code, Message: fmt.Sprintf(format, args...)}}
	}
	hw := "[" + strings.Join(prof.Hardware, ", ") + "]"
	if p.CPU() {
		if fam != nil && fam.NeedsGPU {
			return notRun(CodeGPURequired, "family %s needs a GPU but this run has no GPU (%s): a setup error, the profile was not started on the CPU",
				fam.Name, p.Describe())
		}
		pl := placement{need: 1, scope: inventory.ScopeCPU}
		if !prof.RunsOn(inventory.ScopeCPU) {
			msg := fmt.Sprintf("the inventory scopes %s to hardware %s but this run has only CPU slots", prof.ID, hw)
			if !allowMismatch {
				return notRun(CodeHardwareMismatch, "%s; --allow-hardware-mismatch runs it anyway (recorded, never qualified)", msg)
			}
			pl.mismatch = msg
		}
		return pl
	}
	need := GPUsNeeded(prof)
	if need > len(p.GPUs) {
		return notRun(CodeInsufficientGPUs, "needs %d GPUs (%s) but the run has %s; not started on fewer",
			need, prof.Parallelism.String(), p.Describe())
	}
	pl := placement{need: need}
	var names []string
	for i, g := range p.GPUs {
		if prof.RunsOn(g.Scope) {
			pl.eligible = append(pl.eligible, i)
		}
		scope := g.Scope
		if scope == "" {
			scope = "not in the scope table"
		}
		if n := fmt.Sprintf("%s (%s)", g.Name, scope); !contains(names, n) {
			names = append(names, n)
		}
	}
	if len(pl.eligible) >= need {
		pl.scope = p.GPUs[pl.eligible[0]].Scope
		return pl
	}
	msg := fmt.Sprintf("the inventory scopes %s to hardware %s but the run's GPUs are %s", prof.ID, hw, strings.Join(names, ", "))
	if len(pl.eligible) > 0 {
		msg += fmt.Sprintf(", %d of them in scope where %d are needed", len(pl.eligible), need)
	}
	if !allowMismatch {
		return notRun(CodeHardwareMismatch, "%s; --allow-hardware-mismatch runs it anyway (recorded, never qualified)", msg)
	}
	pl.eligible = pl.eligible[:0]
	for i := range p.GPUs {
		pl.eligible = append(pl.eligible, i)
	}
	pl.scope = p.GPUs[0].Scope
	pl.mismatch = msg
	return pl
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// schedJob is one checkpoint to schedule.
type schedJob struct {
	pl placement
}

// scheduler hands out slots of a pool: concurrent checkpoints never share
// a GPU. It packs mixed sizes by list scheduling with backfill: whenever
// GPUs are freed it starts, in queue order, every waiting checkpoint whose
// GPUs are free, so a small checkpoint fills GPUs a larger one cannot use
// yet. The queue is most GPU time first (from the previous run), largest
// first on ties (longestFirst).
type scheduler struct {
	pool    *Pool
	freeGPU []bool
	freeCPU []bool
}

func newScheduler(pool *Pool) *scheduler {
	s := &scheduler{pool: pool}
	if pool.CPU() {
		s.freeCPU = make([]bool, max(pool.CPUSlots, 1))
		for i := range s.freeCPU {
			s.freeCPU[i] = true
		}
	} else {
		s.freeGPU = make([]bool, len(pool.GPUs))
		for i := range s.freeGPU {
			s.freeGPU[i] = true
		}
	}
	return s
}

// take allocates a slot for pl, or reports that it does not fit now.
func (s *scheduler) take(pl placement) (Slot, bool) {
	if s.pool.CPU() {
		for i, free := range s.freeCPU {
			if free {
				s.freeCPU[i] = false
				name := "cpu"
				if len(s.freeCPU) > 1 {
					name = "cpu" + strconv.Itoa(i)
				}
				return Slot{Name: name}, true
			}
		}
		return Slot{}, false
	}
	var picked []int
	for _, i := range pl.eligible {
		if s.freeGPU[i] {
			picked = append(picked, i)
			if len(picked) == pl.need {
				break
			}
		}
	}
	if len(picked) < pl.need {
		return Slot{}, false
	}
	slot := Slot{}
	var idx []string
	for _, i := range picked {
		s.freeGPU[i] = false
		slot.GPUs = append(slot.GPUs, s.pool.GPUs[i])
		idx = append(idx, s.pool.GPUs[i].Index)
	}
	slot.Name = "gpu" + strings.Join(idx, "+")
	return slot, true
}

// release gives a slot's GPUs (or its CPU slot) back.
func (s *scheduler) release(slot Slot) {
	if s.pool.CPU() {
		i := 0
		if n, ok := strings.CutPrefix(slot.Name, "cpu"); ok && n != "" {
			i, _ = strconv.Atoi(n)
		}
		s.freeCPU[i] = true
		return
	}
	for _, g := range slot.GPUs {
		for i := range s.pool.GPUs {
			if s.pool.GPUs[i].UUID == g.UUID {
				s.freeGPU[i] = true
			}
		}
	}
}

// run starts jobs in queue order as their slots come free, calls run for
// each in a goroutine of its own (an errgroup: run reports through its row,
// never an error, so no job cancels another) and returns when every started
// job has returned. The backfill is this loop: after each job ends its slot
// is released and every waiting job that now fits starts, in queue order.
// Jobs never started (the context was cancelled first, or a job cannot fit
// even an empty pool) are passed to notStarted.
func (s *scheduler) run(ctx context.Context, jobs []schedJob, queue []int, run func(i int, slot Slot), notStarted func(i int)) {
	var g errgroup.Group
	freed := make(chan Slot)
	pending := append([]int(nil), queue...)
	running := 0
	for {
		if ctx.Err() == nil {
			pending = s.startFitting(jobs, pending, func(i int, slot Slot) {
				running++
				g.Go(func() error {
					run(i, slot)
					freed <- slot
					return nil
				})
			})
		}
		if running == 0 {
			break
		}
		s.release(<-freed)
		running--
	}
	_ = g.Wait() // every job has sent its slot back: nothing is left running
	for _, i := range pending {
		notStarted(i)
	}
}

// startFitting starts, in queue order, every pending job whose slot can be
// taken now, and returns the jobs still waiting.
func (s *scheduler) startFitting(jobs []schedJob, pending []int, start func(i int, slot Slot)) []int {
	waiting := pending[:0]
	for _, i := range pending {
		slot, ok := s.take(jobs[i].pl)
		if !ok {
			waiting = append(waiting, i)
			continue
		}
		start(i, slot)
	}
	return waiting
}

// longestFirst orders profiles by the GPU time of their previous finished
// row (qualified or failed; an error or interruption says nothing about
// length): its duration times the GPUs the profile holds (width; 1 on CPU
// slots), most first; profiles without one go first. Ties go to the
// profile needing more GPUs, then to inventory order.
//
// GPU time, not duration: with backfill, a wide profile queued behind
// longer narrow ones waits until they have all drained (it needs every
// one of its GPUs free at once) and then runs alone. Bench part 3, second
// run: duration order 65.7 s, GPU-time order 60.5 s by the same durations
// (the tp=4 checkpoint first, then the rest packed), the best any order
// can do there.
func longestFirst(out, group string, profiles []*inventory.Profile, width func(*inventory.Profile) int) []int {
	prev := make([]float64, len(profiles))
	order := make([]int, len(profiles))
	for i, p := range profiles {
		order[i] = i
		prev[i] = infinity
		r, err := readResult(resultPath(out, group, p.ID))
		if err == nil && (r.Verdict == verdict.VerdictQualified || r.Verdict == verdict.VerdictFailed) && r.EndedAt.After(r.StartedAt) {
			prev[i] = r.EndedAt.Sub(r.StartedAt).Seconds() * float64(max(width(p), 1))
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		pa, pb := profiles[order[a]], profiles[order[b]]
		if prev[order[a]] != prev[order[b]] {
			return prev[order[a]] > prev[order[b]]
		}
		return width(pa) > width(pb)
	})
	return order
}

var infinity = math.Inf(1)

func resultPath(out, group, id string) string { return filepath.Join(out, group, id, fileResult) }
