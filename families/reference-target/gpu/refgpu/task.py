"""The Task: strict chat payload validation and the answer rules, shared by
serve, native and check (the same code path, so HTTP and native answers are
the same bytes). Standard library only; the model (refgpu.model) computes
the perception and the language head."""
import base64
import binascii
import json
import re

WARMUP_MARKER = "warmup"
MAX_SIDE = 4096
MAX_TOKENS = 1 << 20
FALLBACK = "I can only answer questions about the shapes, colours and size of the image."


class RequestError(Exception):
    """A payload the Task rejects (HTTP 400)."""


def _req(where, fmt, *args):
    msg = fmt % args if args else fmt
    return RequestError((where + ": " + msg) if where else msg)


class _Dup(dict):
    pass


def _pairs(pairs):
    obj = _Dup()
    for k, v in pairs:
        if k in obj:
            obj.setdefault("\0repeated", []).append(k)
        obj[k] = v
    return obj


def _object(value, where, allowed):
    if not isinstance(value, dict):
        raise _req(where, "must be a JSON object")
    rep = value.get("\0repeated")
    if rep:
        raise _req(where, "field %s is repeated", json.dumps(rep[0]))
    for k in value:
        if k not in allowed:
            raise _req(where, "unknown field %s", json.dumps(k))
    return {k: v for k, v in value.items() if v is not None}


def _str(obj, where, key):
    v = obj.get(key)
    if not isinstance(v, str):
        raise _req(where, "field %s is required and must be a string", json.dumps(key))
    return v


def _int(obj, where, key):
    v = obj.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not v.is_integer()):
        raise _req(where, "field %s must be an integer", json.dumps(key))
    return int(v)


def count_tokens(text):
    return len(text.split())


def truncate(text, max_tokens):
    words = text.split()
    if max_tokens <= 0 or len(words) <= max_tokens:
        return text, False
    return " ".join(words[:max_tokens]), True


class ChatRequest:
    def __init__(self):
        self.model = ""
        self.question = ""
        self.image_url = ""
        self.max_tokens = 0
        self.warmup = False
        self.prompt_tokens = 0


def parse_chat(payload):
    """Validates a chat completion body strictly (trtmc-refserver's rules)."""
    try:
        body = json.loads(payload, object_pairs_hook=_pairs)
    except (ValueError, UnicodeDecodeError) as e:
        raise _req("", "is not valid JSON: %s", e)
    body = _object(body, "", {"messages", "model", "stream", "max_tokens", "max_completion_tokens", "temperature", "seed"})
    req = ChatRequest()
    req.model = _str(body, "", "model")
    if "stream" in body:
        if not isinstance(body["stream"], bool):
            raise _req("", "field \"stream\" must be a boolean")
        if body["stream"]:
            raise _req("", "stream=true is not supported, send stream=false")
    if "max_tokens" in body and "max_completion_tokens" in body:
        raise _req("", "set max_tokens or max_completion_tokens, not both")
    for key in ("max_tokens", "max_completion_tokens"):
        if key in body:
            n = _int(body, "", key)
            if n < 1 or n > MAX_TOKENS:
                raise _req("", "field %s must be between 1 and %d, got %d", json.dumps(key), MAX_TOKENS, n)
            req.max_tokens = n
    if "temperature" in body:
        t = body["temperature"]
        if isinstance(t, bool) or not isinstance(t, (int, float)):
            raise _req("", "field \"temperature\" must be a number")
        if t < 0 or t > 2:
            raise _req("", "field \"temperature\" must be between 0 and 2, got %s", t)
    if "seed" in body:
        _int(body, "", "seed")
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise _req("", "field \"messages\" is required and must hold one user message")
    if len(msgs) > 2:
        raise _req("", "field \"messages\" holds %d messages; send one user message, optionally after one system message", len(msgs))
    if len(msgs) == 2:
        text = _system(msgs[0])
        req.warmup = text.strip() == WARMUP_MARKER
        req.prompt_tokens += count_tokens(text)
    last = len(msgs) - 1
    req.question, req.image_url = _user(msgs[last], "messages[%d]" % last)
    req.prompt_tokens += count_tokens(req.question)
    return req


def _system(raw):
    where = "messages[0]"
    msg = _object(raw, where, {"role", "content"})
    role = _str(msg, where, "role")
    if role != "system":
        raise _req(where, "role is %s; with two messages the first must be a system message", json.dumps(role))
    content = msg.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _req(where, "field \"content\" must be a string or an array of text parts")
    texts = []
    for i, p in enumerate(content):
        pw = "%s.content[%d]" % (where, i)
        part = _object(p, pw, {"type", "text"})
        if part.get("type") != "text":
            raise _req(pw, "a system message may only hold text parts")
        texts.append(_str(part, pw, "text"))
    return " ".join(texts)


def _user(raw, where):
    msg = _object(raw, where, {"role", "content"})
    role = _str(msg, where, "role")
    if role != "user":
        raise _req(where, "role is %s, want \"user\"", json.dumps(role))
    parts = msg.get("content")
    if not isinstance(parts, list):
        raise _req(where, "field \"content\" must be an array of one text part and one image_url part")
    question, url, texts, images = "", "", 0, 0
    for i, p in enumerate(parts):
        pw = "%s.content[%d]" % (where, i)
        head = _object(p, pw, {"type", "text", "image_url"})
        typ = _str(head, pw, "type")
        if typ == "text":
            _object(p, pw, {"type", "text"})
            question = _str(head, pw, "text")
            texts += 1
        elif typ == "image_url":
            _object(p, pw, {"type", "image_url"})
            img = _object(head.get("image_url"), pw + ".image_url", {"url"})
            url = _str(img, pw + ".image_url", "url")
            images += 1
        else:
            raise _req(pw, "unsupported content part type %s (valid values are text, image_url)", json.dumps(typ))
    if texts != 1 or images != 1:
        raise _req(where, "content holds %d text and %d image_url parts; send exactly one of each", texts, images)
    if not question.strip():
        raise _req(where, "the text part is empty")
    return question, url


