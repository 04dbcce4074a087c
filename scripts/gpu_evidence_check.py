#!/usr/bin/env python3
"""Checks of scripts/gpu-evidence.sh over the evidence trtmc-qual wrote
(result.json files) and the nvidia-smi samples taken during the runs.
Standard library only; every check prints one line, PASS or FAIL, and the
exit status is 1 when one failed.

  rows DIR GROUP NGPUS [gpu|ref] verdicts by tp, disjoint GPUs of concurrent rows,
                                 hygiene checks, not-run rows never started
  samples SAMPLES DIR GROUP      memory on every GPU of each tp>=2 row while it ran
  makespan DIR GROUP NGPUS       makespan against max(longest, GPU-time / GPUs)
  busy DIR GROUP PROFILE         exit-3 row: gpu busy, nothing timed
  leftovers                      no live process carries TRTMC_QUAL_CHECKPOINT
  apps SAMPLE_FILE               an nvidia-smi compute-apps listing is empty
  doctor-gpu JSON NGPUS          doctor's GPU rows for the GPU group: every GPU listed, ready
  doctor-trtmc JSON              doctor with the TRTMC families on a host without TRTMC:
                                 not ready, each absent part named with its fix
  pack PACK HOST DIR...          an exported evidence pack holds none of HOST or the DIRs
"""
import calendar
import glob
import json
import os
import sys
import time

failed = []


def check(ok, what):
    print("%s: %s" % ("PASS" if ok else "FAIL", what))
    if not ok:
        failed.append(what)


def ts(s):
    date, _, frac = s.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(date, "%Y-%m-%dT%H:%M:%S")) + float("0." + (frac or "0"))


def results(out, group):
    rows = []
    for p in sorted(glob.glob(os.path.join(out, group, "*", "result.json"))):
        if "." in os.path.basename(os.path.dirname(p)):
            continue  # evidence set aside by a later run
        with open(p) as f:
            rows.append(json.load(f))
    return rows


def tp_of(r):
    p = r.get("parallelism", "tp1")
    n = 1
    for part in p.split("-"):
        if part.startswith("tp"):
            n *= int(part[2:])
        elif part.startswith("cp"):
            n *= int(part[2:])
    return n


def uuids(r):
    return [g["uuid"] for g in r.get("provenance", {}).get("gpus") or []]


def rows_cmd(out, group, ngpus, kind="gpu"):
    """kind gpu: the family computes on the GPU (its server must hold memory
    on each GPU of its slot); ref: a CPU family given a GPU slot."""
    ngpus = int(ngpus)
    rs = results(out, group)
    check(len(rs) > 0, "%s: %d rows in %s" % (group, len(rs), out))
    ran = []
    for r in rs:
        need = tp_of(r)
        pid = r["profile"]
        if r["verdict"] == "excluded":
            print("INFO: %s excluded: %s" % (pid, r.get("exclusion", "")))
            continue
        if need <= ngpus:
            why = "; ".join("%s/%s: %s" % (x["stage"], x["code"], x["message"].splitlines()[0]) for x in r["reasons"])
            check(r["verdict"] == "qualified", "%s (%s, %d GPU(s)) qualified%s" % (pid, r["parallelism"], need, "" if r["verdict"] == "qualified" else ": " + r["verdict"] + ": " + why))
            check(len(uuids(r)) == need, "%s ran on %d GPU(s) %s" % (pid, len(uuids(r)), " ".join(u[:12] for u in uuids(r))))
            checks = {c["name"]: c for c in r.get("gpu_checks") or []}
            for name in ("idle_before_timing", "in_use_while_serving", "released_after_stop"):
                c = checks.get(name)
                check(c is not None and c["passed"], "%s: GPU check %s %s" % (pid, name, "passed" if c and c["passed"] else (c or {}).get("problem", "missing")))
            serving = checks.get("in_use_while_serving")
            if serving and kind == "gpu":
                per = ["%s:%s MiB" % (g["uuid"][:12], sum(p.get("used_mib") or 0 for p in g["processes"] if p["ours"])) for g in serving["gpus"]]
                check(all(any(p["ours"] and (p.get("used_mib") or 0) > 0 for p in g["processes"]) for g in serving["gpus"]),
                      "%s: the server held memory on each of its GPUs while serving (%s)" % (pid, ", ".join(per)))
            if r["verdict"] == "qualified":
                ran.append(r)
        else:
            codes = [x["code"] for x in r["reasons"]]
            check(r["verdict"] == "not-run" and "insufficient_gpus" in codes,
                  "%s (%s) needs %d GPUs, the host has %d: %s %s" % (pid, r["parallelism"], need, ngpus, r["verdict"], "; ".join(x["message"] for x in r["reasons"])))
            d = os.path.join(out, group, pid)
            started = [c for c in r["provenance"].get("commands") or [] if c["stage"] in ("server", "aiperf")]
            check(not started and not os.path.exists(os.path.join(d, "server.log")), "%s was never started (no server, no AIPerf)" % pid)
    # Concurrent rows never share a GPU.
    overlaps = 0
    for i, a in enumerate(ran):
        for b in ran[i + 1:]:
            if ts(a["started_at"]) < ts(b["ended_at"]) and ts(b["started_at"]) < ts(a["ended_at"]):
                overlaps += 1
                shared = set(uuids(a)) & set(uuids(b))
                check(not shared, "%s and %s ran at the same time on disjoint GPUs%s" % (a["profile"], b["profile"], "" if not shared else ": shared " + ", ".join(shared)))
    print("INFO: %s: %d pair(s) of rows overlapped in time" % (group, overlaps))
    for r in ran:
        print("INFO: %s %s %s -> %s on %s" % (r["profile"], r["parallelism"], r["started_at"], r["ended_at"], ", ".join(uuids(r))))


