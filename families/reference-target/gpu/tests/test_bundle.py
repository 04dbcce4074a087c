"""The bundle format: deterministic bytes, the sha256 pinned in
inventory/gpu.yaml, strict loading (standard library only)."""
import hashlib
import json
import os
import re
import unittest

from helpers import REPO, TempDir
from refgpu import bundle


class BundleTest(TempDir):
    def test_same_flags_same_bytes(self):
        a = bundle.make(os.path.join(self.tmp, "a"), "fp32", 1, 2, "tiny")
        b = bundle.make(os.path.join(self.tmp, "b"), "fp32", 1, 2, "tiny")
        self.assertEqual(a, b)
        for other in [("fp16", 1, 2), ("fp32", 2, 2), ("fp32", 1, 1)]:
            self.assertNotEqual(a, bundle.make(os.path.join(self.tmp, "c"), other[0], other[1], other[2], "tiny"), other)

    def test_inventory_pins(self):
        """Every bundle of inventory/gpu.yaml, rebuilt, has the pinned sha256."""
        text = open(os.path.join(REPO, "inventory", "gpu.yaml")).read()
        pins = re.findall(r"path: \.\./out/refgpu/bundles/ref-vlm-gpu-(fp32|fp16)-tp(\d+)\.bundle, sha256: ([0-9a-f]{64})", text)
        self.assertGreaterEqual(len(pins), 3, "inventory/gpu.yaml pins the GPU bundles")
        for precision, tp, sha in pins:
            got = bundle.make(os.path.join(self.tmp, "x"), precision, 1, int(tp), "full")
            self.assertEqual(sha, got, "%s tp%s" % (precision, tp))

    def test_load_checks(self):
        path = os.path.join(self.tmp, "b")
        sha = bundle.make(path, "fp16", 3, 2, "tiny")
        b = bundle.load(path)
        self.assertEqual((b.sha256, b.tp, b.precision), (sha, 2, "fp16"))
        data = open(path, "rb").read()
        head, _, weights = data.partition(b"\n")
        h = json.loads(head)

        def broken(name, blob, want):
            p = os.path.join(self.tmp, name)
            open(p, "wb").write(blob)
            with self.assertRaises(bundle.BundleError) as cm:
                bundle.load(p)
            self.assertIn(want, str(cm.exception))
            self.assertIn(p, str(cm.exception), "the error names the file")

        broken("truncated", data[:-2], "bytes of weights")
        broken("noheader", b"garbage", "no header line")
        broken("notjson", b"{x\n" + weights, "not JSON")
        for field, value, want in [("format", "other/v1", "format"), ("precision", "int8", "precision"),
                                   ("family", "ref-vlm", "family"), ("extra", 1, "header fields")]:
            h2 = dict(h)
            h2[field] = value
            broken(field, bundle.canonical(h2) + b"\n" + weights, want)
        h2 = json.loads(head)
        h2["params"]["max_colour_distance"] = 0
        broken("params", bundle.canonical(h2) + b"\n" + weights, "perception parameters")
        with self.assertRaises(bundle.BundleError):
            bundle.load(os.path.join(self.tmp, "missing"))

    def test_bad_flags(self):
        for args in [("int8", 1, 1, "tiny"), ("fp32", 1, 0, "tiny"), ("fp32", 1, 3, "tiny"), ("fp32", 1, 1, "huge")]:
            with self.assertRaises(ValueError, msg=args):
                bundle.make(os.path.join(self.tmp, "z"), *args)


if __name__ == "__main__":
    unittest.main()
