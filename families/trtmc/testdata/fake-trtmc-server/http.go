package main

// HTTP: the routes of app.py, records.py's RequestPolicy and metrics.py
// (idx@a9ed5f69, idx@a4ba28be).

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type server struct {
	c       config
	g       *group
	self    string
	recMu   sync.Mutex
	records *os.File
	metrics metrics
	// served counts chat requests the worker answered (intrude).
	served   atomic.Int64
	intruder intruder
}

func newServer(c config) (*server, error) {
	g, err := newGroup(c)
	if err != nil {
		return nil, err
	}
	s := &server{c: c, g: g, metrics: metrics{requests: map[string]int{}}}
	s.intruder.leased, s.intruder.refused = make(chan struct{}), make(chan struct{})
	if c.records != "" {
		f, err := os.OpenFile(c.records, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			g.close()
			return nil, err
		}
		s.records = f
	}
	return s, nil
}

func (s *server) close() {
	s.g.close()
	if s.records != nil {
		s.records.Close()
	}
}

var requestIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$`)

func genID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "req-" + hex.EncodeToString(b[:])
}

// apiError is error_response's arguments.
type apiError struct {
	status     int
	code, msg  string
	param      any
	retryAfter bool
}

func (e *apiError) Error() string { return e.msg }

// errorType is error_response's type: server_error for 5xx,
// rate_limit_error for 429, invalid_request_error otherwise.
func errorType(status int) string {
	switch {
	case status >= 500:
		return "server_error"
	case status == 429:
		return "rate_limit_error"
	}
	return "invalid_request_error"
}

func errorBody(e *apiError) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": e.msg, "type": errorType(e.status), "param": e.param, "code": e.code}})
	return b
}

func recorded(path string) bool { return path == "/v1/completions" || path == "/v1/chat/completions" }

// reply is what a route answers.
type reply struct {
	status  int
	body    []byte
	ctype   string
	headers map[string]string
}

func jsonReply(status int, v any) reply {
	b, _ := json.Marshal(v)
	return reply{status: status, body: b, ctype: "application/json"}
}

func errReply(e *apiError) reply {
	r := reply{status: e.status, body: errorBody(e), ctype: "application/json"}
	if e.retryAfter {
		r.headers = map[string]string{"Retry-After": "1"}
	}
	return r
}

// ServeHTTP is RequestPolicy around the app: the request id, the echo on
// every answer, handler_ms until the last byte, one record per terminal
// request of the two completion routes.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	started := time.Now()
	ids := r.Header.Values("X-Request-Id")
	valid := len(ids) <= 1 && (len(ids) == 0 || requestIDRE.MatchString(ids[0]))
	id := genID()
	ignore := version == "ddf1735f" || os.Getenv("FAKE_TRTMC_SERVER_IDS") == "ignore"
	if !ignore && len(ids) == 1 && valid {
		id = ids[0]
	}
	if ignore {
		valid = true // that server never looks at the header
	}
	rec := map[string]any{"request_id": id, "route": r.URL.Path, "model": nil, "replica": nil, "input_tokens": nil,
		"input_token_source": "unavailable", "completion_tokens": nil, "completion_token_source": "unavailable"}
	var rep reply
	if !valid {
		rep = errReply(&apiError{status: 400, code: "invalid_request", msg: "invalid X-Request-ID header", param: "X-Request-ID"})
	} else {
		rep = s.route(r, id, rec)
	}
	for k, v := range rep.headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("X-Request-ID", id)
	w.Header().Set("Content-Type", rep.ctype)
	w.Header().Set("Content-Length", strconv.Itoa(len(rep.body)))
	w.WriteHeader(rep.status)
	_, _ = w.Write(rep.body)
	rec["status"] = rep.status
	rec["handler_ms"] = float64(time.Since(started).Microseconds()) / 1000
	b, _ := json.Marshal(map[string]any{"event": "http_request", "request_id": id, "route": r.URL.Path, "status": rep.status,
		"duration_seconds": time.Since(started).Seconds()})
	fmt.Fprintf(os.Stderr, "INFO:     %s\n", b)
	if s.records != nil && recorded(r.URL.Path) {
		b, _ := json.Marshal(rec)
		s.recMu.Lock()
		_, _ = s.records.Write(append(b, '\n'))
		s.recMu.Unlock()
	}
}

var routes = map[string]string{"/health/live": http.MethodGet, "/health/ready": http.MethodGet, "/v1/models": http.MethodGet,
	"/metrics": http.MethodGet, "/v1/completions": http.MethodPost, "/v1/chat/completions": http.MethodPost, "/v1/infer": http.MethodPost}

func (s *server) route(r *http.Request, id string, rec map[string]any) reply {
	method, ok := routes[r.URL.Path]
	switch {
	case !ok:
		return jsonReply(404, map[string]any{"detail": "Not Found"}) // FastAPI's, no error envelope
	case r.Method != method:
		rep := jsonReply(405, map[string]any{"detail": "Method Not Allowed"})
		rep.headers = map[string]string{"Allow": method}
		return rep
	}
	switch r.URL.Path {
	case "/health/live":
		return jsonReply(200, map[string]any{"status": "live"})
	case "/health/ready":
		ready, degraded, _ := s.g.status()
		if !ready {
			return jsonReply(503, map[string]any{"status": "not_ready", "degraded": degraded})
		}
		return jsonReply(200, map[string]any{"status": "ready", "degraded": degraded})
	case "/v1/models":
		return jsonReply(200, map[string]any{"object": "list", "data": []any{map[string]any{"id": s.c.modelName, "object": "model",
			"created": time.Now().Unix(), "owned_by": "tensorrt-model-connect"}}})
	case "/metrics":
		ready, _, busy := s.g.status()
		return reply{status: 200, body: []byte(s.metrics.render(ready, busy)), ctype: "text/plain; version=0.0.4; charset=utf-8"}
	}
	body, aerr := s.readBody(r)
	if aerr != nil {
		return errReply(aerr)
	}
	var out reply
	switch r.URL.Path {
	case "/v1/chat/completions":
		out = s.chat(body, id, rec)
	case "/v1/completions":
		out = errReply(&apiError{status: 400, code: "invalid_request", msg: "text completions are not played by this fixture"})
	case "/v1/infer":
		out = s.infer(body)
	}
	return out
}

// readBody is _BodyLimitMiddleware: Content-Length first, then the bytes
// read (and, as the seeds' server must, on /v1/infer too).
func (s *server) readBody(r *http.Request) ([]byte, *apiError) {
	tooLarge := &apiError{status: 413, code: "content_too_large", msg: "request body exceeds limit"}
	if cl := r.Header.Get("Content-Length"); cl != "" {
		n, err := strconv.ParseInt(cl, 10, 64)
		if err != nil {
			return nil, &apiError{status: 400, code: "invalid_request", msg: "invalid Content-Length header"}
		}
		if n > s.c.maxBody {
			return nil, tooLarge
		}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, s.c.maxBody+1))
	if err != nil {
		return nil, &apiError{status: 400, code: "invalid_request", msg: "could not read the body"}
	}
	if int64(len(body)) > s.c.maxBody {
		return nil, tooLarge
	}
	return body, nil
}

// metrics is metrics.py: counters over the completion routes.
type metrics struct {
	mu                          sync.Mutex
	requests                    map[string]int
	active, completed, succeded int
	queueS, inferenceS          float64
	setupS, prefillS, decodeS   float64
}

func (m *metrics) reject(route string, status int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[fmt.Sprintf(`route=%q,status="%d"`, route, status)]++
}

func (m *metrics) begin() {
	m.mu.Lock()
	m.active++
	m.mu.Unlock()
}

func (m *metrics) finish(route string, status int, queueS, inferenceS float64, timings map[string]float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[fmt.Sprintf(`route=%q,status="%d"`, route, status)]++
	m.active = max(0, m.active-1)
	m.queueS += queueS
	m.inferenceS += inferenceS
	m.completed++
	if status == 200 && timings != nil {
		m.setupS += timings["setup_ms"] / 1000
		m.prefillS += timings["prefill_ms"] / 1000
		m.decodeS += timings["decode_ms"] / 1000
		m.succeded++
	}
}

func (m *metrics) render(ready bool, busy int) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b bytes.Buffer
	r := 0
	if ready {
		r = 1
	}
	fmt.Fprintf(&b, "# TYPE trtmc_server_ready gauge\ntrtmc_server_ready %d\n# TYPE trtmc_server_queue_depth gauge\ntrtmc_server_queue_depth 0\n", r)
	fmt.Fprintf(&b, "# TYPE trtmc_server_active_requests gauge\ntrtmc_server_active_requests %d\n", m.active)
	fmt.Fprintf(&b, "# TYPE trtmc_server_busy_replicas gauge\ntrtmc_server_busy_replicas %d\n# TYPE trtmc_server_requests_total counter\n", busy)
	keys := make([]string, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "trtmc_server_requests_total{%s} %d\n", k, m.requests[k])
	}
	for _, s := range []struct {
		name string
		sum  float64
		n    int
	}{{"queue_duration", m.queueS, m.completed}, {"inference_duration", m.inferenceS, m.completed},
		{"task_setup_duration", m.setupS, m.succeded}, {"task_prefill_duration", m.prefillS, m.succeded},
		{"task_decode_duration", m.decodeS, m.succeded}} {
		fmt.Fprintf(&b, "# TYPE trtmc_server_%s_seconds summary\ntrtmc_server_%s_seconds_sum %v\ntrtmc_server_%s_seconds_count %d\n",
			s.name, s.name, s.sum, s.name, s.n)
	}
	return b.String()
}

// intruder plays a second client (FAKE_TRTMC_SERVER_INTRUDE=N): when the
// worker has answered the N-th chat request, and before that answer is
// sent, another client posts the same body (X-Request-ID intruder-N) and
// leases the replica; it holds the lease until a request has been refused
// with 429, then is served and recorded like any request. So the request
// that follows the N-th arrives while another request is in flight: the
// overlap the public server answers 429 server_busy.
type intruder struct {
	once, leasedOnce, refusedOnce sync.Once
	leased, refused               chan struct{}
}

const intruderPrefix = "intruder-"

func (s *server) maybeIntrude(route string, body []byte) {
	n, err := strconv.ParseInt(os.Getenv("FAKE_TRTMC_SERVER_INTRUDE"), 10, 64)
	if err != nil || s.served.Load() != n {
		return
	}
	s.intruder.once.Do(func() {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, s.self+route, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Request-ID", intruderPrefix+strconv.FormatInt(n, 10))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		select {
		case <-s.intruder.leased:
		case <-time.After(30 * time.Second):
		}
	})
}

// intruderHolds is the intruder's side: it has its lease; it keeps it
// until a request was refused.
func (s *server) intruderHolds(id string) {
	if !strings.HasPrefix(id, intruderPrefix) || os.Getenv("FAKE_TRTMC_SERVER_INTRUDE") == "" {
		return
	}
	s.intruder.leasedOnce.Do(func() { close(s.intruder.leased) })
	select {
	case <-s.intruder.refused:
	case <-time.After(60 * time.Second):
	}
}

func (s *server) noteRefused(e *apiError) {
	if e.status == 429 {
		s.intruder.refusedOnce.Do(func() { close(s.intruder.refused) })
	}
}
