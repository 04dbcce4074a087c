"""Starts the real refgpu server (run.py serve) and posts payloads to it."""
import http.client
import json
import os
import signal
import subprocess
import sys


def serve_and_ask(test, run_py, bundle_path, payloads, env=None):
    records = os.path.join(test.tmp, "records.jsonl")
    p = subprocess.Popen([sys.executable, run_py, "serve", bundle_path, "--model-name", "m", "--port", "0",
                          "--records", records], stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, **(env or {})))
    test.addCleanup(lambda: p.poll() is None and (p.kill(), p.wait()))
    ready = None
    for line in p.stderr:
        ev = json.loads(line)
        if ev["event"] == "server_ready":
            ready = ev
            break
    test.assertIsNotNone(ready, "server_ready; exit %s" % p.poll())
    answers = []
    for i, body in enumerate(payloads):
        c = http.client.HTTPConnection("127.0.0.1", ready["port"], timeout=120)
        c.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json", "X-Request-ID": "r%d" % i})
        r = c.getresponse()
        data = json.loads(r.read())
        c.close()
        test.assertEqual(r.status, 200, data)
        answers.append(data["choices"][0]["message"]["content"])
    p.send_signal(signal.SIGTERM)
    for _ in p.stderr:
        pass
    test.assertEqual(p.wait(timeout=60), 0)
    return answers
