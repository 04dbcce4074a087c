"""The native runner: the Task over exact payloads, without HTTP
(trtmc-refserver's `native` contract, docs/refserver.md)."""
import json
import os
import tempfile
import time

from . import ROUTE
from .task import RequestError


class InputError(Exception):
    pass


def read_requests(path):
    reqs, seen = [], set()
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as e:
                raise InputError("%s:%d: not a JSON request line: %s" % (path, n, e))
            if not isinstance(obj, dict) or not isinstance(obj.get("request_id"), str) or not obj["request_id"]:
                raise InputError("%s:%d: request_id is missing" % (path, n))
            if obj.get("route") != ROUTE:
                raise InputError("%s:%d: route %r is not served by this family (want %s)" % (path, n, obj.get("route"), ROUTE))
            if obj["request_id"] in seen:
                raise InputError("%s:%d: request_id %s is repeated" % (path, n, obj["request_id"]))
            seen.add(obj["request_id"])
            p = obj.get("payload")
            if isinstance(p, str):
                payload = p.encode()
            elif isinstance(p, dict):
                payload = json.dumps(p, ensure_ascii=False).encode()
            else:
                raise InputError("%s:%d: payload must be a JSON object or a string holding one" % (path, n))
            reqs.append((obj["request_id"], payload))
    return reqs


def run(task, requests_path, out_path):
    lines = []
    for rid, payload in read_requests(requests_path):
        start = time.monotonic()
        try:
            res = task.answer(payload)
            line = {"request_id": rid, "answer": res["text"], "task_ms": round((time.monotonic() - start) * 1e3, 3)}
        except RequestError as e:
            line = {"request_id": rid, "error": str(e), "task_ms": 0}
        lines.append(json.dumps(line, ensure_ascii=False))
    d = os.path.dirname(os.path.abspath(out_path))
    fd, tmp = tempfile.mkstemp(prefix=".native-", dir=d)
    with os.fdopen(fd, "w") as f:
        f.write("".join(l + "\n" for l in lines))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, out_path)
    return len(lines)
