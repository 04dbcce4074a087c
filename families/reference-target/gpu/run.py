#!/usr/bin/env python3
"""Entry point of the GPU-resident reference family (python3 run.py VERB ...).

See docs/gpu.md."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from refgpu.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
