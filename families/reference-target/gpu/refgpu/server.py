"""The HTTP server: trtmc-refserver's contract (docs/refserver.md) for the
chat route, standard library only. One worker runs one Task call at a time;
up to queue_size requests wait behind it (429 beyond); SIGTERM/SIGINT
drains (ready 503, new requests 503) until the grace deadline."""
import hmac
import http.server
import ipaddress
import json
import os
import queue
import re
import secrets
import signal
import socket
import sys
import threading
import time

from . import FAMILY, ROUTE, VERSION
from .task import RequestError

ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$")
PATHS = {"/health/live": "GET", "/health/ready": "GET", "/v1/models": "GET", "/metrics": "GET", ROUTE: "POST"}


def is_loopback(host):
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def new_id():
    return "req-" + secrets.token_hex(16)


class Log:
    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.lock = threading.Lock()

    def __call__(self, event, level="info", **fields):
        rec = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + ".%06dZ" % (time.time() % 1 * 1e6), "level": level, "event": event}
        rec.update(fields)
        with self.lock:
            self.stream.write(json.dumps(rec) + "\n")
            self.stream.flush()


class Job:
    def __init__(self, rid, payload):
        self.rid, self.payload = rid, payload
        self.enqueued = time.monotonic()
        self.done = threading.Event()
        self.res = None
        self.err = None
        self.queue_ms = 0.0
        self.task_ms = 0.0


class Server:
    def __init__(self, task, model_name, records, host="127.0.0.1", port=8000, queue_size=16, grace_s=5.0,
                 max_body=32 << 20, api_key="", allow_non_loopback=False, log=None, bundle_sha256="", extra_ready=None):
        if not allow_non_loopback and not is_loopback(host):
            raise ValueError("--host %r is not a loopback address (127.0.0.0/8, ::1, localhost); pass --allow-non-loopback to bind it anyway" % host)
        self.task, self.model_name = task, model_name
        self.host, self.port, self.queue_size, self.grace_s = host, port, queue_size, grace_s
        self.max_body, self.api_key = max_body, api_key
        self.log = log or Log()
        self.bundle_sha256 = bundle_sha256
        self.extra_ready = extra_ready or {}
        self.records = os.open(records, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.jobs = queue.Queue()
        self.pending = 0  # queued + running
        self.lock = threading.Lock()
        self.used_ids = set()
        self.draining = threading.Event()
        self.stopped = threading.Event()
        self.busy = False
        self.counts = {}
        self.task_s = [0.0, 0]
        self.handler_s = [0.0, 0]
        self.created = int(time.time())
        self.httpd = None

    # ---- worker

    def worker(self):
        while True:
            job = self.jobs.get()
            if job is None:
                return
            with self.lock:
                self.busy = True
            start = time.monotonic()
            job.queue_ms = round((start - job.enqueued) * 1e3, 3)
            try:
                job.res = self.task.answer(job.payload)
            except RequestError as e:
                job.err = e
            except Exception as e:  # a bug: answered 500, logged
                job.err = e
            job.task_ms = round((time.monotonic() - start) * 1e3, 3)
            with self.lock:
                self.busy = False
                self.pending -= 1
                self.task_s[0] += job.task_ms / 1e3
                self.task_s[1] += 1
            job.done.set()

    def submit(self, job):
        with self.lock:
            if self.draining.is_set():
                return "draining"
            if self.pending >= self.queue_size + 1:
                return "full"
            self.pending += 1
        self.jobs.put(job)
        return None

    def claim(self, rid):
        with self.lock:
            if rid in self.used_ids:
                return False
            self.used_ids.add(rid)
            return True

    def record(self, rec):
        os.write(self.records, (json.dumps(rec) + "\n").encode())

    def count(self, route, status):
        with self.lock:
            self.counts[(route, status)] = self.counts.get((route, status), 0) + 1

    def metrics(self):
        with self.lock:
            lines = ["# TYPE trtmc_refgpu_requests_total counter"]
            for (route, status), n in sorted(self.counts.items()):
                lines.append('trtmc_refgpu_requests_total{route="%s",status="%d"} %d' % (route, status, n))
            lines += ["trtmc_refgpu_queue_depth %d" % max(self.pending - (1 if self.busy else 0), 0),
                      "trtmc_refgpu_queue_capacity %d" % self.queue_size,
                      "trtmc_refgpu_worker_busy %d" % (1 if self.busy else 0),
                      "trtmc_refgpu_task_seconds_sum %.6f" % self.task_s[0], "trtmc_refgpu_task_seconds_count %d" % self.task_s[1],
                      "trtmc_refgpu_handler_seconds_sum %.6f" % self.handler_s[0],
                      "trtmc_refgpu_handler_seconds_count %d" % self.handler_s[1],
                      "trtmc_refgpu_ready %d" % (0 if self.draining.is_set() else 1),
                      "trtmc_refgpu_draining %d" % (1 if self.draining.is_set() else 0)]
        return "\n".join(lines) + "\n"

    # ---- lifecycle

    def bind(self):
        srv = self

        class Handler(RequestHandler):
            server_ref = srv

        family = socket.AF_INET6 if ":" in self.host.strip("[]") else socket.AF_INET

        class HTTPServer(http.server.ThreadingHTTPServer):
            address_family = family
            daemon_threads = True
            allow_reuse_address = True

        self.httpd = HTTPServer((self.host.strip("[]"), self.port), Handler)
        self.port = self.httpd.server_address[1]

    def serve(self):
        """Binds, logs server_ready, serves until SIGTERM/SIGINT, drains."""
        self.bind()
        threading.Thread(target=self.worker, name="worker", daemon=True).start()
        stop = threading.Event()

        def on_signal(signum, _frame):
            if stop.is_set():  # a second signal: the default way
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)
                return
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        t = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, name="http", daemon=True)
        t.start()
        self.log("server_ready", host=self.host, port=self.port, model=self.model_name, family=FAMILY, route=ROUTE,
                 bundle_sha256=self.bundle_sha256, queue_size=self.queue_size, pid=os.getpid(), version=VERSION, **self.extra_ready)
        while not stop.wait(0.2):
            pass
        self.log("shutdown_started", grace_ms=int(self.grace_s * 1000))
        self.draining.set()
        deadline = time.monotonic() + self.grace_s
        drained = True
        while True:
            with self.lock:
                idle = self.pending == 0
            if idle:
                break
            if time.monotonic() > deadline:
                drained = False
                break
            time.sleep(0.02)
        self.log("shutdown_complete", drained=drained)
        self.stopped.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.jobs.put(None)
        os.close(self.records)
        self.log("server_stopped")
        return 0


