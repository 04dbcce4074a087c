#!/usr/bin/env python3
"""Writes the hand-made evidence trees under reports/testdata/evidence/.

The trees follow the layout `trtmc-qual run` writes (docs/reports.md):
OUT/<group>/<profile>/{result.json,joined.jsonl,aiperf/argv.json} and
OUT/<group>/inventory.json. Deterministic: re-running gives the same bytes.
Run from the repository root:  python3 reports/testdata/gen_evidence.py
It writes the facts of each row (problems, counts, correctness, stages...);
then `go test ./reports -run TestFixturesAreJudged -update` lets Judge write
each row's verdict and reasons, records in each row the inventory entry and
snapshot it was run for (their digests, computed by the Go code that the
loader checks them with), and seals every evidence directory
(manifest.json); then `go test ./reports -update` and review the golden diff.
"""
import copy
import json
import os
import random
import shutil

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "evidence")

VLM_GATES = [{"name": "answer_exact_match", "value": 0.958, "op": ">=", "threshold": 0.9, "passed": True}]
DET_GATES = [
    {"name": "map_50_95", "value": 0.912, "op": ">=", "threshold": 0.5, "passed": True},
    {"name": "map_50", "value": 0.981, "op": ">=", "threshold": 0.75, "passed": True},
]


def sha(seed):
    r = random.Random(seed)
    return "".join(r.choice("0123456789abcdef") for _ in range(64))


def commit(seed):
    return sha(seed)[:40]


def profile(pid, family, kind="normal", status="planned", precision="fp32", variant_of="", tp=1, exclusion=None, group="vlm"):
    task = "vision_language_generation" if family == "ref-vlm" else "object_detection"
    p = {
        "id": pid, "checkpoint": "trtmc-ref/" + pid.replace("-l0", "").replace("-fp16", "").replace("-tp2", ""),
        "revision": commit(pid + "rev")[:12], "family": family, "task": task, "kind": kind,
        "precision": precision, "parallelism": {"tp": tp},
        "bundle": {"path": "bundles/%s.bundle" % pid, "sha256": sha(pid + "bundle")},
        "controls": ["max_tokens", "temperature"] if family == "ref-vlm" else ["score_threshold"],
        "gaps": [], "hardware": ["cpu-reference"], "status": status, "group": group,
    }
    if variant_of:
        p["variant_of"] = variant_of
    if exclusion:
        p["exclusion"] = {"reason": exclusion, "owner": "qual-team"}
    return p