_MIME = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff"}


class Image:
    def __init__(self, mime, nbytes, width, height, rgb):
        self.mime, self.nbytes, self.width, self.height, self.rgb = mime, nbytes, width, height, rgb


def decode_image(url, where):
    """Decodes a data:image/png|jpeg;base64 URL into RGB bytes (pillow)."""
    if not url.startswith("data:"):
        raise _req(where, "only data: URLs are accepted (no http fetching)")
    meta, sep, data = url[5:].partition(",")
    if not sep or not meta.endswith(";base64"):
        raise _req(where, "want data:<type>;base64,<data>")
    mime = meta[: -len(";base64")]
    if mime not in _MIME:
        raise _req(where, "unsupported image type %s (valid values are image/png, image/jpeg)", json.dumps(mime))
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as e:
        raise _req(where, "invalid base64: %s", e)
    if not raw.startswith(_MIME[mime]):
        raise _req(where, "image is not a valid %s", mime)
    import io

    from PIL import Image as PILImage

    try:
        im = PILImage.open(io.BytesIO(raw))
        w, h = im.size
        if w > MAX_SIDE or h > MAX_SIDE or w < 1 or h < 1:
            raise _req(where, "image is %dx%d; at most %d pixels a side", w, h, MAX_SIDE)
        rgb = im.convert("RGB").tobytes()
    except RequestError:
        raise
    except Exception as e:  # pillow raises many kinds
        raise _req(where, "image is not a valid %s: %s", mime, e)
    return Image(mime, len(raw), w, h, rgb)


# ---- the answer rules (trtmc-refserver's families/reference-target/vlm, same questions)

_RE = {
    "count": re.compile(r"^how many (shapes|objects) (are|is) (there )?in the (image|picture)$|^how many shapes are there$"),
    "colour_count": re.compile(r"^how many ([a-z]+) (shapes|objects) (are there|are in the image|are in the picture)$"),
    "has": re.compile(r"^is there an? ([a-z]+) (square|disc|circle)( in the (image|picture))?$"),
    "dominant": re.compile(r"^what is the (dominant|main|most common) colou?r( of the shapes| in the (image|picture))?$"),
    "size": re.compile(r"^what (is|are) the (image|picture) (size|dimensions)$|^how (big|large) is the (image|picture)$"),
    "largest": re.compile(r"^which (shape|object) is (the )?(largest|biggest)$|^what is the (largest|biggest) (shape|object)$"),
    "describe": re.compile(r"^(describe the (image|picture)|list the shapes( from left to right)?|what shapes are in the (image|picture))$"),
}


def normalize(q):
    return " ".join(q.lower().split()).rstrip("?.! ")


def answer_rules(question, width, height, shapes):
    """The answer to question; shapes are dicts colour, shape, area, min_x, min_y."""
    q = normalize(question)
    if _RE["count"].match(q):
        return str(len(shapes))
    m = _RE["colour_count"].match(q)
    if m:
        return str(sum(1 for s in shapes if s["colour"] == m.group(1)))
    m = _RE["has"].match(q)
    if m:
        shape = "disc" if m.group(2) == "circle" else m.group(2)
        return "yes" if any(s["colour"] == m.group(1) and s["shape"] == shape for s in shapes) else "no"
    if _RE["dominant"].match(q):
        areas = {}
        for s in shapes:
            areas[s["colour"]] = areas.get(s["colour"], 0) + s["area"]
        best, best_area = "none", 0
        for colour in sorted(areas):
            if areas[colour] > best_area:
                best, best_area = colour, areas[colour]
        return best
    if _RE["size"].match(q):
        return "%dx%d" % (width, height)
    if _RE["largest"].match(q):
        if not shapes:
            return "none"
        best = None
        for s in shapes:  # on equal areas the first in reading order wins
            if best is None or (s["area"], -s["min_y"], -s["min_x"]) > (best["area"], -best["min_y"], -best["min_x"]):
                best = s
        return best["colour"] + " " + best["shape"]
    if _RE["describe"].match(q):
        if not shapes:
            return "0 shapes"
        ordered = sorted(shapes, key=lambda s: (s["min_x"], s["min_y"]))
        noun = "shape" if len(ordered) == 1 else "shapes"
        return "%d %s: %s" % (len(ordered), noun, ", ".join(s["colour"] + " " + s["shape"] for s in ordered))
    return FALLBACK


class Task:
    """The chat Task over a model (refgpu.model.Model, or a stand-in)."""

    def __init__(self, model):
        self.model = model

    def answer(self, payload):
        """Returns a dict: text, finish_reason, model, warmup, prompt_tokens,
        completion_tokens, image (mime, bytes, width, height), answer (the
        JSON bytes of the text). Raises RequestError for a rejected payload;
        then .partial holds what was known."""
        req = parse_chat(payload)
        res = {"model": req.model, "warmup": req.warmup, "prompt_tokens": req.prompt_tokens}
        try:
            img = decode_image(req.image_url, "image_url")
        except RequestError as e:
            e.partial = res
            raise
        res["image"] = {"mime": img.mime, "bytes": img.nbytes, "width": img.width, "height": img.height}
        text, cut = self.model.answer(img, req.question, req.max_tokens)
        res["text"] = text
        res["finish_reason"] = "length" if cut else "stop"
        res["completion_tokens"] = count_tokens(text)
        res["answer"] = json.dumps(text, ensure_ascii=False).encode()
        return res
