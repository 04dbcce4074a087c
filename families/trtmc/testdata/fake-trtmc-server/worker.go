package main

// The native workers, as worker.py (idx@a4ba28be) drives them, and the
// replica leases of registry.py / WorkerGroup.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// workerAllowlist is worker.py _WORKER_ENVIRONMENT_ALLOWLIST (idx@a4ba28be).
var workerAllowlist = map[string]bool{"CONDA_PREFIX": true, "CUDA_CACHE_DISABLE": true, "CUDA_CACHE_MAXSIZE": true,
	"CUDA_CACHE_PATH": true, "CUDA_DEVICE_ORDER": true, "CUDA_MODULE_LOADING": true, "CUDA_VISIBLE_DEVICES": true, "HOME": true,
	"LANG": true, "LC_ALL": true, "LC_CTYPE": true, "LD_LIBRARY_PATH": true, "LOGNAME": true, "NVIDIA_DRIVER_CAPABILITIES": true,
	"NVIDIA_VISIBLE_DEVICES": true, "OMP_NUM_THREADS": true, "PATH": true, "TMPDIR": true, "TZ": true, "USER": true,
	"VIRTUAL_ENV": true, "XDG_CACHE_HOME": true, "XDG_CONFIG_HOME": true, "XDG_DATA_HOME": true}

func workerEnvironment() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if workerAllowlist[k] || strings.HasPrefix(k, "FAKE_") {
			env = append(env, kv)
		}
	}
	return env
}

// worker is one replica: a persistent `_serve-worker` process.
type worker struct {
	name     string
	mu       sync.Mutex
	cmd      *exec.Cmd
	in       io.WriteCloser
	out      *bufio.Scanner
	timeout  time.Duration
	n        int
	dead     atomic.Bool
	ready    map[string]any
	defaultN int64
}

func startWorker(c config, name string) (*worker, error) {
	argv := []string{"_serve-worker", c.bundle}
	if c.runtimeRoot != "" {
		argv = append(argv, "--runtime-root", c.runtimeRoot)
	}
	if c.kvCache != "" {
		argv = append(argv, "--kv-cache-size", c.kvCache)
	}
	if c.runtimeCache != "" {
		argv = append(argv, "--runtime-cache", c.runtimeCache)
	}
	if c.cudaGraphs {
		argv = append(argv, "--cuda-graphs")
	}
	cmd := exec.Command(c.workerBinary, argv...)
	cmd.Stderr = os.Stderr
	// worker.py: start_new_session=True and env=_worker_environment(), an
	// allowlist (CUDA_*, PATH, HOME, LD_LIBRARY_PATH, ...): the worker is
	// in a session and process group of its own and inherits nothing else
	// of the control plane's environment (the fixture's own FAKE_* controls
	// excepted), and no file but its three pipes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Env = workerEnvironment()
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("failed to launch worker %q", name)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20+2)
	w := &worker{name: name, cmd: cmd, in: in, out: sc, timeout: time.Duration(c.requestTimeout * float64(time.Second)), defaultN: 128}
	if !sc.Scan() {
		_ = cmd.Wait()
		return nil, fmt.Errorf("worker %q failed before readiness", name)
	}
	if json.Unmarshal(sc.Bytes(), &w.ready) != nil || w.ready["event"] != "ready" {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("worker %q emitted invalid JSONL", name)
	}
	caps, _ := w.ready["capabilities"].([]any)
	text := false
	for _, c := range caps {
		text = text || c == "text_generation"
	}
	if !text {
		_ = cmd.Process.Kill()
		return nil, errors.New("worker does not advertise text_generation")
	}
	// registry.max_tokens: the ready event's default, 128 when it is not a
	// positive integer.
	if v, ok := w.ready["default_max_new_tokens"].(float64); ok && v > 0 && v == float64(int64(v)) {
		w.defaultN = int64(v)
	}
	return w, nil
}