class RequestHandler(http.server.BaseHTTPRequestHandler):
    server_ref = None
    protocol_version = "HTTP/1.1"
    server_version = "trtmc-refgpu/" + VERSION
    # Headers and body leave in two writes; with Nagle's algorithm on, the
    # body waits for the client's delayed ACK (about 40 ms on Linux) on a
    # kept-alive connection, which AIPerf uses: the H200 evidence of
    # 2026-12-01 shows HTTP p50 50 ms over a Task p50 of 8 ms from it.
    disable_nagle_algorithm = True

    def log_message(self, *args):  # the server logs JSON events itself
        pass

    def _reply(self, status, body, rid, ctype="application/json", extra=None):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Request-ID", rid)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status, etype, msg):
        return status, {"error": {"type": etype, "message": msg}}

    def _handle(self, method):
        srv = self.server_ref
        started = time.monotonic()
        path = self.path.split("?", 1)[0]
        ids = self.headers.get_all("X-Request-ID") or []
        rid, id_problem = (ids[0] if ids else ""), ""
        if len(ids) > 1:
            rid, id_problem = new_id(), "X-Request-ID was sent %d times" % len(ids)
        elif ids and not ID_RE.match(rid):
            rid, id_problem = new_id(), "X-Request-ID %s is not valid (want %s)" % (json.dumps(ids[0]), ID_RE.pattern)
        elif not ids:
            rid = new_id()
        if path not in PATHS:
            self._drain_body()
            st, body = self._error(404, "not_found", "no route %s" % path)
            return self._finish(st, body, rid, path, started)
        if method != PATHS[path]:
            self._drain_body()
            st, body = self._error(405, "method_not_allowed", "%s %s is not allowed" % (method, path))
            return self._finish(st, body, rid, path, started, extra={"Allow": PATHS[path]})
        if path != ROUTE:
            if id_problem:
                st, body = self._error(400, "invalid_request", id_problem)
            elif path == "/health/live":
                st, body = 200, {"status": "live"}
            elif path == "/health/ready":
                st, body = (503, {"status": "draining"}) if srv.draining.is_set() else (200, {"status": "ready"})
            elif path == "/v1/models":
                st, body = 200, {"object": "list", "data": [{"id": srv.model_name, "object": "model", "created": srv.created, "owned_by": "trtmc-refgpu"}]}
            else:
                return self._finish(200, srv.metrics().encode(), rid, path, started, ctype="text/plain; version=0.0.4")
            return self._finish(st, body, rid, path, started)
        return self._infer(rid, id_problem, started)

    def _drain_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if 0 < n <= (1 << 20):
            self.rfile.read(n)
        elif n:
            self.close_connection = True

    def _finish(self, status, body, rid, path, started, ctype="application/json", extra=None):
        srv = self.server_ref
        self._reply(status, body, rid, ctype, extra)
        srv.count(path, status)
        if path == ROUTE:
            srv.log("request", request_id=rid, route=path, status=status, handler_ms=round((time.monotonic() - started) * 1e3, 3))

    def _infer(self, rid, id_problem, started):
        srv = self.server_ref
        rec = {"request_id": rid, "route": ROUTE, "model": srv.model_name, "status": 0, "handler_ms": 0, "queue_ms": 0,
               "task_ms": 0, "image_bytes": 0, "image_width": 0, "image_height": 0, "warmup_marker": False,
               "prompt_tokens": 0, "completion_tokens": 0, "token_source": "whitespace_words"}
        status, body = self._infer_body(rec, rid, id_problem)
        rid = rec["request_id"]
        rec["status"] = status
        rec["handler_ms"] = round((time.monotonic() - started) * 1e3, 3)
        if status != 200:
            rec["error_type"] = body["error"]["type"]
        with srv.lock:
            srv.handler_s[0] += rec["handler_ms"] / 1e3
            srv.handler_s[1] += 1
        srv.record(rec)  # before the response is sent
        self._finish(status, body, rid, ROUTE, started)

    def _infer_body(self, rec, rid, id_problem):
        srv = self.server_ref
        n = int(self.headers.get("Content-Length") or 0)
        if id_problem:
            self._drain_body()
            return self._error(400, "invalid_request", id_problem)
        if srv.api_key:
            got = self.headers.get("Authorization") or ""
            if not hmac.compare_digest(got.encode(), ("Bearer " + srv.api_key).encode()):
                self._drain_body()
                return self._error(401, "unauthorized", "missing or wrong bearer token")
        if self.headers.get("X-Request-ID") and not srv.claim(rid):
            dup = rid
            rec["request_id"] = new_id()
            self._drain_body()
            return self._error(400, "invalid_request", "X-Request-ID %s was already used" % json.dumps(dup))
        if srv.draining.is_set():
            self._drain_body()
            return self._error(503, "server_draining", "server is shutting down")
        ctype = self.headers.get("Content-Type")
        if ctype and ctype.split(";")[0].strip().lower() != "application/json":
            self._drain_body()
            return self._error(400, "invalid_request", "Content-Type %s is not application/json" % json.dumps(ctype))
        if n > srv.max_body:
            self.close_connection = True
            return self._error(413, "request_too_large", "request body exceeds %d bytes" % srv.max_body)
        payload = self.rfile.read(n) if n else b""
        job = Job(rid, payload)
        why = srv.submit(job)
        if why == "full":
            return self._error(429, "queue_full", "the queue of %d requests is full" % srv.queue_size)
        if why == "draining":
            return self._error(503, "server_draining", "server is shutting down")
        while not job.done.wait(0.1):
            if srv.stopped.is_set():
                return self._error(503, "server_draining", "server stopped before the request finished")
        rec["queue_ms"], rec["task_ms"] = job.queue_ms, job.task_ms
        res = job.res if job.res is not None else getattr(job.err, "partial", None) or {}
        img = res.get("image") or {}
        rec["image_bytes"], rec["image_width"], rec["image_height"] = img.get("bytes", 0), img.get("width", 0), img.get("height", 0)
        rec["warmup_marker"] = bool(res.get("warmup", False))
        rec["prompt_tokens"] = res.get("prompt_tokens", 0)
        rec["completion_tokens"] = res.get("completion_tokens", 0)
        if res.get("model"):
            rec["model"] = res["model"]
        if isinstance(job.err, RequestError):
            return self._error(400, "invalid_request", str(job.err))
        if job.err is not None:
            srv.log("task_failed", level="error", request_id=rid, error=repr(job.err))
            return self._error(500, "internal_error", "task failed")
        r = job.res
        model = r.get("model") or srv.model_name
        return 200, {"id": "chatcmpl-" + rid, "object": "chat.completion", "created": int(time.time()), "model": model,
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": r["text"]}, "finish_reason": r["finish_reason"]}],
                     "usage": {"prompt_tokens": r["prompt_tokens"], "completion_tokens": r["completion_tokens"],
                               "total_tokens": r["prompt_tokens"] + r["completion_tokens"]}}

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PUT(self):
        self._handle("PUT")

    def do_DELETE(self):
        self._handle("DELETE")

    def do_HEAD(self):
        self._handle("HEAD")
