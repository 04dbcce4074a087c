"""The model, on CUDA with PyTorch: perception (nearest palette colour and
4-connected components, computed on the GPU) and a language head whose
weights are sharded over the process's GPUs (tensor parallelism).

Determinism (docs/gpu.md; measured on the H200): torch's deterministic
algorithms, TF32 off for matmul and cuDNN, CUBLAS_WORKSPACE_CONFIG=:4096:8,
one request at a time with the same shapes in the server and the native
runner, and partial sums reduced on the first GPU in a fixed order.
"""
import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402

from .task import answer_rules, truncate  # noqa: E402

EOS = 256


class ModelError(Exception):
    pass


def deterministic():
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    torch.manual_seed(0)


def devices(tp, allow_cpu):
    """The tp devices the model is sharded over: the visible GPUs, exactly
    tp of them (CUDA_VISIBLE_DEVICES names them by UUID). Without CUDA the
    model refuses to run unless allow_cpu (a rehearsal on a machine with no
    GPU: the same code on the CPU, tp shards on one device)."""
    if torch.cuda.is_available():
        n = torch.cuda.device_count()
        if n != tp:
            raise ModelError("the bundle is built for tp=%d but %d GPU(s) are visible (CUDA_VISIBLE_DEVICES=%s)"
                             % (tp, n, os.environ.get("CUDA_VISIBLE_DEVICES", "")))
        return [torch.device("cuda", i) for i in range(tp)]
    if not allow_cpu:
        raise ModelError("no CUDA device is visible (CUDA_VISIBLE_DEVICES=%r): this family computes on the GPU"
                         % os.environ.get("CUDA_VISIBLE_DEVICES", ""))
    return [torch.device("cpu")] * tp