def samples_cmd(samples, out, group):
    """samples lines: '<epoch s>, apps, pid, name, used_mib, uuid' and '<epoch s>, gpu, <14 fields>'."""
    apps = []
    with open(samples) as f:
        for line in f:
            p = [x.strip() for x in line.split(",")]
            if len(p) >= 6 and p[1] == "apps":
                try:
                    apps.append((float(p[0]), int(p[2]), int(p[-2]) if p[-2].isdigit() else 0, p[-1]))
                except ValueError:
                    pass
    print("INFO: %d compute-process samples" % len(apps))
    for r in results(out, group):
        if r["verdict"] != "qualified" or tp_of(r) < 2:
            continue
        s, e = ts(r["started_at"]), ts(r["ended_at"])
        seen = {}
        for t, pid, mib, uuid in apps:
            if s <= t <= e and uuid in uuids(r) and mib > 0:
                seen[uuid] = max(seen.get(uuid, 0), mib)
        check(len(seen) == len(uuids(r)), "%s (%s): nvidia-smi sampled memory on each of its GPUs during the run: %s"
              % (r["profile"], r["parallelism"], ", ".join("%s %d MiB" % (u[:12], seen.get(u, 0)) for u in uuids(r))))


def makespan_cmd(out, group, ngpus):
    ngpus = int(ngpus)
    rs = [r for r in results(out, group) if r["verdict"] in ("qualified", "failed")]
    if not rs:
        check(False, "%s: no finished rows for the makespan" % group)
        return
    spans = [(ts(r["started_at"]), ts(r["ended_at"]), tp_of(r), r["profile"]) for r in rs]
    makespan = max(e for _, e, _, _ in spans) - min(s for s, _, _, _ in spans)
    longest = max(e - s for s, e, _, _ in spans)
    work = sum((e - s) * n for s, e, n, _ in spans)
    bound = max(longest, work / ngpus)
    print("FIGURE: %s makespan %.1f s, bound %.1f s (longest %.1f s, GPU-time %.1f s / %d GPUs): ratio %.2f"
          % (group, makespan, bound, longest, work, ngpus, makespan / bound))


