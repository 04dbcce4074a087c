package server

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"
)

// metrics are the counters behind GET /metrics.
type metrics struct {
	mu           sync.Mutex
	requests     map[requestKey]int
	taskSum      float64 // seconds
	taskCount    int
	handlerSum   float64 // seconds, inference requests only
	handlerCount int
	busy         bool
}

type requestKey struct {
	route  string
	status int
}

type metricsState struct {
	queueDepth, queueCapacity int
	draining, ready           bool
}

func newMetrics() *metrics { return &metrics{requests: map[requestKey]int{}} }

func (m *metrics) countRequest(route string, status int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[requestKey{route, status}]++
}

func (m *metrics) observeTask(ms float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.taskSum += ms / 1e3
	m.taskCount++
}

func (m *metrics) observeHandler(ms float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.handlerSum += ms / 1e3
	m.handlerCount++
}

func (m *metrics) setBusy(busy bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.busy = busy
}

// write renders the Prometheus text exposition format.
func (m *metrics) write(w io.Writer, st metricsState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("# HELP trtmc_refserver_requests_total HTTP requests by route and status.\n")
	p("# TYPE trtmc_refserver_requests_total counter\n")
	keys := slices.SortedFunc(maps.Keys(m.requests), func(a, b requestKey) int {
		return cmp.Or(cmp.Compare(a.route, b.route), cmp.Compare(a.status, b.status))
	})
	for _, k := range keys {
		p("trtmc_refserver_requests_total{route=%s,status=\"%d\"} %d\n", strconv.Quote(k.route), k.status, m.requests[k])
	}
	p("# HELP trtmc_refserver_queue_depth Inference requests waiting for the worker.\n")
	p("# TYPE trtmc_refserver_queue_depth gauge\n")
	p("trtmc_refserver_queue_depth %d\n", st.queueDepth)
	p("# HELP trtmc_refserver_queue_capacity Inference requests that may wait before 429.\n")
	p("# TYPE trtmc_refserver_queue_capacity gauge\n")
	p("trtmc_refserver_queue_capacity %d\n", st.queueCapacity)
	p("# HELP trtmc_refserver_worker_busy 1 while the worker runs a Task call.\n")
	p("# TYPE trtmc_refserver_worker_busy gauge\n")
	p("trtmc_refserver_worker_busy %d\n", b2i(m.busy))
	p("# HELP trtmc_refserver_task_seconds Wall time of Task calls.\n")
	p("# TYPE trtmc_refserver_task_seconds summary\n")
	p("trtmc_refserver_task_seconds_sum %s\n", strconv.FormatFloat(m.taskSum, 'g', -1, 64))
	p("trtmc_refserver_task_seconds_count %d\n", m.taskCount)
	p("# HELP trtmc_refserver_handler_seconds Handler time of inference requests.\n")
	p("# TYPE trtmc_refserver_handler_seconds summary\n")
	p("trtmc_refserver_handler_seconds_sum %s\n", strconv.FormatFloat(m.handlerSum, 'g', -1, 64))
	p("trtmc_refserver_handler_seconds_count %d\n", m.handlerCount)
	p("# HELP trtmc_refserver_ready 1 while /health/ready answers 200.\n")
	p("# TYPE trtmc_refserver_ready gauge\n")
	p("trtmc_refserver_ready %d\n", b2i(st.ready))
	p("# HELP trtmc_refserver_draining 1 after shutdown began.\n")
	p("# TYPE trtmc_refserver_draining gauge\n")
	p("trtmc_refserver_draining %d\n", b2i(st.draining))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