class Model:
    """A loaded bundle on its devices."""

    def __init__(self, bundle, allow_cpu=False):
        deterministic()
        self.bundle = bundle
        h = bundle.header
        self.devs = devices(h["tp"], allow_cpu)
        self.dtype = torch.float16 if h["precision"] == "fp16" else torch.float32
        m = h["model"]
        self.margin = float(m["margin"])
        self.positions = m["positions"]
        p = h["params"]
        self.palette_names = [c["name"] for c in p["palette"]]
        self.palette = torch.tensor([c["rgb"] for c in p["palette"]], dtype=torch.int32, device=self.devs[0])
        self.limit2 = int(p["max_colour_distance"]) ** 2
        self.min_area = int(p["min_area"])
        self.square_min_fill = float(p["square_min_fill"])
        raw = torch.frombuffer(bytearray(bundle.weights), dtype=torch.int16)
        tensors = {}
        for t in h["tensors"]:
            w = raw[t["offset"]:t["offset"] + t["count"]].to(torch.float32).reshape(t["shape"]) * (t["scale"] / 32768.0)
            tensors[t["name"]] = w
        tp = len(self.devs)
        d0 = self.devs[0]
        self.embed = tensors["embed"].to(d0, self.dtype)
        self.pos = tensors["pos"].to(d0, self.dtype)
        # Column-parallel w1, row-parallel w2: shard k of every layer lives
        # on device k (tp shards; memory on each GPU).
        self.layers = []
        for i in range(m["layers"]):
            w1 = tensors["layer%d.w1" % i].chunk(tp, dim=1)
            w2 = tensors["layer%d.w2" % i].chunk(tp, dim=0)
            self.layers.append([(w1[k].contiguous().to(self.devs[k], self.dtype), w2[k].contiguous().to(self.devs[k], self.dtype))
                                for k in range(tp)])
        for d in self.devs:
            if d.type == "cuda":
                torch.cuda.synchronize(d)

    # ---- perception

    @torch.no_grad()
    def perceive(self, img):
        """The shapes of an image: nearest palette colour per pixel (within
        max_colour_distance), 4-connected components of one colour, at least
        min_area pixels; a component filling at least square_min_fill of its
        box is a square, else a disc. Integer arithmetic, so exact."""
        d0 = self.devs[0]
        w, h = img.width, img.height
        pix = torch.frombuffer(bytearray(img.rgb), dtype=torch.uint8).to(d0).reshape(h, w, 3).to(torch.int32)
        diff = pix.unsqueeze(0) - self.palette.view(-1, 1, 1, 3)
        dist2 = (diff * diff).sum(dim=3)  # [K, H, W]
        best = torch.argmin(dist2, dim=0)  # first minimum on ties
        bestd = torch.gather(dist2, 0, best.unsqueeze(0)).squeeze(0)
        cls = torch.where(bestd > self.limit2, torch.full_like(best, -1), best)
        fg = cls >= 0
        big = h * w
        idx = torch.arange(h * w, device=d0, dtype=torch.int64).reshape(h, w)
        lab = torch.where(fg, idx, torch.full_like(idx, big))
        while True:
            new = lab.clone()
            # neighbours of the same class: up, down, left, right
            same = fg[1:, :] & (cls[1:, :] == cls[:-1, :])
            new[1:, :] = torch.where(same, torch.minimum(new[1:, :], lab[:-1, :]), new[1:, :])
            new[:-1, :] = torch.where(same, torch.minimum(new[:-1, :], lab[1:, :]), new[:-1, :])
            same = fg[:, 1:] & (cls[:, 1:] == cls[:, :-1])
            new[:, 1:] = torch.where(same, torch.minimum(new[:, 1:], lab[:, :-1]), new[:, 1:])
            new[:, :-1] = torch.where(same, torch.minimum(new[:, :-1], lab[:, 1:]), new[:, :-1])
            # pointer jumping: a label points at a pixel of the same component
            flat = new.reshape(-1)
            jumped = torch.where(flat < big, flat[flat.clamp(max=big - 1)], flat)
            new = torch.minimum(new, jumped.reshape(h, w))
            if torch.equal(new, lab):
                break
            lab = new
        # Component statistics on the CPU (small, deterministic).
        lab = lab.cpu().reshape(-1)
        cls = cls.cpu().reshape(-1)
        keep = lab < big
        roots, inverse = torch.unique(lab[keep], return_inverse=True)
        n = roots.numel()
        if n == 0:
            return []
        pidx = torch.arange(h * w, dtype=torch.int64)[keep]
        xs, ys = pidx % w, pidx // w
        area = torch.bincount(inverse, minlength=n)
        minx = torch.full((n,), w, dtype=torch.int64).scatter_reduce(0, inverse, xs, "amin")
        maxx = torch.full((n,), -1, dtype=torch.int64).scatter_reduce(0, inverse, xs, "amax")
        miny = torch.full((n,), h, dtype=torch.int64).scatter_reduce(0, inverse, ys, "amin")
        maxy = torch.full((n,), -1, dtype=torch.int64).scatter_reduce(0, inverse, ys, "amax")
        shapes = []
        for i in range(n):
            a = int(area[i])
            if a < self.min_area:
                continue
            x0, x1, y0, y1 = int(minx[i]), int(maxx[i]) + 1, int(miny[i]), int(maxy[i]) + 1
            fill = a / float((x1 - x0) * (y1 - y0))
            shapes.append({"colour": self.palette_names[int(cls[int(roots[i])])],
                           "shape": "square" if fill >= self.square_min_fill else "disc",
                           "area": a, "min_x": x0, "min_y": y0})
        shapes.sort(key=lambda s: (s["min_y"], s["min_x"], s["colour"] + "_" + s["shape"]))
        return shapes

    # ---- language head

    @torch.no_grad()
    def generate(self, target):
        """Greedy decoding of the answer's bytes by the tensor-parallel
        language head, biased by `margin` towards the rule-based answer
        (the model's knowledge). Every position is scored in one batch."""
        want = list(target.encode("utf-8")) + [EOS]
        if len(want) > self.positions:
            raise ModelError("answer of %d bytes is longer than the model's %d positions" % (len(want), self.positions))
        d0 = self.devs[0]
        prev = torch.tensor([EOS] + want[:-1], dtype=torch.int64, device=d0)
        x = self.embed[prev] + self.pos[: len(want)]
        for shards in self.layers:
            hdn = torch.nn.functional.layer_norm(x, x.shape[-1:])
            parts = []
            for (w1, w2), dev in zip(shards, self.devs):
                hk = hdn.to(dev)
                parts.append(torch.nn.functional.gelu(hk @ w1) @ w2)
            total = parts[0]
            for p in parts[1:]:  # fixed order: deterministic
                total = total + p.to(d0)
            x = x + total
        logits = (torch.nn.functional.layer_norm(x, x.shape[-1:]) @ self.embed.t()).float()
        # The bias is built on the CPU (no scatter on the GPU, whatever the
        # deterministic-algorithm rules of the torch version say).
        bias = torch.zeros(logits.shape, dtype=logits.dtype)
        bias[torch.arange(len(want)), torch.tensor(want)] = self.margin
        out = torch.argmax(logits + bias.to(d0), dim=1).tolist()
        got = bytearray()
        for t in out:
            if t == EOS:
                break
            got.append(t)
        return got.decode("utf-8", errors="replace")

    def answer(self, img, question, max_tokens):
        shapes = self.perceive(img)
        full = answer_rules(question, img.width, img.height, shapes)
        text, cut = truncate(full, max_tokens)
        return self.generate(text), cut

    def memory(self):
        """Bytes of weights on each device (for the server's ready line)."""
        per = {}
        for shards in self.layers:
            for (w1, w2), dev in zip(shards, self.devs):
                per[str(dev)] = per.get(str(dev), 0) + w1.numel() * w1.element_size() + w2.numel() * w2.element_size()
        return per
