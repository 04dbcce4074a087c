// Package server is the reference native server: an HTTP front for the
// reference Task that behaves like trtmc-server from the outside (strict
// routes, one worker, a bounded queue, request records, drain on shutdown).
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/bundle"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/task"
)

// Defaults of the serve options.
const (
	DefaultQueueSize     = 16
	DefaultShutdownGrace = 5 * time.Second
	DefaultMaxBodyBytes  = 32 << 20
	// CrashExitCode is the exit status of the crash-after fault.
	CrashExitCode = 3
)

// Config configures a server.
type Config struct {
	Bundle           *bundle.Bundle
	ModelName        string
	Host             string
	Port             int
	AllowNonLoopback bool
	RecordsPath      string
	QueueSize        int
	ShutdownGrace    time.Duration
	MaxBodyBytes     int64
	APIKey           string
	Faults           Faults
	Log              *slog.Logger
	// Exit ends the process; the crash-after fault calls it.
	Exit func(code int)
	// Version is the server's version, logged at readiness.
	Version string
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	switch {
	case c.Bundle == nil:
		return errors.New("no bundle")
	case c.ModelName == "":
		return errors.New("--model-name is required")
	case c.RecordsPath == "":
		return errors.New("--records is required")
	case c.Port < 0 || c.Port > 65535:
		return fmt.Errorf("--port %d is outside 0..65535", c.Port)
	case c.QueueSize < 0:
		return fmt.Errorf("--queue-size must not be negative, got %d", c.QueueSize)
	case c.ShutdownGrace < 0:
		return fmt.Errorf("--shutdown-grace-ms must not be negative, got %v", c.ShutdownGrace)
	case c.MaxBodyBytes < 1:
		return fmt.Errorf("--max-body-bytes must be positive, got %d", c.MaxBodyBytes)
	case c.Log == nil || c.Exit == nil:
		return errors.New("server config needs a logger and an exit function")
	}
	if !c.AllowNonLoopback && !IsLoopback(c.Host) {
		return fmt.Errorf("--host %q is not a loopback address (127.0.0.0/8, ::1, localhost); pass --allow-non-loopback to bind it anyway", c.Host)
	}
	return nil
}

// IsLoopback reports whether host names a loopback interface.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

