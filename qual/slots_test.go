package qual

import (
	"context"
	"math/rand"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// harness drives the scheduler with jobs that run until the test ends
// them, so every step waits on an event, never on time.
type schedHarness struct {
	t       *testing.T
	mu      sync.Mutex
	inUse   map[string]string // GPU UUID -> job
	started chan int
	finish  map[int]chan struct{}
	slots   map[int]Slot
	order   []int
}

func newSchedHarness(t *testing.T, n int) *schedHarness {
	h := &schedHarness{t: t, inUse: map[string]string{}, started: make(chan int, n), finish: map[int]chan struct{}{}, slots: map[int]Slot{}}
	for i := 0; i < n; i++ {
		h.finish[i] = make(chan struct{})
	}
	return h
}

func (h *schedHarness) run(i int, slot Slot) {
	h.mu.Lock()
	for _, u := range slot.UUIDs() {
		if other, busy := h.inUse[u]; busy {
			h.t.Errorf("job %d got GPU %s while job %s holds it", i, u, other)
		}
		h.inUse[u] = string(rune('A' + i))
	}
	h.slots[i] = slot
	h.order = append(h.order, i)
	h.mu.Unlock()
	h.started <- i
	<-h.finish[i]
	h.mu.Lock()
	for _, u := range slot.UUIDs() {
		delete(h.inUse, u)
	}
	h.mu.Unlock()
}

// TestSchedulerPacksMixedSizes: a tp=4 job holds all four GPUs alone;
// then tp=2 and two tp=1 jobs share the host; a waiting tp=2 job is
// started only once two GPUs are free, while the tp=1 jobs backfill.
func TestSchedulerPacksMixedSizes(t *testing.T) {
	pool := &Pool{GPUs: h200s(t, 4)}
	sizes := []int{4, 2, 1, 1, 2}
	jobs := make([]schedJob, len(sizes))
	for i, n := range sizes {
		jobs[i].pl = pool.place(profileTP("p", n, "h200"), nil, false)
		require.Nil(t, jobs[i].pl.notRun)
	}
	h := newSchedHarness(t, len(jobs))
	done := make(chan struct{})
	go func() {
		newScheduler(pool).run(context.Background(), jobs, []int{0, 1, 2, 3, 4}, h.run, func(i int) { t.Errorf("job %d not started", i) })
		close(done)
	}()
	assert.Equal(t, 0, <-h.started)
	assert.Len(t, h.slots[0].GPUs, 4)
	assert.Equal(t, "gpu0+1+2+3", h.slots[0].Name)
	close(h.finish[0])
	got := []int{<-h.started, <-h.started, <-h.started}
	sort.Ints(got)
	assert.Equal(t, []int{1, 2, 3}, got, "tp2 + tp1 + tp1 fill the four GPUs; the second tp2 waits")
	close(h.finish[2]) // one GPU free: not enough for job 4
	close(h.finish[3]) // two free now
	assert.Equal(t, 4, <-h.started)
	assert.Len(t, h.slots[4].GPUs, 2)
	close(h.finish[1])
	close(h.finish[4])
	<-done
}

// TestSchedulerNeverSharesAGPU: random mixes of sizes, finished in random
// order; every job runs exactly once, on exactly as many GPUs as it needs,
// and no two running jobs ever hold the same GPU (checked in run).
func TestSchedulerNeverSharesAGPU(t *testing.T) {
	for seed := int64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewSource(seed))
		ngpu := []int{1, 2, 4}[rng.Intn(3)]
		pool := &Pool{GPUs: h200s(t, ngpu)}
		n := 3 + rng.Intn(8)
		jobs := make([]schedJob, n)
		queue := make([]int, n)
		for i := range jobs {
			size := []int{1, 1, 2, 4}[rng.Intn(4)]
			if size > ngpu {
				size = ngpu
			}
			jobs[i].pl = pool.place(profileTP("p", size), nil, false)
			require.Nil(t, jobs[i].pl.notRun)
			queue[i] = i
		}
		h := newSchedHarness(t, n)
		done := make(chan struct{})
		go func() {
			newScheduler(pool).run(context.Background(), jobs, queue, h.run, func(i int) { t.Errorf("seed %d: job %d not started", seed, i) })
			close(done)
		}()
		var running []int
		for finished := 0; finished < n; finished++ {
			// Wait until at least one job runs, collecting every start.
			if len(running) == 0 {
				running = append(running, <-h.started)
			}
			for more := true; more; {
				select {
				case i := <-h.started:
					running = append(running, i)
				default:
					more = false
				}
			}
			k := rng.Intn(len(running))
			close(h.finish[running[k]])
			running = append(running[:k], running[k+1:]...)
		}
		<-done
		require.Len(t, h.order, n, "seed %d: every job ran once", seed)
		for i, s := range h.slots {
			assert.Len(t, s.GPUs, jobs[i].pl.need, "seed %d job %d", seed, i)
		}
	}
}

// TestSchedulerInterrupted: once the context is cancelled nothing more is
// started; running jobs finish and the rest are reported not started.
func TestSchedulerInterrupted(t *testing.T) {
	pool := &Pool{GPUs: h200s(t, 1)}
	jobs := make([]schedJob, 3)
	for i := range jobs {
		jobs[i].pl = pool.place(profileTP("p", 1), nil, false)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := newSchedHarness(t, 3)
	var notStarted []int
	done := make(chan struct{})
	go func() {
		newScheduler(pool).run(ctx, jobs, []int{2, 0, 1}, h.run, func(i int) { notStarted = append(notStarted, i) })
		close(done)
	}()
	assert.Equal(t, 2, <-h.started, "queue order")
	cancel()
	close(h.finish[2])
	<-done
	assert.Equal(t, []int{0, 1}, notStarted)
}

// TestSchedulerCPUSlots: a CPU pool runs one checkpoint per CPU slot.
func TestSchedulerCPUSlots(t *testing.T) {
	pool := &Pool{CPUSlots: 2}
	jobs := make([]schedJob, 3)
	for i := range jobs {
		jobs[i].pl = pool.place(profileTP("p", 2), nil, false)
	}
	h := newSchedHarness(t, 3)
	done := make(chan struct{})
	go func() {
		newScheduler(pool).run(context.Background(), jobs, []int{0, 1, 2}, h.run, func(int) {})
		close(done)
	}()
	a, b := <-h.started, <-h.started
	assert.ElementsMatch(t, []int{0, 1}, []int{a, b})
	assert.NotEqual(t, h.slots[a].Name, h.slots[b].Name)
	close(h.finish[0])
	assert.Equal(t, 2, <-h.started)
	close(h.finish[1])
	close(h.finish[2])
	<-done
}
