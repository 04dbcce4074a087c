"""The HTTP layer of the GPU family, over a stand-in model (no torch): a
real process, real sockets, real signals. Every wait is on an event (a log
line, a response, the process's exit), never a sleep."""
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import unittest

from helpers import HERE, TempDir, chat


class Proc:
    def __init__(self, tmp, *args, env=None):
        self.records = os.path.join(tmp, "records.jsonl")
        self.p = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_server.py"), self.records, *args],
                                  stderr=subprocess.PIPE, text=True, env=env)
        self.events = []
        self.ready = None
        for line in self.p.stderr:
            ev = json.loads(line)
            self.events.append(ev)
            if ev["event"] == "server_ready":
                self.ready = ev
                break
        if self.ready is None:
            raise AssertionError("no server_ready line; exit %s" % self.p.wait())
        self.port = self.ready["port"]
        self.rest = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.p.stderr:
            self.rest.append(json.loads(line))

    def req(self, method, path, body=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, dict(r.getheaders()), data

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        rc = self.p.wait(timeout=30)
        self.reader.join(timeout=30)
        return rc

    def recs(self):
        with open(self.records) as f:
            return [json.loads(l) for l in f if l.strip()]


class ServerTest(TempDir):
    def start(self, *args):
        s = Proc(self.tmp, *args)
        self.addCleanup(lambda: s.p.poll() is None and (s.p.kill(), s.p.wait()))
        return s

    def test_routes_and_records(self):
        s = self.start()
        self.assertEqual(s.ready["pid"], s.p.pid)
        st, h, body = s.req("GET", "/health/ready")
        self.assertEqual((st, json.loads(body)), (200, {"status": "ready"}))
        self.assertRegex(h["X-Request-ID"], r"^req-[0-9a-f]{32}$")
        st, _, body = s.req("GET", "/v1/models")
        self.assertEqual(json.loads(body)["data"][0]["id"], "fake")
        st, _, _ = s.req("GET", "/nowhere")
        self.assertEqual(st, 404)
        st, h, _ = s.req("GET", "/v1/chat/completions")
        self.assertEqual((st, h.get("Allow")), (405, "POST"))
        st, h, body = s.req("POST", "/v1/chat/completions", chat("Describe the image.", max_tokens=2), {"X-Request-ID": "r-1"})
        self.assertEqual(st, 200, body)
        ans = json.loads(body)
        self.assertEqual(h["X-Request-ID"], "r-1")
        self.assertEqual(ans["id"], "chatcmpl-r-1")
        self.assertEqual(ans["choices"][0]["message"]["content"], "1 shape:")
        self.assertEqual(ans["choices"][0]["finish_reason"], "length")
        # the same id again, an invalid one, an unknown field
        st, h, body = s.req("POST", "/v1/chat/completions", chat(), {"X-Request-ID": "r-1"})
        self.assertEqual(st, 400)
        self.assertIn("already used", json.loads(body)["error"]["message"])
        self.assertNotEqual(h["X-Request-ID"], "r-1", "a fresh id keeps records unique")
        st, _, body = s.req("POST", "/v1/chat/completions", chat(), {"X-Request-ID": "-bad id"})
        self.assertEqual(st, 400)
        st, _, body = s.req("POST", "/v1/chat/completions", chat(top_p=1))
        self.assertEqual((st, json.loads(body)["error"]["type"]), (400, "invalid_request"))
        st, _, body = s.req("GET", "/metrics")
        self.assertIn(b"trtmc_refgpu_requests_total", body)
        self.assertEqual(s.stop(), 0)
        recs = s.recs()
        self.assertEqual([r["status"] for r in recs], [200, 400, 400, 400])
        self.assertEqual(recs[0]["request_id"], "r-1")
        self.assertEqual(recs[0]["image_width"], 96)
        self.assertEqual(recs[0]["completion_tokens"], 2)
        self.assertEqual(len({r["request_id"] for r in recs}), 4, "record ids are unique")
        with open(s.records) as f:
            self.assertNotIn("Describe", f.read(), "no prompt text in records")
        names = [e["event"] for e in s.rest]
        self.assertIn("shutdown_complete", names)
        self.assertTrue([e for e in s.rest if e["event"] == "shutdown_complete"][0]["drained"])

    def test_api_key(self):
        s = self.start("--api-key", "sekrit")
        st, _, _ = s.req("POST", "/v1/chat/completions", chat())
        self.assertEqual(st, 401)
        st, _, _ = s.req("POST", "/v1/chat/completions", chat(), {"Authorization": "Bearer sekrit"})
        self.assertEqual(st, 200)
        st, _, _ = s.req("GET", "/health/ready")
        self.assertEqual(st, 200, "health stays open")
        s.stop()
        self.assertNotIn("sekrit", json.dumps(s.events + s.rest), "the key is never logged")

    def test_queue_full_and_drain(self):
        s = self.start("--queue-size", "1", "--slow-ms", "1500")
        results = {}

        def post(i):
            results[i] = s.req("POST", "/v1/chat/completions", chat(), {"X-Request-ID": "q-%d" % i})[0]

        threads = [threading.Thread(target=post, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(sorted(results.values()).count(429), 2, results)  # one runs, one waits, two are refused
        # drain: SIGTERM while a request runs; it still finishes, later ones get 503
        done = {}
        t = threading.Thread(target=lambda: done.setdefault("st", s.req("POST", "/v1/chat/completions", chat())[0]))
        t.start()
        while b"trtmc_refgpu_worker_busy 1" not in s.req("GET", "/metrics")[2]:
            pass  # until the worker has taken the request
        s.p.send_signal(signal.SIGTERM)
        t.join()
        self.assertEqual(done["st"], 200, "work in flight finishes during the drain")
        self.assertEqual(s.p.wait(timeout=30), 0, "a drained server exits 0")

    def test_refuses_non_loopback(self):
        r = subprocess.run([sys.executable, os.path.join(HERE, "fake_server.py"), os.path.join(self.tmp, "r"), "--host", "0.0.0.0"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not a loopback address", r.stderr)


if __name__ == "__main__":
    unittest.main()