type workerReply struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// Errors of a worker call (errors.py codes).
var (
	errCrashed  = errors.New("worker_crashed")
	errProtocol = errors.New("worker_protocol_error")
	errTimeout  = errors.New("worker_timeout")
)

// call runs one operation; a crash, a timeout or a protocol error retires
// the replica (worker.py _mark_failed, _fail_protocol).
func (w *worker) call(req map[string]any) (workerReply, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead.Load() {
		return workerReply{}, errCrashed
	}
	w.n++
	req["id"] = fmt.Sprintf("%s-%d", w.name, w.n)
	b, _ := json.Marshal(req)
	if _, err := w.in.Write(append(b, '\n')); err != nil {
		w.dead.Store(true)
		return workerReply{}, errCrashed
	}
	type scanned struct {
		line []byte
		ok   bool
	}
	ch := make(chan scanned, 1)
	go func() {
		ok := w.out.Scan()
		ch <- scanned{append([]byte(nil), w.out.Bytes()...), ok}
	}()
	var s scanned
	select {
	case s = <-ch:
	case <-time.After(w.timeout):
		w.dead.Store(true)
		_ = w.cmd.Process.Kill()
		return workerReply{}, errTimeout
	}
	if !s.ok {
		w.dead.Store(true)
		return workerReply{}, errCrashed
	}
	var rep workerReply
	var id struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(s.line, &rep) != nil || json.Unmarshal(s.line, &id) != nil || id.ID != req["id"] {
		w.dead.Store(true)
		_ = w.cmd.Process.Kill()
		return workerReply{}, errProtocol
	}
	if !rep.OK && rep.Error == nil {
		w.dead.Store(true)
		return workerReply{}, errProtocol
	}
	return rep, nil
}

func (w *worker) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = w.in.Write([]byte(`{"id":"shutdown","op":"shutdown"}` + "\n"))
	_ = w.in.Close()
	done := make(chan struct{})
	go func() { _ = w.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = w.cmd.Process.Kill()
	}
}

// group is WorkerGroup: the replicas of the one model and the idle ones.
type group struct {
	replicas []*worker
	idle     chan *worker
	closing  atomic.Bool
}

func newGroup(c config) (*group, error) {
	g := &group{idle: make(chan *worker, c.replicas)}
	for i := range c.replicas {
		w, err := startWorker(c, fmt.Sprintf("%s-%d", c.modelName, i+1))
		if err != nil {
			g.close()
			return nil, err
		}
		g.replicas = append(g.replicas, w)
		g.idle <- w
	}
	return g, nil
}

func (g *group) readyCount() int {
	n := 0
	for _, w := range g.replicas {
		if !w.dead.Load() {
			n++
		}
	}
	return n
}

// status is registry.status() for the one model.
func (g *group) status() (ready, degraded bool, busy int) {
	accepting := !g.closing.Load()
	r := g.readyCount()
	return accepting && r > 0, accepting && r > 0 && r < len(g.replicas), r - len(g.idle)
}

// acquire leases an idle replica, or fails at once: 503 server_draining
// when the server is closing or no replica is healthy (execute's
// RuntimeError), 429 server_busy when every healthy one is leased.
func (g *group) acquire() (*worker, *apiError) {
	if g.closing.Load() {
		return nil, &apiError{status: 503, code: "server_draining", msg: "server is not accepting requests"}
	}
	for {
		select {
		case w := <-g.idle:
			if w.dead.Load() {
				continue // a failed replica is dropped
			}
			return w, nil
		default:
			if g.readyCount() == 0 {
				return nil, &apiError{status: 503, code: "server_draining", msg: "server is not accepting requests"}
			}
			return nil, &apiError{status: 429, code: "server_busy", msg: "all model worker replicas are busy", retryAfter: true}
		}
	}
}

// release returns a healthy replica to the idle ones.
func (g *group) release(w *worker) {
	if !w.dead.Load() && !g.closing.Load() {
		g.idle <- w
	}
}

func (g *group) close() {
	g.closing.Store(true)
	for _, w := range g.replicas {
		w.close()
	}
}
