"""The model on the GPU (PyTorch). Skipped, visibly, where torch or a GPU is
missing (CI); scripts/gpu-evidence.sh runs them on the H200 machine. With
TRTMC_REFGPU_ALLOW_CPU=1 and a CPU torch they rehearse on the CPU."""
import json
import os
import subprocess
import sys
import unittest

from helpers import RUN, TempDir, chat, data_url, png, torch_or_skip
from refgpu import bundle


def run(*args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, RUN, *args], capture_output=True, text=True, env=e, timeout=600)


class ModelTest(TempDir):
    def setUp(self):
        super().setUp()
        self.torch = torch_or_skip()
        self.gpus = self.torch.cuda.device_count() if self.torch.cuda.is_available() else 0

    def visible(self, n):
        """The environment that shows the first n GPUs to a child, as the
        harness's slot does: the model refuses a bundle whose tp differs from
        the GPUs it sees, so on a multi-GPU host every child names its own."""
        if not self.gpus:
            return {}
        return {"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(n)), "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}

    def bundle(self, tp=1, precision="fp32", size="full"):
        path = os.path.join(self.tmp, "b-%s-%d-%s.bundle" % (precision, tp, size))
        if not os.path.exists(path):
            bundle.make(path, precision, 1, tp, size)
        return path

    def test_check_passes_and_a_corrupted_bundle_fails(self):
        corpus = self.corpus(12)
        b = self.bundle()
        out = os.path.join(self.tmp, "check.json")
        r = run("check", "--bundle", b, "--corpus", corpus, "--out", out, env=self.visible(1))
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            res = json.load(f)
        self.assertTrue(res["passed"])
        self.assertEqual(res["metrics"]["accuracy"], 1.0)
        # Scale the language head's embedding up 1000x: its own logits now
        # drown the model's knowledge, and the gate fails.
        data = open(b, "rb").read()
        head, _, weights = data.partition(b"\n")
        h = json.loads(head)
        for t in h["tensors"]:
            if t["name"] == "embed":
                t["scale"] *= 1000
        bad = os.path.join(self.tmp, "bad.bundle")
        open(bad, "wb").write(bundle.canonical(h) + b"\n" + weights)
        r = run("check", "--bundle", bad, "--corpus", corpus, "--out", out, env=self.visible(1))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertFalse(json.load(open(out))["passed"])

    def test_server_and_native_answer_alike(self):
        """The same payloads through HTTP and through the native runner give
        byte-identical answers; two native runs too (determinism)."""
        corpus = self.corpus(8)
        entries = json.load(open(os.path.join(corpus, "corpus.json")))["entries"]
        from check_helpers import serve_and_ask
        from refgpu.check import payload

        payloads = [payload(corpus, e) for e in entries]
        payloads.append(chat("Describe the image.", max_tokens=2))
        b = self.bundle()
        http = serve_and_ask(self, RUN, b, payloads, env=self.visible(1))
        reqs = os.path.join(self.tmp, "in.jsonl")
        with open(reqs, "w") as f:
            for i, p in enumerate(payloads):
                f.write(json.dumps({"request_id": "r%d" % i, "route": "/v1/chat/completions", "payload": p.decode()}) + "\n")
        outs = []
        for k in range(2):
            out = os.path.join(self.tmp, "out%d.jsonl" % k)
            r = run("native", "--bundle", b, "--requests", reqs, "--out", out, env=self.visible(1))
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                outs.append([json.loads(l) for l in f])
        self.assertEqual([a["answer"] for a in outs[0]], [a["answer"] for a in outs[1]], "two processes, same answers")
        self.assertEqual([a["answer"] for a in outs[0]], http, "native and HTTP answers are identical")
        self.assertEqual(http[-1], "1 shape:", "max_tokens cuts at a word boundary")

    def test_tensor_parallel_spreads_over_gpus(self):
        """A tp=2 bundle shards its MLP weights over two devices; on GPUs,
        memory is allocated on each of them."""
        if self.torch.cuda.is_available() and self.gpus < 2:
            self.skipTest("tp=2 needs two visible GPUs (%d here): run on a 2-GPU host" % self.gpus)
        from refgpu import model, task

        b = bundle.load(self.bundle(tp=2))
        m = model.Model(b, allow_cpu=True)
        self.assertEqual(len(m.devs), 2)
        mem = m.memory()
        if self.torch.cuda.is_available():
            self.assertEqual(len(mem), 2, mem)
            for d in m.devs:
                self.assertGreater(self.torch.cuda.memory_allocated(d), 10 << 20, d)
        img = task.decode_image(data_url(png(boxes=[(10, 10, 30, 30, (210, 40, 40)), (50, 20, 70, 40, (40, 70, 210))])), "x")
        text, cut = m.answer(img, "Describe the image.", 0)
        self.assertEqual((text, cut), ("2 shapes: red square, blue square", False))

    def test_wrong_device_count_is_refused(self):
        """A bundle whose tp differs from the GPUs the child sees is refused
        (exit 3), never run on fewer or more: tp=2 on a 1-GPU host, tp=1 with
        two GPUs visible on a larger one."""
        if not self.torch.cuda.is_available():
            self.skipTest("needs a GPU: on the CPU the rehearsal maps every shard to the CPU")
        tp = 2 if self.gpus == 1 else 1
        seen = min(self.gpus, 2)
        corpus = self.corpus(2)
        out = os.path.join(self.tmp, "c.json")
        r = run("check", "--bundle", self.bundle(tp=tp, size="tiny"), "--corpus", corpus, "--out", out, env=self.visible(seen))
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("built for tp=%d" % tp, r.stderr)

    def test_no_gpu_is_refused(self):
        corpus = self.corpus(2)
        r = run("check", "--bundle", self.bundle(size="tiny"), "--corpus", corpus, "--out", os.path.join(self.tmp, "c.json"),
                env={"CUDA_VISIBLE_DEVICES": "", "TRTMC_REFGPU_ALLOW_CPU": ""})
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("no CUDA device is visible", r.stderr)


if __name__ == "__main__":
    unittest.main()