def percentile(vals, q):
    s = sorted(vals)
    if not s:
        return None
    pos = (len(s) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return round(s[lo] + (s[hi] - s[lo]) * (pos - lo), 3)


def requests(pid, n_warm, n_meas, base_task, overhead, seed, statuses=None, sent_meas=None, t0=1796000000000000000):
    """Joined lines: statuses maps measured index -> (status, diff/problem)."""
    rng = random.Random(seed)
    statuses = statuses or {}
    sent_meas = n_meas if sent_meas is None else sent_meas
    lines = []
    t = t0
    for i in range(n_warm + sent_meas):
        phase = "warmup" if i < n_warm else "measured"
        mi = i - n_warm
        task = base_task * (1.6 if i == 0 else 1.0) + rng.uniform(-0.6, 0.9)
        if phase == "measured" and rng.random() < 0.06:
            task += rng.uniform(2.0, 5.0)
        http = task + overhead + rng.uniform(0.0, 1.2)
        line = {"request_id": "req-%s-%04d" % (pid, i + 1), "entry_id": "img-%04d" % (i % 24), "phase": phase,
                "http_ms": round(http, 3), "task_ms": round(task, 3), "status": "matched", "start_ns": t, "echo": "match"}
        # The HTTP split at AIPerf's trace: client + sending + waiting + receiving = http.
        client, sending, receiving = 0.035, round(rng.uniform(0.08, 0.3), 3), round(rng.uniform(0.01, 0.05), 3)
        line.update({"sending_ms": sending, "waiting_ms": round(http - client - sending - receiving, 3),
                     "receiving_ms": receiving, "client_ms": client})
        if phase == "measured" and mi in statuses:
            st, text = statuses[mi]
            line["status"] = st
            if st == "mismatched":
                line["diff"] = text
            else:
                line["problem"] = text
            if st in ("missing_server_record", "missing_native"):
                line["task_ms"] = None
            if st == "errored":
                line["http_ms"] = None
                line["task_ms"] = None
                for k in ("sending_ms", "waiting_ms", "receiving_ms", "client_ms"):
                    del line[k]
            if st == "echo_missing":
                line["echo"] = "missing"
            if st == "echo_mismatched":
                line["echo"] = "differs"
        lines.append(line)
        t += int((http + 2.0 + rng.uniform(0, 1.0)) * 1e6)
    return lines


def counts(lines, expected_w, expected_m):
    out = {}
    for phase, exp in (("warmup", expected_w), ("measured", expected_m)):
        c = {"expected": exp, "sent": 0, "matched": 0, "mismatched": 0, "errored": 0, "missing_native": 0,
             "missing_http": 0, "missing_server_record": 0, "duplicates": 0, "meaningless": 0,
             "unknown_conversation": 0, "inconsistent": 0, "echo_missing": 0, "echo_mismatched": 0, "echo_proven": 0}
        for l in lines:
            if l["phase"] != phase:
                continue
            c["sent"] += 1
            key = {"matched": "matched", "mismatched": "mismatched", "errored": "errored",
                   "missing_native": "missing_native", "missing_http": "missing_http",
                   "missing_server_record": "missing_server_record", "duplicate": "duplicates",
                   "meaningless": "meaningless", "echo_missing": "echo_missing",
                   "echo_mismatched": "echo_mismatched"}[l["status"]]
            c[key] += 1
            if l.get("echo") == "match":
                c["echo_proven"] += 1
        out[phase] = c
    total = {k: out["warmup"][k] + out["measured"][k] for k in out["warmup"]}
    return total, out


def result(p, group, verdict, lines, started, ended, root_out, expected=(5, 50), correctness="pass", problems=None,
           run_key_seed="", aiperf_in_provenance=True, output_tokens=True, source_commit=True, stages=None, exclusion=""):
    pid = p["id"]
    total, by = counts(lines, *expected)
    meas = [l for l in lines if l["phase"] == "measured"]
    # One set for both series: the measured requests that matched.
    http = [l["http_ms"] for l in meas if l["status"] == "matched"]
    task = [l["task_ms"] for l in meas if l["status"] == "matched"]
    matched = [l for l in meas if l["status"] == "matched"]
    span_ms = 0
    if len(meas) > 1:
        span_ms = (meas[-1]["start_ns"] - meas[0]["start_ns"]) / 1e6 + (meas[-1]["http_ms"] or 0)
    ips = round(len(http) / (span_ms / 1000), 3) if span_ms else None
    evdir = "%s/%s/%s" % (root_out, group, pid)
    if p["family"] == "ref-vlm":
        gates = copy.deepcopy(VLM_GATES)
        metrics = {"answer_exact_match": gates[0]["value"]}
    else:
        gates = copy.deepcopy(DET_GATES)
        metrics = {g["name"]: g["value"] for g in gates}
    corr = {"ran": True, "passed": True, "metrics": metrics, "gates": gates, "output": "correctness.json"}
    if correctness == "fail":
        corr["gates"][0]["value"] = 0.625
        corr["gates"][0]["passed"] = False
        corr["metrics"][corr["gates"][0]["name"]] = 0.625
        corr["passed"] = False
    elif correctness == "not-run":
        corr = {"ran": False, "passed": False}
    argv = aiperf_argv(p, group, root_out, expected)
    commands = [
        {"stage": "correctness", "argv": ["bin/trtmc-refserver", "check", "--bundle", p["bundle"]["path"], "--corpus",
                                          "out/corpus/" + p["family"], "--out", evdir + "/correctness.json"], "exit_code": 0},
        {"stage": "server", "argv": ["bin/trtmc-refserver", "serve", p["bundle"]["path"], "--model-name", pid, "--host",
                                     "127.0.0.1", "--port", "41234", "--records", evdir + "/server-records.jsonl"], "exit_code": 0},
    ]
    if aiperf_in_provenance:
        commands.append({"stage": "aiperf", "argv": argv, "exit_code": 0})
    r = {
        "schema": "trtmc-qual/result/v2", "group": group, "profile": pid, "checkpoint": p["checkpoint"],
        "revision": p["revision"], "family": p["family"], "task": p["task"], "kind": p["kind"],
        "precision": p["precision"], "parallelism": "tp%d" % p["parallelism"]["tp"],
        "endpoint_type": "chat" if p["family"] == "ref-vlm" else "image_retrieval",
        "route": "/v1/chat/completions" if p["family"] == "ref-vlm" else "/v1/infer",
        "verdict": verdict, "reasons": [], "problems": problems or [],
        "workload": {"warmup": expected[0], "measured": expected[1], "concurrency": 1, "purpose": ""},
        "answers": ({"endpoint_type": "chat", "extractor": "openai-chat-text", "comparator": "exact", "tolerance": 0}
                    if p["family"] == "ref-vlm" else
                    {"endpoint_type": "image_retrieval", "extractor": "nim-bounding-boxes", "comparator": "boxes-tolerance",
                     "tolerance": 0}),
        "requests": total, "requests_by_phase": by,
        "unclaimed": {"server_records": 0, "native_answers": 0, "raw_records": 0},
        "latency_ms": {"set": "measured_matched", "http": {"p50": percentile(http, 0.5), "p95": percentile(http, 0.95), "count": len(http)},
                       "task": {"p50": percentile(task, 0.5), "p95": percentile(task, 0.95), "count": len(task)},
                       "http_split": http_split(matched)},
        "images_per_sec": ips,
        "image_sizes": [{"width": 96, "height": 64, "count": 28}, {"width": 128, "height": 96, "count": 27}] if lines else None,
        "correctness": corr,
        "stages": stages or [
            {"name": "prepare", "status": "ok", "duration_ms": 412.5, "child_ms": 398.1},
            {"name": "correctness", "status": "ok", "duration_ms": 2210.4, "child_ms": 2190.0},
            {"name": "start-server", "status": "ok", "duration_ms": 640.2, "child_ms": 0},
            {"name": "aiperf", "status": "ok", "duration_ms": 9120.7, "child_ms": 9050.3},
            {"name": "native", "status": "ok", "duration_ms": 1830.9, "child_ms": 1801.2},
            {"name": "join", "status": "ok", "duration_ms": 12.4, "child_ms": 0},
        ],
        "provenance": {
            "harness_version": "0.1.0", "harness_commit": commit("harness"), "aiperf_version": "0.13.0",
            "aiperf_version_required": "0.13.0", "bundle_pinned_sha256": p["bundle"]["sha256"],
            "pip_freeze_sha256": sha("freeze"), "server_binary": "bin/trtmc-refserver",
            "server_binary_sha256": sha("server"), "bundle_path": p["bundle"]["path"],
            "bundle_sha256": p["bundle"]["sha256"], "inventory_entry_sha256": sha(pid + "inv"),
            "dataset_sha256": sha(p["family"] + "corpus"), "host": "qual-host-1",
            "commands": commands,
            "checkouts": [{"name": "HARNESS", "path": "/src/trtmc-qual", "commit": commit("harness"), "dirty": False,
                           "changed_files": 0, "untracked_files": 0},
                          {"name": "TRTMC_REPO", "path": "/src/trtmc", "commit": commit("trtmc"), "dirty": False,
                           "changed_files": 0, "untracked_files": 0}],
            "aiperf_dist": {"name": "aiperf", "version": "0.13.0", "dist_info": "/venv/lib/python3.11/site-packages/aiperf-0.13.0.dist-info",
                            "metadata_sha256": sha("aiperf-metadata"), "record_sha256": sha("aiperf-record")},
            "bundle_checks": [{"after": "correctness", "sha256": p["bundle"]["sha256"]}, {"after": "run", "sha256": p["bundle"]["sha256"]}],
        },
        "command": "trtmc-qual run --group %s --profile %s --out %s" % (group, pid, root_out),
        "run_key": sha(pid + run_key_seed + "runkey"),
        "started_at": started, "ended_at": ended,
    }
    if r["image_sizes"] is None:
        del r["image_sizes"]
    if source_commit:
        r["provenance"]["source_commit"] = commit(p["family"] + "source")
    if output_tokens and meas:
        if p["family"] == "ref-vlm":
            r["output_tokens"] = 7 * len(meas) + len(meas) // 3
        else:
            r["boxes"] = 9 * len(meas) + 13
    if exclusion:
        r["exclusion"] = exclusion
    return r, argv


def mean(vals):
    return round(sum(vals) / len(vals), 3) if vals else None


def http_split(matched):
    """The row's HTTP split over the measured matched requests."""
    out = {"count": len(matched), "http_mean": None, "task_mean": None}
    parts = {"client": "client_ms", "sending": "sending_ms", "waiting": "waiting_ms", "receiving": "receiving_ms"}
    for name, key in parts.items():
        vals = [l[key] for l in matched]
        out[name] = {"mean": mean(vals), "p50": percentile(vals, 0.5), "p95": percentile(vals, 0.95)}
    outside = [round(l["waiting_ms"] - l["task_ms"], 3) for l in matched]
    out["outside_task"] = {"mean": mean(outside), "p50": percentile(outside, 0.5), "p95": percentile(outside, 0.95)}
    if matched:
        out["http_mean"] = mean([l["http_ms"] for l in matched])
        out["task_mean"] = mean([l["task_ms"] for l in matched])
    return out


def with_gpus(r, n, start_index=0):
    """Gives a result the GPU provenance and hygiene checks of n H200s."""
    gpus, states = [], []
    for i in range(start_index, start_index + n):
        uuid = "GPU-%s-%s" % (sha("gpu%d" % i)[:8], sha("gpu%d" % i)[8:20])
        gpus.append({"index": str(i), "name": "NVIDIA H200", "uuid": uuid, "driver": "580.159.04", "cuda_version": "13.0",
                     "memory_total_mib": 143771, "memory_used_mib": 0, "utilization_pct": 0, "clock_sm_mhz": 345,
                     "clock_max_sm_mhz": 1980, "power_limit_w": 700.0, "mig_mode": "Disabled", "compute_cap": "9.0",
                     "pci_bus_id": "00000000:%02X:00.0" % (0x18 + i), "compute_mode": "Default", "scope": "h200"})
        states.append(uuid)
    r["provenance"]["gpus"] = gpus
    r["provenance"]["hardware_scope"] = "h200"
    t = r["started_at"]
    r["gpu_checks"] = [
        {"name": "idle_before_timing", "stage": "preflight", "at": t, "passed": True,
         "gpus": [{"uuid": u, "utilization_pct": 0, "memory_used_mib": 0, "processes": []} for u in states]},
        {"name": "in_use_while_serving", "stage": "aiperf", "at": t, "passed": True,
         "gpus": [{"uuid": u, "utilization_pct": 0, "memory_used_mib": 1290,
                   "processes": [{"pid": 4100, "name": "python3", "used_mib": 1282, "ours": True}]} for u in states]},
        {"name": "released_after_stop", "stage": "gpu-release", "at": r["ended_at"], "passed": True,
         "gpus": [{"uuid": u, "utilization_pct": 0, "memory_used_mib": 0, "processes": []} for u in states]},
    ]
    return r


def aiperf_argv(p, group, root_out, expected):
    evdir = "%s/%s/%s" % (root_out, group, p["id"])
    argv = ["aiperf", "profile", "--model", p["id"], "--url", "http://127.0.0.1:41234",
            "--endpoint-type", "chat" if p["family"] == "ref-vlm" else "image_retrieval",
            "--input-file", evdir + "/aiperf/dataset.jsonl", "--custom-dataset-type", "single_turn",
            "--dataset-sampling-strategy", "sequential", "--concurrency", "1",
            "--request-count", str(expected[1]), "--warmup-request-count", str(expected[0]), "--random-seed", "1",
            "--request-timeout-seconds", "30", "--export-level", "raw", "--artifact-dir", evdir + "/aiperf",
            "--header", "Authorization:Bearer [REDACTED]"]
    if p["family"] == "ref-vlm":
        argv[argv.index("--random-seed"):argv.index("--random-seed")] = [
            "--extra-inputs", '{"max_tokens": 32, "temperature": 0}', "--tokenizer", ".venv/tokenizer"]
    return argv


def write(root, group, p, r, lines, argv, argv_file=True):
    d = os.path.join(ROOT, root, group, p)
    os.makedirs(os.path.join(d, "aiperf"), exist_ok=True)
    with open(os.path.join(d, "result.json"), "w") as f:
        json.dump(r, f, indent=2, ensure_ascii=False)
        f.write("\n")
    if lines is not None:
        with open(os.path.join(d, "joined.jsonl"), "w") as f:
            for l in lines:
                f.write(json.dumps(l, ensure_ascii=False, separators=(",", ":")) + "\n")
        # mismatches.jsonl as the join writes it: both canonical answers (a
        # chat answer is its text as a JSON string) and the diff.
        mism = [l for l in lines if l["status"] == "mismatched"]
        if mism:
            with open(os.path.join(d, "mismatches.jsonl"), "w") as f:
                for l in mism:
                    native, http = MISMATCH_ANSWERS[l["diff"]]
                    f.write(json.dumps({"request_id": l["request_id"], "phase": l["phase"], "diff": l["diff"],
                                        "http_answer": http, "native_answer": native},
                                       ensure_ascii=False, separators=(",", ":")) + "\n")
    if argv_file:
        with open(os.path.join(d, "aiperf", "argv.json"), "w") as f:
            json.dump(argv, f)
            f.write("\n")
    else:
        os.rmdir(os.path.join(d, "aiperf"))


def write_inventory(root, group, profiles):
    d = os.path.join(ROOT, root, group)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "inventory.json"), "w") as f:
        json.dump(profiles, f, indent=2)
        f.write("\n")


