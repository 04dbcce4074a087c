#!/usr/bin/env python3
"""A fake nvidia-smi for tests and for rehearsing scripts/gpu-evidence.sh on a
machine without a GPU. It answers the three calls trtmc-qual makes:

  nvidia-smi                          the banner (CUDA Version: ...)
  nvidia-smi --query-gpu=<the 14 fields trtmc-qual reads> --format=csv,noheader,nounits
  nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv,noheader,nounits

GPUs come from a fixture directory (FAKE_NVIDIA_SMI_FIXTURE, a path or a
name beside this file; default h200x2): query-gpu.csv and banner.txt, as
the real nvidia-smi printed them on an H200.

Compute processes are emulated from live processes, as the driver sees
them: a process whose environment holds FAKE_GPU_HOLD=<MiB>[:<regex>] (and,
when a regex is given, whose command line matches it) holds <MiB> on every
GPU its CUDA_VISIBLE_DEVICES names by UUID, for as long as it lives.
memory.used of a GPU is the sum of what its processes hold. A GPU held by a
process whose command line matches FAKE_GPU_SPIN (a regex) reads 100%
utilisation; FAKE_NVIDIA_SMI_UTIL=<uuid>=<pct>,... sets others.
FAKE_NVIDIA_SMI_FAIL=1 makes every call exit 9, as a broken driver would.
Only processes with the same FAKE_NVIDIA_SMI_SESSION as this call's
environment count, so tests (and rehearsals) running side by side on one
machine do not see each other's GPU processes.
"""
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))  # the fixtures' directory
fixture = os.environ.get("FAKE_NVIDIA_SMI_FIXTURE") or os.path.join(here, "h200x2")
if not os.path.isabs(fixture) and not os.path.isdir(fixture):
    fixture = os.path.join(here, fixture)

if os.environ.get("FAKE_NVIDIA_SMI_FAIL") == "1":
    print("Failed to initialize NVML: Driver/library version mismatch", file=sys.stderr)
    sys.exit(9)

FIELDS = "index,name,uuid,driver_version,memory.total,memory.used,utilization.gpu,clocks.sm,clocks.max.sm,power.limit,mig.mode.current,compute_cap,pci.bus_id,compute_mode"
APPS = "pid,process_name,used_memory,gpu_uuid"


def gpus():
    rows = []
    with open(os.path.join(fixture, "query-gpu.csv")) as f:
        for line in f:
            if line.strip():
                rows.append([c.strip() for c in line.split(",")])
    return rows


def holders():
    """(pid, comm, MiB, uuid, spinning) for every live process holding a GPU."""
    out = []
    spin = os.environ.get("FAKE_GPU_SPIN")
    session = os.environ.get("FAKE_NVIDIA_SMI_SESSION", "").encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % name, "rb") as f:
                env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
            with open("/proc/%s/cmdline" % name, "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            with open("/proc/%s/stat" % name) as f:
                stat = f.read()
        except OSError:
            continue
        hold = env.get(b"FAKE_GPU_HOLD", b"").decode()
        devices = env.get(b"CUDA_VISIBLE_DEVICES", b"").decode()
        if not hold or not devices or env.get(b"FAKE_NVIDIA_SMI_SESSION", b"") != session:
            continue
        if stat[stat.rindex(")") + 2] == "Z":  # a zombie holds nothing
            continue
        mib, _, pattern = hold.partition(":")
        if pattern and not re.search(pattern, cmdline):
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        spinning = bool(spin and re.search(spin, cmdline))
        for uuid in devices.split(","):
            out.append((int(name), comm, int(mib), uuid.strip(), spinning))
    return sorted(out)


args = sys.argv[1:]
if not args:
    with open(os.path.join(fixture, "banner.txt")) as f:
        sys.stdout.write(f.read())
    sys.exit(0)
query = [a for a in args if a.startswith("--query-")]
fmt = [a for a in args if a.startswith("--format=")]
if fmt != ["--format=csv,noheader,nounits"] or len(query) != 1:
    print("fake nvidia-smi: unexpected arguments: %s" % " ".join(args), file=sys.stderr)
    sys.exit(9)
q = query[0]
if q == "--query-gpu=" + FIELDS:
    util = dict(kv.split("=", 1) for kv in os.environ.get("FAKE_NVIDIA_SMI_UTIL", "").split(",") if "=" in kv)
    held = holders()
    for row in gpus():
        uuid = row[2]
        mine = [h for h in held if h[3] == uuid]
        if mine:
            row[5] = str(int(row[5]) + sum(h[2] for h in mine))
        if any(h[4] for h in mine):
            row[6] = "100"
        if uuid in util:
            row[6] = util[uuid]
        print(", ".join(row))
elif q == "--query-compute-apps=" + APPS:
    for pid, comm, mib, uuid, _ in holders():
        print("%d, %s, %d, %s" % (pid, comm, mib, uuid))
else:
    print("fake nvidia-smi: unexpected query %s" % q, file=sys.stderr)
    sys.exit(9)