var reRequestID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$`)

// ValidRequestID reports whether id is an acceptable X-Request-ID.
func ValidRequestID(id string) bool { return reRequestID.MatchString(id) }

// Server is a running reference server.
type Server struct {
	cfg     Config
	task    *task.Task
	route   string
	log     *slog.Logger
	started time.Time

	records *recordWriter
	metrics *metrics
	queue   *queue

	seq      atomic.Int64 // inference requests seen
	idsMu    sync.Mutex
	seenIDs  map[string]bool
	draining atomic.Bool
	stopped  chan struct{} // closed when the server stops for good

	connsMu     sync.Mutex
	activeConns map[net.Conn]bool // connections serving a request
}

// New opens the records file and starts the worker. Call Serve next.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	records, err := openRecords(cfg.RecordsPath)
	if err != nil {
		return nil, err
	}
	t := task.New(cfg.Bundle, task.Options{ExtraDelay: time.Duration(cfg.Faults.SlowMs) * time.Millisecond})
	s := &Server{
		cfg:         cfg,
		task:        t,
		route:       t.Route(),
		log:         cfg.Log,
		started:     time.Now(),
		records:     records,
		metrics:     newMetrics(),
		queue:       newQueue(cfg.QueueSize),
		seenIDs:     map[string]bool{},
		stopped:     make(chan struct{}),
		activeConns: map[net.Conn]bool{},
	}
	go s.work()
	return s, nil
}

// Run applies the startup faults, binds the address, serves until ctx is
// cancelled, then drains and returns nil.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Faults.StartupDelay > 0 {
		cfg.Log.Info("startup_delay", "fault", "startup-delay", "seconds", cfg.Faults.StartupDelay.Seconds())
		select {
		case <-time.After(cfg.Faults.StartupDelay):
		case <-ctx.Done():
			return fmt.Errorf("interrupted during startup: %w", ctx.Err())
		}
	}
	if cfg.Faults.StartupFail {
		return errors.New("startup failed: injected fault startup-fail")
	}
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("bind %s: %w", addr, err)
	}
	s, err := New(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	return s.Serve(ctx, ln)
}

// Serve answers requests on ln until ctx is cancelled, then drains: readiness
// fails, new inference requests get 503, queued work finishes until the
// shutdown grace deadline. It closes ln and the records file.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ConnState:         s.connState,
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	port := 0
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		port = tcp.Port
	}
	if s.cfg.Faults.NeverReady {
		s.log.Warn("never_ready", "fault", "never-ready", "host", s.cfg.Host, "port", port)
	} else {
		s.log.Info("server_ready", "host", s.cfg.Host, "port", port, "model", s.cfg.ModelName,
			"family", s.cfg.Bundle.Family, "route", s.route, "bundle_sha256", s.cfg.Bundle.SHA256,
			"queue_size", s.cfg.QueueSize, "pid", os.Getpid(), "version", s.cfg.Version)
	}

	var err error
	select {
	case err = <-serveErr:
		err = fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.shutdown(srv)
	return err
}

// connState tracks which connections are serving a request
// (http.StateActive); shutdown waits for none to be.
func (s *Server) connState(c net.Conn, st http.ConnState) {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	if st == http.StateActive {
		s.activeConns[c] = true
	} else {
		delete(s.activeConns, c)
	}
}

// busyConns is how many connections are serving a request.
func (s *Server) busyConns() int {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	return len(s.activeConns)
}

// shutdown drains queued work until the grace deadline, then stops the HTTP
// server and closes the records file.
func (s *Server) shutdown(srv *http.Server) {
	deadline := time.Now().Add(s.cfg.ShutdownGrace)
	s.draining.Store(true)
	pending := s.queue.drain()
	s.log.Info("shutdown_started", "pending", pending, "grace_ms", s.cfg.ShutdownGrace.Milliseconds())

	drained := true
	select {
	case <-s.queue.idle():
	case <-time.After(time.Until(deadline)):
		drained = false
	}
	// Then every response in flight is written: no connection is serving
	// a request. http.Server.Shutdown is not the test here: it also waits
	// (up to 5 s) for connections a client opened and never used, which a
	// Go client's transport leaves behind when it dials a spare; those
	// carry no work, and Close drops them.
	srv.SetKeepAlivesEnabled(false)
	if drained {
		for s.busyConns() > 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		drained = s.busyConns() == 0
	}
	srv.Close()
	close(s.stopped)
	if err := s.records.close(); err != nil {
		s.log.Error("records_close_failed", "error", err.Error())
	}
	s.log.Info("shutdown_complete", "drained", drained, "abandoned", s.queue.pending())
}

// work is the one worker: it runs queued jobs one at a time.
func (s *Server) work() {
	for j := range s.queue.jobs {
		j.queueMs = msSince(j.enqueued)
		s.metrics.setBusy(true)
		if s.cfg.Faults.Hang && j.seq > int64(s.cfg.Faults.HangAfter) {
			s.log.Warn("task_hang", "fault", "hang-after", "request_id", j.id)
			<-s.stopped // the Task never returns; the job stays pending
			return
		}
		j.res, j.err = s.task.Answer(s.route, j.payload)
		if j.res.TaskMs > 0 {
			s.metrics.observeTask(j.res.TaskMs)
		}
		s.metrics.setBusy(false)
		close(j.done)
		s.queue.finish()
	}
}

// Handler returns the server's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/health/live", s.handleLive)
	mux.HandleFunc("/health/ready", s.handleReady)
	mux.HandleFunc("/v1/models", s.handleModels)
	mux.HandleFunc("/metrics", s.handleMetrics)
	mux.HandleFunc(task.RouteChat, s.handleInference)
	mux.HandleFunc(task.RouteInfer, s.handleInference)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route %s", r.URL.Path))
	})
	return s.withRequestID(mux)
}

type ctxKey int

const (
	keyRequestID ctxKey = iota
	keyRequestIDError
)

// withRequestID honours a valid X-Request-ID, generates req-<hex> otherwise,
// and always returns it. An invalid or repeated header is recorded in the
// context; every handler answers such a request with 400.
func (s *Server) withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		values := r.Header.Values("X-Request-ID")
		id, problem := "", ""
		switch {
		case len(values) > 1:
			problem = "X-Request-ID header is repeated"
		case len(values) == 1 && !ValidRequestID(values[0]):
			problem = fmt.Sprintf("X-Request-ID must match %s", reRequestID)
		case len(values) == 1:
			id = values[0]
		}
		if id == "" {
			id = newRequestID()
		}
		w.Header().Set("X-Request-ID", id)
		ctx := context.WithValue(r.Context(), keyRequestID, id)
		if problem != "" {
			ctx = context.WithValue(ctx, keyRequestIDError, problem)
		}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r.WithContext(ctx))
		if sw.status != 0 {
			s.metrics.countRequest(metricRoute(r.URL.Path), sw.status)
		}
	})
}

// statusWriter remembers the status code a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

// metricRoute keeps the metrics' route label bounded: unknown paths share one.
func metricRoute(path string) string {
	switch path {
	case "/health/live", "/health/ready", "/v1/models", "/metrics", task.RouteChat, task.RouteInfer:
		return path
	}
	return "other"
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return "req-" + hex.EncodeToString(b[:])
}

func requestIDOf(r *http.Request) string {
	id, _ := r.Context().Value(keyRequestID).(string)
	return id
}

// checkGET answers 400 for a bad request id and 405 for a method other than
// GET or HEAD; it reports whether the handler may go on.
func (s *Server) checkGET(w http.ResponseWriter, r *http.Request) bool {
	if problem, ok := r.Context().Value(keyRequestIDError).(string); ok {
		writeError(w, http.StatusBadRequest, "invalid_request", problem)
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s does not accept %s", r.URL.Path, r.Method))
		return false
	}
	return true
}

func (s *Server) handleLive(w http.ResponseWriter, r *http.Request) {
	if s.checkGET(w, r) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "live"})
	}
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if !s.checkGET(w, r) {
		return
	}
	switch {
	case s.draining.Load():
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
	case s.cfg.Faults.NeverReady:
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not_ready"})
	default:
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	}
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	if !s.checkGET(w, r) {
		return
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data":   []model{{ID: s.cfg.ModelName, Object: "model", Created: s.started.Unix(), OwnedBy: "trtmc-refserver"}},
	})
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if !s.checkGET(w, r) {
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	s.metrics.write(w, metricsState{
		queueDepth:    s.queue.depth(),
		queueCapacity: s.cfg.QueueSize,
		draining:      s.draining.Load(),
		ready:         !s.draining.Load() && !s.cfg.Faults.NeverReady,
	})
}

// errorBody is the JSON body of every error answer.
type errorBody struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	var body errorBody
	body.Error.Type, body.Error.Message = typ, msg
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"type":"internal_error","message":"encode response"}}`)
	}
	writeBody(w, status, body)
}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n')) // a client that went away is not our error
}

func msSince(t time.Time) float64 {
	return float64(time.Since(t).Microseconds()) / 1e3
}

// drainBody discards what is left of a request body so the connection can be reused.
func drainBody(r *http.Request) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
}
