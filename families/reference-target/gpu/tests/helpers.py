"""Shared helpers of the refgpu tests."""
import base64
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FAMILY_DIR = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(FAMILY_DIR)))  # families/reference-target/gpu: three up
RUN = os.path.join(FAMILY_DIR, "run.py")
sys.path.insert(0, FAMILY_DIR)


def png(width=96, height=64, boxes=(), bg=(250, 250, 250)):
    """A PNG with filled rectangles: boxes of (x0, y0, x1, y1, (r, g, b))."""
    from PIL import Image, ImageDraw

    im = Image.new("RGB", (width, height), bg)
    d = ImageDraw.Draw(im)
    for x0, y0, x1, y1, rgb in boxes:
        d.rectangle([x0, y0, x1 - 1, y1 - 1], fill=rgb)
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


def data_url(data, mime="image/png"):
    return "data:%s;base64,%s" % (mime, base64.b64encode(data).decode())


def chat(question="How many shapes are in the image?", image=None, **extra):
    body = {"messages": [{"role": "user", "content": [
        {"type": "text", "text": question},
        {"type": "image_url", "image_url": {"url": image or data_url(png(boxes=[(10, 10, 30, 30, (210, 40, 40))]))}}]}],
        "model": "m", "stream": False}
    body.update(extra)
    return json.dumps(body).encode()


def torch_or_skip():
    """Skips the test visibly unless torch is importable and a GPU is
    visible (or TRTMC_REFGPU_ALLOW_CPU=1 rehearses on the CPU)."""
    try:
        import torch
    except ImportError:
        raise unittest.SkipTest("no torch here: the GPU family's model tests run where a GPU is present (scripts/gpu-evidence.sh)")
    if not torch.cuda.is_available() and os.environ.get("TRTMC_REFGPU_ALLOW_CPU") != "1":
        raise unittest.SkipTest("no CUDA device here: the GPU family's model tests run where a GPU is present (scripts/gpu-evidence.sh)")
    return torch


def refserver():
    """The trtmc-refserver binary (make build), for corpora."""
    for p in (os.environ.get("TRTMC_REFSERVER"), os.path.join(REPO, "bin", "trtmc-refserver")):
        if p and os.access(p, os.X_OK):
            return p
    raise unittest.SkipTest("bin/trtmc-refserver is not built (make build)")


class TempDir(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="refgpu-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def corpus(self, count=12):
        out = os.path.join(self.tmp, "corpus")
        subprocess.run([refserver(), "corpus", "--family", "ref-vlm", "--out", out, "--count", str(count)],
                       check=True, capture_output=True)
        return out