def problem(stage, code, msg):
    return {"stage": stage, "code": code, "message": msg}


MISMATCH_DIFF_1 = ('--- native answer\n+++ HTTP answer\n@@ message.content @@\n'
                   '-"3 shapes: red square, blue disc, green square"\n'
                   '+"3 shapes: red square, blue disc"\n')
MISMATCH_DIFF_2 = ('--- native answer\n+++ HTTP answer\n@@ message.content @@\n'
                   '-"2"\n+"2 <|im_end|>"\n')
# The two answers of each mismatch (native, HTTP), as mismatches.jsonl keeps them.
MISMATCH_ANSWERS = {
    MISMATCH_DIFF_1: ("3 shapes: red square, blue disc, green square", "3 shapes: red square, blue disc"),
    MISMATCH_DIFF_2: ("2", "2 <|im_end|>"),
}


def main():
    if os.path.isdir(ROOT):
        shutil.rmtree(ROOT)
    # ---------------- root a: vlm ----------------
    small = profile("ref-vlm-small", "ref-vlm")
    base = profile("ref-vlm-base", "ref-vlm")
    large = profile("ref-vlm-large", "ref-vlm", status="implemented")
    medium = profile("ref-vlm-medium", "ref-vlm")
    xl = profile("ref-vlm-xl", "ref-vlm", exclusion="needs two GPUs; the qualification host has one")
    tiny = profile("ref-vlm-tiny", "ref-vlm")
    fp16 = profile("ref-vlm-small-fp16", "ref-vlm", kind="variant", precision="fp16", variant_of="ref-vlm-small")
    l0 = profile("ref-vlm-small-l0", "ref-vlm", kind="partial", status="implemented")
    inv = [small, base, large, medium, xl, tiny, fp16, l0]
    write_inventory("a", "vlm", inv)

    out = "out/demo"
    lines = requests("ref-vlm-small", 5, 50, 9.2, 3.1, 1)
    r, argv = result(small, "vlm", "qualified", lines, "2026-11-30T08:15:00Z", "2026-11-30T08:15:41Z", out)
    write("a", "vlm", "ref-vlm-small", r, lines, argv)

    lines = requests("ref-vlm-base", 5, 50, 14.7, 3.4, 2, statuses={
        11: ("mismatched", MISMATCH_DIFF_1), 37: ("mismatched", MISMATCH_DIFF_2),
        42: ("missing_server_record", "no record with this request id in server-records.jsonl"),
        45: ("echo_mismatched", 'the server\'s answer echoes X-Request-ID "req-5d2f90c1", not the id sent')})
    r, argv = result(base, "vlm", "failed", lines, "2026-11-30T08:16:00Z", "2026-11-30T08:16:52Z", out)
    write("a", "vlm", "ref-vlm-base", r, lines, argv)
    # A previous run set aside: must be ignored.
    r_old, _ = result(base, "vlm", "error", [], "2026-11-29T08:15:00Z", "2026-11-29T08:15:09Z", out,
                      correctness="not-run", run_key_seed="old",
                      problems=[problem("start-server", "server_exit", "server exited with status 2 during startup")])
    write("a", "vlm", "ref-vlm-base.20261129T081500Z", r_old, None, argv, argv_file=False)

    r, argv = result(large, "vlm", "error", [], "2026-11-30T08:17:00Z", "2026-11-30T08:17:04Z", out,
                     correctness="not-run", output_tokens=False, source_commit=False, stages=[
                         {"name": "prepare", "status": "ok", "duration_ms": 405.0, "child_ms": 390.2},
                         {"name": "correctness", "status": "skipped", "duration_ms": 0, "child_ms": 0},
                         {"name": "start-server", "status": "error", "duration_ms": 3120.8, "child_ms": 3100.0,
                          "error": "server exited with status 1 during startup"}],
                     problems=[problem("start-server", "server_exit",
                                     "server exited with status 1 during startup: load bundle: precision fp32 is not built for this device; last stderr lines in server.log")])
    r["provenance"]["commands"] = r["provenance"]["commands"][1:2]
    r["provenance"]["commands"][0]["exit_code"] = 1
    write("a", "vlm", "ref-vlm-large", r, None, argv, argv_file=False)

    lines = requests("ref-vlm-medium", 5, 50, 11.9, 3.2, 3, sent_meas=30)
    r, argv = result(medium, "vlm", "interrupted", lines, "2026-11-30T08:18:00Z", "2026-11-30T08:18:21Z", out,
                     problems=[problem("aiperf", "interrupted", "interrupted (SIGINT) during stage aiperf after 30 of 50 measured requests")])
    write("a", "vlm", "ref-vlm-medium", r, lines, argv)

    lines = requests("ref-vlm-small-fp16", 5, 50, 6.4, 3.0, 4)
    r, argv = result(fp16, "vlm", "qualified", lines, "2026-11-30T08:19:00Z", "2026-11-30T08:19:33Z", out,
                     aiperf_in_provenance=True)
    write("a", "vlm", "ref-vlm-small-fp16", r, lines, argv, argv_file=False)

    lines = requests("ref-vlm-small-l0", 5, 50, 4.1, 2.9, 5)
    r, argv = result(l0, "vlm", "failed", lines, "2026-11-30T08:20:00Z", "2026-11-30T08:20:25Z", out,
                     correctness="fail")
    write("a", "vlm", "ref-vlm-small-l0", r, lines, argv)

    # ---------------- root a: detection (no inventory snapshot) ----------------
    dsmall = profile("ref-detect-small", "ref-detect", group="detection")
    dlarge = profile("ref-detect-large", "ref-detect", group="detection")
    dtp2 = profile("ref-detect-small-tp2", "ref-detect", kind="variant", variant_of="ref-detect-small", tp=2, group="detection")
    lines = requests("ref-detect-small", 5, 50, 7.5, 8.3, 6)
    r, argv = result(dsmall, "detection", "qualified", lines, "2026-11-30T09:00:00Z", "2026-11-30T09:00:31Z", out)
    write("a", "detection", "ref-detect-small", with_gpus(r, 1), lines, argv)
    lines = requests("ref-detect-small-tp2", 5, 50, 5.1, 8.0, 7)
    r, argv = result(dtp2, "detection", "qualified", lines, "2026-11-30T09:01:00Z", "2026-11-30T09:01:29Z", out)
    write("a", "detection", "ref-detect-small-tp2", with_gpus(r, 2, 1), lines, argv)
    r, argv = result(dlarge, "detection", "excluded", [], "2026-11-30T09:02:00Z", "2026-11-30T09:02:00Z", out,
                     correctness="not-run", output_tokens=False, stages=[],
                     exclusion="checkpoint licence does not allow CI redistribution")
    r["provenance"]["commands"] = []
    write("a", "detection", "ref-detect-large", r, None, argv, argv_file=False)

    # ---------------- complete: detection, every normal profile in scope qualified ----------------
    # The same rows as root a's detection, with the inventory snapshot they
    # were run for (the excluded profile excluded there too).
    dlarge_x = profile("ref-detect-large", "ref-detect", group="detection",
                       exclusion="checkpoint licence does not allow CI redistribution")
    write_inventory("complete", "detection", [dsmall, dlarge_x, dtp2])
    lines = requests("ref-detect-small", 5, 50, 7.5, 8.3, 6)
    r, argv = result(dsmall, "detection", "qualified", lines, "2026-11-30T09:00:00Z", "2026-11-30T09:00:31Z", out)
    write("complete", "detection", "ref-detect-small", with_gpus(r, 1), lines, argv)
    lines = requests("ref-detect-small-tp2", 5, 50, 5.1, 8.0, 7)
    r, argv = result(dtp2, "detection", "qualified", lines, "2026-11-30T09:01:00Z", "2026-11-30T09:01:29Z", out)
    write("complete", "detection", "ref-detect-small-tp2", with_gpus(r, 2, 1), lines, argv)
    r, argv = result(dlarge_x, "detection", "excluded", [], "2026-11-30T09:02:00Z", "2026-11-30T09:02:00Z", out,
                     correctness="not-run", output_tokens=False, stages=[],
                     exclusion="checkpoint licence does not allow CI redistribution")
    r["provenance"]["commands"] = []
    write("complete", "detection", "ref-detect-large", r, None, argv, argv_file=False)

    # ---------------- root b: a later partial re-run of vlm ----------------
    write_inventory("b", "vlm", inv)
    out_b = "out/rerun"
    lines = requests("ref-vlm-base", 5, 50, 14.5, 3.4, 12)
    r, argv = result(base, "vlm", "qualified", lines, "2026-12-01T10:00:00Z", "2026-12-01T10:00:50Z", out_b, run_key_seed="b")
    write("b", "vlm", "ref-vlm-base", r, lines, argv)
    lines = requests("ref-vlm-small", 5, 50, 9.6, 3.1, 11)
    r, argv = result(small, "vlm", "qualified", lines, "2026-11-28T10:00:00Z", "2026-11-28T10:00:41Z", out_b, run_key_seed="b")
    write("b", "vlm", "ref-vlm-small", r, lines, argv)
    lines = requests("ref-vlm-tiny", 5, 50, 3.2, 2.8, 13)
    r, argv = result(tiny, "vlm", "qualified", lines, "2026-12-01T10:02:00Z", "2026-12-01T10:02:20Z", out_b, run_key_seed="b")
    write("b", "vlm", "ref-vlm-tiny", r, lines, argv)

    # ---------------- baseline: an earlier, faster run ----------------
    write_inventory("baseline", "vlm", inv)
    out_o = "out/old"
    lines = requests("ref-vlm-small", 5, 50, 7.6, 2.6, 21)
    r, argv = result(small, "vlm", "qualified", lines, "2026-11-01T08:15:00Z", "2026-11-01T08:15:40Z", out_o, run_key_seed="old")
    write("baseline", "vlm", "ref-vlm-small", r, lines, argv)
    lines = requests("ref-vlm-small-fp16", 5, 50, 6.5, 3.0, 22)
    r, argv = result(fp16, "vlm", "qualified", lines, "2026-11-01T08:19:00Z", "2026-11-01T08:19:33Z", out_o, run_key_seed="old")
    write("baseline", "vlm", "ref-vlm-small-fp16", r, lines, argv)


    # ---------------- gpu: tensor-parallel rows on a 3-GPU run ----------------
    gsmall = profile("ref-detect-small", "ref-detect", status="implemented", group="detection")
    gtp2 = profile("ref-detect-small-tp2", "ref-detect", kind="variant", variant_of="ref-detect-small", tp=2, group="detection")
    gtp4 = profile("ref-detect-small-tp4", "ref-detect", kind="variant", variant_of="ref-detect-small", tp=4, group="detection")
    write_inventory("gpu", "detection", [gsmall, gtp2, gtp4])
    out_g = "out/gpu"
    lines = requests("ref-detect-small", 5, 50, 7.5, 8.3, 41)
    r, argv = result(gsmall, "detection", "qualified", lines, "2026-12-01T09:00:00Z", "2026-12-01T09:00:31Z", out_g)
    write("gpu", "detection", "ref-detect-small", with_gpus(r, 1), lines, argv)
    lines = requests("ref-detect-small-tp2", 5, 50, 5.1, 8.0, 42)
    r, argv = result(gtp2, "detection", "qualified", lines, "2026-12-01T09:00:00Z", "2026-12-01T09:00:29Z", out_g)
    # Run from a TRTMC checkout with local edits: visible, never silent.
    r["provenance"]["checkouts"][1].update({"dirty": True, "changed_files": 2, "diff_sha256": sha("trtmc-diff"),
                                            "untracked_files": 1, "untracked_sha256": sha("trtmc-untracked")})
    write("gpu", "detection", "ref-detect-small-tp2", with_gpus(r, 2, 1), lines, argv)
    # The tp=4 variant needs more GPUs than the run has: never started.
    r, argv = result(gtp4, "detection", "not-run", [], "2026-12-01T09:00:00Z", "2026-12-01T09:00:00Z", out_g,
                     correctness="not-run", output_tokens=False, stages=[],
                     problems=[problem("schedule", "insufficient_gpus",
                                       "needs 4 GPUs (tp4) but the run has 3 (--gpus 0,1,2); not started on fewer")])
    r["provenance"]["commands"] = []
    write("gpu", "detection", "ref-detect-small-tp4", r, None, argv, argv_file=False)


if __name__ == "__main__":
    main()
