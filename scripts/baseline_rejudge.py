#!/usr/bin/env python3
"""The re-derivation a user would write without trtmc-qual: the baseline of
`make bench` (docs/performance.md) for `trtmc-qual report --rejudge`.

Over one checkpoint's evidence directory it does what the rejudge does:
checks the seal (manifest.json: the blake3-tree-1mib digest of every file
with the `blake3` package, or sha256-tree-1mib with hashlib for earlier
seals, and the manifest's own seal), reads dataset.jsonl, AIPerf's records and raw
exports, the server's records and the native answers with json.loads per
line, keeps dicts keyed by request id, and accounts for every request id of
every source with the join's order of precedence and the reference
families' answer semantics (openai-chat-text + exact, nim-bounding-boxes +
boxes-tolerance with tolerance 0). Prints the counts as JSON.

    baseline_rejudge.py [--family ref-detect] CHECKPOINT_DIR
"""
import argparse
import hashlib
import json
import re
import math
import os
import sys
from collections import defaultdict

LABELS = ["red_square", "green_square", "blue_square", "yellow_square",
          "red_disc", "green_disc", "blue_disc", "yellow_disc"]
BOX_KEYS = {"x_min", "y_min", "x_max", "y_max", "confidence"}
STATUSES = ["matched", "mismatched", "errored", "missing_native", "missing_http",
            "missing_server_record", "duplicates", "meaningless", "unknown_conversation", "inconsistent",
            "echo_missing", "echo_mismatched", "echo_proven"]
BLOCK = 1 << 20


class Bad(Exception):
    """An answer that cannot be extracted."""


def echo_of(rid, trace):
    """The X-Request-ID echo of a record's HTTP trace (AIPerf 0.13.0
    --export-http-trace): "match", "missing" (no trace, or no echo) or
    "mismatched" (another id sent or echoed)."""
    if trace is None:
        return "missing"
    def values(headers):
        return [v for k, v in (headers or {}).items() if k.lower() == "x-request-id"]
    if any(v != rid for v in values(trace.get("request_headers"))):
        return "mismatched"
    echoed = values(trace.get("response_headers"))
    if not echoed:
        return "missing"
    return "match" if all(v == rid for v in echoed) else "mismatched"


def lines(path):
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def parse_items(data):
    if not isinstance(data, list):
        raise Bad("data is not a list")
    for it in data:
        if not isinstance(it, dict) or not set(it) <= {"index", "bounding_boxes"}:
            raise Bad("item is not {index, bounding_boxes}")
        boxes = it.get("bounding_boxes") or {}
        if not isinstance(boxes, dict):
            raise Bad("bounding_boxes is not an object")
        for bs in boxes.values():
            for b in bs or []:
                if not isinstance(b, dict) or not set(b) <= BOX_KEYS or not all(number(v) for v in b.values()):
                    raise Bad("bad box")
    return data


def n_boxes(items):
    return sum(len(bs or []) for it in items for bs in (it.get("bounding_boxes") or {}).values())


def boxes_http(body):
    try:
        obj = json.loads(body)
    except (ValueError, TypeError):
        raise Bad("response is not JSON")
    data = obj.get("data") if isinstance(obj, dict) else None
    if data is None:
        raise Bad("response has no data")
    return parse_items(data)


def boxes_meaningless(items):
    if len(items) != 1:
        return "items"
    if n_boxes(items) == 0:
        return "no boxes"
    for label, bs in (items[0].get("bounding_boxes") or {}).items():
        if label not in LABELS:
            return "label"
        for b in bs or []:
            x0, y0, x1, y1 = (b.get(k, 0) for k in ("x_min", "y_min", "x_max", "y_max"))
            c = b.get("confidence", 0)
            if any(v < 0 or v > 1 or math.isnan(v) for v in (x0, y0, x1, y1)):
                return "coordinate"
            if x0 >= x1 or y0 >= y1:
                return "empty box"
            if c < 0 or c > 1 or math.isnan(c):
                return "confidence"
    return ""


def boxes_equal(a, b):
    if len(a) != len(b):
        return False
    norm = lambda it: {k: [{f: float(v) for f, v in x.items()} for x in (bs or [])]
                       for k, bs in (it.get("bounding_boxes") or {}).items() if bs}
    return all(norm(x) == norm(y) for x, y in zip(a, b))


