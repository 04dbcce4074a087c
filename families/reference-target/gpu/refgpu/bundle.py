"""The bundle: a deterministic weights file with a stable sha256.

Layout: one line of canonical JSON (sorted keys, no white space) holding
the format, family, task, precision, seed, tensor parallelism, perception
parameters, model shape and the tensor table, then "\\n", then the weights
as little-endian int16 (value = int16 / 32768 * tensor scale), tensor after
tensor. The weights come from SHAKE-256 of the seed and the tensor's name,
so the same flags give the same bytes everywhere (no RNG of any library).
Standard library only.
"""
import hashlib
import json
import os
import tempfile

from . import FAMILY, TASK

FORMAT = "trtmc-refgpu-bundle/v1"
PRECISIONS = ("fp32", "fp16")

# The reference palette and thresholds (trtmc-refserver's base values).
PARAMS = {
    "palette": [
        {"name": "red", "rgb": [210, 40, 40]},
        {"name": "green", "rgb": [40, 160, 60]},
        {"name": "blue", "rgb": [40, 70, 210]},
        {"name": "yellow", "rgb": [235, 200, 30]},
    ],
    "max_colour_distance": 100,
    "min_area": 12,
    "square_min_fill": 0.88,
}

# Model sizes: "full" is the shipped model; "tiny" keeps unit tests fast.
SIZES = {
    "full": {"vocab": 257, "d_model": 512, "d_ff": 4096, "layers": 4, "positions": 256},
    "tiny": {"vocab": 257, "d_model": 32, "d_ff": 64, "layers": 2, "positions": 256},
}
# margin is added to the logit of the rule-based answer's next byte: with
# the shipped scales the language head's own logits stay within about
# +-2, so a sound bundle answers correctly and a corrupted one does not.
MARGIN = 8.0


def tensor_table(shape):
    d, f, v, n = shape["d_model"], shape["d_ff"], shape["vocab"], shape["positions"]
    t = [("embed", [v, d], 0.035), ("pos", [n, d], 0.035)]
    for i in range(shape["layers"]):
        t.append(("layer%d.w1" % i, [d, f], 1.0 / (d ** 0.5)))
        t.append(("layer%d.w2" % i, [f, d], 0.5 / (f ** 0.5)))
    out, off = [], 0
    for name, dims, scale in t:
        count = 1
        for x in dims:
            count *= x
        out.append({"name": name, "shape": dims, "scale": scale, "offset": off, "count": count})
        off += count
    return out


def header(precision="fp32", seed=1, tp=1, size="full"):
    if precision not in PRECISIONS:
        raise ValueError("unknown precision %r (valid values are fp32, fp16)" % precision)
    if tp < 1 or tp > 64:
        raise ValueError("--tp must be between 1 and 64, got %d" % tp)
    if size not in SIZES:
        raise ValueError("unknown size %r (valid values are %s)" % (size, ", ".join(sorted(SIZES))))
    shape = dict(SIZES[size])
    if shape["d_ff"] % tp:
        raise ValueError("d_ff %d is not divisible by tp %d" % (shape["d_ff"], tp))
    return {"format": FORMAT, "family": FAMILY, "task": TASK, "precision": precision, "seed": seed, "tp": tp,
            "size": size, "params": PARAMS, "model": dict(shape, margin=MARGIN), "tensors": tensor_table(shape)}


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def weight_bytes(seed, table):
    """The int16 weights of every tensor, deterministic from the seed."""
    parts = []
    for t in table:
        key = ("%s/seed=%d/%s" % (FORMAT, seed, t["name"])).encode()
        parts.append(hashlib.shake_256(key).digest(2 * t["count"]))
    return b"".join(parts)


def make(out, precision="fp32", seed=1, tp=1, size="full"):
    """Writes the bundle atomically and returns its sha256 (hex)."""
    h = header(precision, seed, tp, size)
    data = canonical(h) + b"\n" + weight_bytes(seed, h["tensors"])
    d = os.path.dirname(os.path.abspath(out))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".bundle-", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o644)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dfd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    return hashlib.sha256(data).hexdigest()


class BundleError(Exception):
    pass


class Bundle:
    """A loaded bundle: its header and the raw int16 weights."""

    def __init__(self, path, header, weights, sha256):
        self.path, self.header, self.weights, self.sha256 = path, header, weights, sha256

    @property
    def precision(self):
        return self.header["precision"]

    @property
    def tp(self):
        return self.header["tp"]

    @property
    def params(self):
        return self.header["params"]


def load(path):
    """Loads and validates a bundle strictly; errors name the file."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise BundleError("bundle %s: %s" % (path, e.strerror or e))
    nl = data.find(b"\n")
    if nl < 0:
        raise BundleError("bundle %s: no header line" % path)
    try:
        h = json.loads(data[:nl])
    except ValueError as e:
        raise BundleError("bundle %s: header is not JSON: %s" % (path, e))
    if not isinstance(h, dict) or h.get("format") != FORMAT:
        raise BundleError("bundle %s: format is %r, want %r" % (path, h.get("format") if isinstance(h, dict) else None, FORMAT))
    want = set(header().keys())
    if set(h) != want:
        raise BundleError("bundle %s: header fields %s, want %s" % (path, sorted(h), sorted(want)))
    if h["family"] != FAMILY or h["task"] != TASK:
        raise BundleError("bundle %s: family %s task %s, want %s %s" % (path, h["family"], h["task"], FAMILY, TASK))
    if h["precision"] not in PRECISIONS:
        raise BundleError("bundle %s: unknown precision %r" % (path, h["precision"]))
    if not isinstance(h["tp"], int) or h["tp"] < 1:
        raise BundleError("bundle %s: tp must be a positive integer" % path)
    weights = data[nl + 1:]
    need = 2 * sum(t["count"] for t in h["tensors"])
    if len(weights) != need:
        raise BundleError("bundle %s: %d bytes of weights, the tensor table needs %d" % (path, len(weights), need))
    p = h["params"]
    if not p.get("palette") or not 0 < p.get("max_colour_distance", 0) <= 442 or not 0 < p.get("square_min_fill", 0) <= 1 \
            or not isinstance(p.get("min_area"), int) or p["min_area"] < 1:
        raise BundleError("bundle %s: perception parameters out of range" % path)
    return Bundle(path, h, weights, hashlib.sha256(data).hexdigest())
