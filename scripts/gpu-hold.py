#!/usr/bin/env python3
"""A foreign GPU job for scripts/gpu-evidence.sh: allocates --mib MiB on the
visible GPU(s) with PyTorch and spins matrix products until killed. It
prints "gpu-hold: ready pid=N" once the memory is held, so the caller waits
on that line, not on a sleep. TRTMC_REFGPU_ALLOW_CPU=1 holds CPU memory
instead (a rehearsal without a GPU)."""
import argparse
import os
import signal
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--mib", type=int, default=1024)
ap.add_argument("--seconds", type=float, default=300, help="give up after this long (a bound, never a wait)")
a = ap.parse_args()

import time  # noqa: E402

import torch  # noqa: E402

signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
if torch.cuda.is_available():
    dev = torch.device("cuda", 0)
elif os.environ.get("TRTMC_REFGPU_ALLOW_CPU") == "1":
    dev = torch.device("cpu")
else:
    sys.exit("gpu-hold: no CUDA device visible")
block = torch.empty(a.mib * (1 << 20) // 4, dtype=torch.float32, device=dev)
block.fill_(1.0)
x = torch.randn(2048, 2048, device=dev)
if dev.type == "cuda":
    torch.cuda.synchronize()
print("gpu-hold: ready pid=%d device=%s mib=%d" % (os.getpid(), dev, a.mib), flush=True)
end = time.monotonic() + a.seconds
while time.monotonic() < end:
    x = torch.tanh(x @ x)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    else:
        time.sleep(0.05)  # a rehearsal must not take a shared CPU