def busy_cmd(out, group, profile):
    rs = [r for r in results(out, group) if r["profile"] == profile]
    check(len(rs) == 1, "%s: one row" % profile)
    if not rs:
        return
    r = rs[0]
    codes = [x["code"] for x in r["reasons"]]
    check(r["verdict"] == "error" and "gpu_busy" in codes, "%s: verdict %s, reasons %s" % (profile, r["verdict"], "; ".join(x["message"][:160] for x in r["reasons"])))
    d = os.path.join(out, group, profile)
    check(not os.path.exists(os.path.join(d, "aiperf")) and not any(c["stage"] == "aiperf" for c in r["provenance"]["commands"]),
          "%s: nothing was timed (no AIPerf run, no aiperf/ evidence)" % profile)


def leftovers_cmd():
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % name, "rb") as f:
                env = f.read()
            with open("/proc/%s/cmdline" % name, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if b"TRTMC_QUAL_CHECKPOINT=" in env:
            found.append("%s %s" % (name, cmd[:120]))
    check(not found, "no process of the run is left%s" % ("" if not found else ": " + "; ".join(found)))


def apps_cmd(path):
    with open(path) as f:
        lines = [l.strip() for l in f if l.strip()]
    check(not lines, "no compute process holds GPU memory%s" % ("" if not lines else ": " + "; ".join(lines)))


def doctor_report(path):
    with open(path) as f:
        return json.load(f)


def doctor_gpu_cmd(path, ngpus):
    d = doctor_report(path)
    gpus = [c for c in d["checks"] if c["area"] == "gpu"]
    check(d["ready"], "doctor --group gpu: ready")
    listed = [c for c in gpus if c["status"] == "ok" and c["subject"] != "count"]
    check(len(listed) >= int(ngpus), "doctor --group gpu: %d GPU row(s) ok (want >= %s): %s" %
          (len(listed), ngpus, "; ".join("%s (%s)" % (c["subject"], c["status"]) for c in gpus)))
    bad = [c for c in d["checks"] if c["status"] == "fail"]
    check(not bad, "doctor --group gpu: no problem%s" % ("" if not bad else ": " + "; ".join(c["subject"] for c in bad)))


def doctor_trtmc_cmd(path):
    d = doctor_report(path)
    check(not d["ready"], "doctor (TRTMC families, no TRTMC here): not ready")
    trtmc = [c for c in d["checks"] if c["area"] == "trtmc" or c["subject"] in ("trtmc-server", "trtmc")]
    failing = [c for c in trtmc if c["status"] == "fail"]
    # Subjects only: the details name this machine's paths (the full report
    # is doctor-trtmc.json in evidence.tar.gz).
    check(failing, "doctor (TRTMC): the absent parts are named: %s" % ", ".join(c["subject"] for c in failing))
    check(all(c.get("fix") for c in failing), "doctor (TRTMC): each absent part has its fix")


def pack_cmd(pack, host, *dirs):
    """The host name as a word (a short name occurs inside base64 images by
    chance); each directory as a path prefix."""
    import re
    import tarfile
    leaks = []
    pats = [re.compile(r"(?<![A-Za-z0-9_.-])%s(?![A-Za-z0-9_-])" % re.escape(host))] if host else []
    pats += [re.compile(re.escape(d.rstrip("/")) + r"(?=/|\b|$)") for d in dirs if d and d != "/"]
    with tarfile.open(pack) as t:
        for m in t.getmembers():
            if not m.isfile():
                continue
            data = t.extractfile(m).read().decode("utf-8", "replace")
            for p in pats:
                if p.search(data) or p.search(m.name):
                    leaks.append("%s holds %r" % (m.name, p.pattern))
    check(not leaks, "the pack holds no path or name of this host%s" % ("" if not leaks else ": " + "; ".join(leaks[:5])))


def main(argv):
    cmds = {"rows": rows_cmd, "samples": samples_cmd, "makespan": makespan_cmd, "busy": busy_cmd,
            "leftovers": leftovers_cmd, "apps": apps_cmd, "doctor-gpu": doctor_gpu_cmd,
            "doctor-trtmc": doctor_trtmc_cmd, "pack": pack_cmd}
    if not argv or argv[0] not in cmds:
        print(__doc__, file=sys.stderr)
        return 2
    cmds[argv[0]](*argv[1:])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