def chat_http(body):
    try:
        obj = json.loads(body)
    except (ValueError, TypeError):
        raise Bad("response is not JSON")
    if not isinstance(obj, dict) or obj.get("object") != "chat.completion":
        raise Bad("not a chat.completion")
    choices = obj.get("choices") or []
    if len(choices) != 1:
        raise Bad("choices")
    msg = choices[0].get("message") or {}
    if msg.get("content") is None:
        raise Bad("no content")
    if not choices[0].get("finish_reason"):
        raise Bad("incomplete")
    usage = obj.get("usage") or {}
    return msg["content"], usage.get("completion_tokens") or 0


def chat_native(answer):
    """(text, tokens): a JSON string (no count) or {"text", "completion_tokens"}."""
    if isinstance(answer, str):
        return answer, 0
    if isinstance(answer, dict) and isinstance(answer.get("text"), str):
        return answer["text"], answer.get("completion_tokens") or 0
    raise Bad("native answer is neither a string nor {text, completion_tokens}")


def chat_meaningless(ans):
    text, tokens = ans
    if not text.strip():
        return "empty"
    if "\ufffd" in text:
        return "invalid UTF-8"
    if not tokens:
        return "no usage.completion_tokens"
    return ""


def chat_equal(http, nat):
    """The same text, and the same token count where both counted."""
    return http[0] == nat[0] and (not http[1] or not nat[1] or http[1] == nat[1])


def body_of(raw):
    out = []
    for r in raw.get("responses") or []:
        if not r:
            continue
        if r.get("text") is not None:
            out.append(r["text"])
            continue
        packets = r.get("packets") or []
        for p in packets:
            p = p or {}
            out.append("%s: %s\n" % (p.get("name") or "", p.get("value") or ""))
        if packets:
            out.append("\n")
    return "".join(out)


def hasher(algo):
    """The hash of a manifest's digest algorithm: <hash>-tree-1mib is <hash>
    over the <hash> of each 1 MiB block."""
    if algo == "sha256-tree-1mib":
        return hashlib.sha256
    if algo == "blake3-tree-1mib":
        try:
            import blake3
        except ImportError:
            sys.exit("baseline_rejudge.py: the seal is blake3-tree-1mib: pip install blake3 (make bench does, in its own venv)")
        return blake3.blake3
    sys.exit("baseline_rejudge.py: unknown digest algorithm %r" % algo)


def digest(path, h=hashlib.sha256):
    """<h>-tree-1mib: h over the h of each 1 MiB block."""
    top = h()
    with open(path, "rb") as f:
        first = True
        while True:
            b = f.read(BLOCK)
            if not b and not first:
                break
            top.update(h(b).digest())
            first = False
            if len(b) < BLOCK:
                break
    return top.hexdigest()


