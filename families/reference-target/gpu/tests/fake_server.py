"""Runs the refgpu HTTP server over a stand-in model (no torch), for the
HTTP-layer tests: python3 fake_server.py RECORDS [--api-key K] [--queue-size N]
[--slow-ms MS] [--grace-ms MS]. The stand-in answers with the rule-based
answer, as the real model does with a sound bundle."""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from refgpu.server import Server  # noqa: E402
from refgpu.task import Task, answer_rules, truncate  # noqa: E402


class StandIn:
    def __init__(self, slow_ms):
        self.slow = slow_ms / 1000.0

    def answer(self, img, question, max_tokens):
        time.sleep(self.slow)
        shapes = [{"colour": "red", "shape": "square", "area": 400, "min_x": 10, "min_y": 10}]
        return truncate(answer_rules(question, img.width, img.height, shapes), max_tokens)


ap = argparse.ArgumentParser()
ap.add_argument("records")
ap.add_argument("--api-key", default="")
ap.add_argument("--queue-size", type=int, default=16)
ap.add_argument("--slow-ms", type=int, default=0)
ap.add_argument("--grace-ms", type=int, default=5000)
ap.add_argument("--host", default="127.0.0.1")
a = ap.parse_args()
try:
    srv = Server(Task(StandIn(a.slow_ms)), "fake", a.records, host=a.host, port=0, queue_size=a.queue_size,
                 grace_s=a.grace_ms / 1000.0, api_key=a.api_key)
except ValueError as e:
    print(e, file=sys.stderr)
    sys.exit(1)
sys.exit(srv.serve())