def seal_findings(d):
    """What differs from the seal the run wrote, as "file: what" strings."""
    try:
        data = open(os.path.join(d, "manifest.json"), "rb").read()
    except OSError:
        return ["manifest.json: missing"]
    m = list(re.finditer(rb'"seal": "([0-9a-f]{64})"', data))
    if len(m) != 1:
        return ["manifest.json: unsealed"]
    zeroed = data[:m[0].start(1)] + b"0" * 64 + data[m[0].end(1):]
    if hashlib.sha256(zeroed).hexdigest() != m[0].group(1).decode():
        return ["manifest.json: changed"]
    manifest = json.loads(data)
    files, h = manifest["files"], hasher(manifest.get("digest_algorithm"))
    out = []
    have = set()
    for root, _, names in os.walk(d):
        for n in names:
            rel = os.path.relpath(os.path.join(root, n), d).replace(os.sep, "/")
            if rel in ("manifest.json", "result.rejudged.json"):
                continue
            have.add(rel)
            if rel not in files:
                out.append(rel + ": added")
            elif digest(os.path.join(root, n), h) != files[rel]:
                out.append(rel + ": changed")
    out += [rel + ": missing" for rel in files if rel not in have]
    return sorted(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--family", default="ref-detect", choices=["ref-detect", "ref-vlm"])
    args = ap.parse_args()
    d = args.dir
    detect = args.family == "ref-detect"
    findings = seal_findings(d)
    result = json.load(open(os.path.join(d, "result.json")))
    expected = {"warmup": result["workload"]["warmup"], "measured": result["workload"]["measured"]}

    sessions = {}
    for s in lines(os.path.join(d, "dataset.jsonl")):
        sid = s["session_id"]
        if sid in sessions:
            sys.exit("dataset.jsonl: duplicate session_id " + sid)
        sessions[sid] = False  # used?

    natives = defaultdict(list)
    for n in lines(os.path.join(d, "native_answers.jsonl")):
        natives[n["request_id"]].append(n)

    records = defaultdict(list)
    for r in lines(os.path.join(d, "server_records.jsonl")):
        records[r["request_id"]].append(r)

    requests = {}
    dup_phases = []
    copies = defaultdict(int)
    for r in lines(os.path.join(d, "aiperf", "profile_export.jsonl")):
        m = r["metadata"]
        rid = m["x_request_id"]
        copies[rid] += 1
        phase = "warmup" if m["benchmark_phase"] == "warmup" else "measured"
        if copies[rid] > 1:
            dup_phases.append(phase)
            continue
        err = r.get("error")
        status = 0
        if err is not None and isinstance(err.get("code"), int) and 100 <= err["code"] <= 599:
            status = err["code"]
        conv = m["conversation_id"]
        conv_dup = False
        if conv in sessions:
            conv_dup = sessions[conv]
            sessions[conv] = True
        requests[rid] = {"conv": conv, "phase": phase, "conv_dup": conv_dup,
                         "failed": err is not None or bool(m.get("was_cancelled")), "status": status,
                         "echo": echo_of(rid, r.get("trace_data"))}

    raw = {}
    raws = defaultdict(int)
    unclaimed_raw = 0
    for r in lines(os.path.join(d, "aiperf", "profile_export_raw.jsonl")):
        m = r["metadata"]
        rid = m["x_request_id"]
        if rid not in requests:
            unclaimed_raw += 1
            continue
        raws[rid] += 1
        if rid not in raw:
            phase = "warmup" if m["benchmark_phase"] == "warmup" else "measured"
            raw[rid] = (r.get("status"), body_of(r), phase, m["conversation_id"])

    counts = {p: dict({"expected": expected[p], "sent": 0}, **{s: 0 for s in STATUSES}) for p in ("warmup", "measured")}
    boxes = 0
    tokens = 0
    for rid, q in requests.items():
        c = counts[q["phase"]]
        c["sent"] += 1
        if q["echo"] == "match":
            c["echo_proven"] += 1  # counted whatever the request's status, as the join does
        recs, nats = records.get(rid, []), natives.get(rid, [])
        if copies[rid] > 1 or raws[rid] > 1 or len(recs) > 1 or len(nats) > 1 or q["conv_dup"]:
            c["duplicates"] += 1
            continue
        if q["conv"] not in sessions:
            c["unknown_conversation"] += 1
            continue
        status, body = q["status"], None
        if rid in raw:
            st, body, rphase, rconv = raw[rid]
            if rphase != q["phase"] or rconv != q["conv"]:
                c["inconsistent"] += 1
                continue
            if st is not None:
                status = st
        if q["failed"]:
            c["errored"] += 1
            continue
        if body is None:
            c["missing_http"] += 1
            continue
        if not 200 <= status <= 299:
            c["errored"] += 1
            continue
        if q["echo"] != "match":
            c["echo_" + q["echo"]] += 1
            continue
        try:
            ans = boxes_http(body) if detect else chat_http(body)
        except Bad:
            c["missing_http"] += 1
            continue
        if (boxes_meaningless(ans) if detect else chat_meaningless(ans)):
            c["meaningless"] += 1
            continue
        # The HTTP answer's count is the output size; the server's record,
        # when it counted, must agree.
        srv_tokens = (recs[0].get("completion_tokens") or 0) if recs else 0
        if not detect and srv_tokens and srv_tokens != ans[1]:
            c["inconsistent"] += 1
            continue
        if not recs:
            c["missing_server_record"] += 1
            continue
        if not nats or nats[0].get("error"):
            c["missing_native"] += 1
            continue
        try:
            nat = parse_items(nats[0].get("answer")) if detect else chat_native(nats[0].get("answer"))
        except Bad:
            c["missing_native"] += 1
            continue
        if not (boxes_equal(ans, nat) if detect else chat_equal(ans, nat)):
            c["mismatched"] += 1
            continue
        c["matched"] += 1
        if q["phase"] == "measured":
            if detect:
                boxes += n_boxes(ans)
            else:
                tokens += ans[1]
    for p in dup_phases:
        counts[p]["sent"] += 1
        counts[p]["duplicates"] += 1
    unclaimed = {"server_records": sum(1 for rid in records if rid not in requests),
                 "native_answers": sum(1 for rid in natives if rid not in requests),
                 "raw_records": unclaimed_raw}
    json.dump({"by_phase": counts, "boxes": boxes, "output_tokens": tokens, "unclaimed": unclaimed,
               "seal_findings": findings}, sys.stdout, indent=2, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
