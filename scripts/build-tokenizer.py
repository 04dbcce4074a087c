#!/usr/bin/env python3
"""Build the small local tokenizer AIPerf's chat endpoint needs.

AIPerf's `chat` endpoint always loads a tokenizer (to count input and output
tokens), and the qualification machines cannot reach the Hugging Face hub.
This script writes a tiny Hugging Face-format tokenizer directory that
`transformers.AutoTokenizer.from_pretrained(<dir>)` loads with no network:

    tokenizer.json           the `tokenizers` model (WordLevel, whitespace split)
    tokenizer_config.json    tokenizer_class = PreTrainedTokenizerFast
    special_tokens_map.json

Token counts from it are not those of any real model; the harness uses them
only because AIPerf refuses to run chat without a tokenizer. The vocabulary is
built from a fixed text below plus every printable ASCII character, so the
output is byte-for-byte the same on every run (deterministic), and files whose
content is already right are not rewritten (idempotent).

Usage (with the project's venv python):
    .venv/bin/python scripts/build-tokenizer.py --out .venv/tokenizer
"""

import argparse
import json
import os
import string
import sys
import tempfile

# The vocabulary source: the reference corpus questions and answers, the
# reference detector labels, and some everyday English. Unknown words map to
# [UNK] (one token each), so any text still gets a count.
TEXT = """
how many shapes are in the image what colour is the largest shape which shape
is on the left right top bottom is there a red green blue yellow square circle
triangle rectangle in the picture describe the image answer with one word
zero one two three four five six seven eight nine ten yes no none
red_square green_circle blue_triangle yellow_rectangle background object
the a an and or of to in on at for with by from is are was were be been it this
that these those there here what which who when where why how do does did can
could would should will shall may might must not only also very more most less
image picture photo shape shapes colour color count number answer question
"""

SPECIALS = ["[UNK]", "[PAD]", "<s>", "</s>"]


def vocabulary():
    words = set(TEXT.split())
    words.update(c for c in string.printable if not c.isspace())
    words.update(str(i) for i in range(1000))
    vocab = {tok: i for i, tok in enumerate(SPECIALS)}
    for w in sorted(words):
        if w not in vocab:
            vocab[w] = len(vocab)
    return vocab


def build_tokenizer_json():
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

    tok = Tokenizer(models.WordLevel(vocab=vocabulary(), unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    # Let decode() re-join words with spaces.
    tok.decoder = decoders.WordPiece(prefix="##")
    return tok.to_str(pretty=True) + "\n"


def files():
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": 1000000,
        "unk_token": "[UNK]",
        "pad_token": "[PAD]",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "clean_up_tokenization_spaces": False,
    }
    specials = {
        "unk_token": "[UNK]",
        "pad_token": "[PAD]",
        "bos_token": "<s>",
        "eos_token": "</s>",
    }
    dump = lambda obj: json.dumps(obj, indent=2, sort_keys=True) + "\n"  # noqa: E731
    return {
        "tokenizer.json": build_tokenizer_json(),
        "tokenizer_config.json": dump(config),
        "special_tokens_map.json": dump(specials),
    }


def write_if_changed(path, text):
    data = text.encode("utf-8")
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return False
    except FileNotFoundError:
        pass
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return True


def check(out):
    """Load the directory the way AIPerf does and count a known sentence."""
    os.environ.pop("HF_HUB_OFFLINE", None)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # no "PyTorch was not found"
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(out)
    ids = tok.encode("How many shapes are in the image?", add_special_tokens=False)
    if len(ids) != 8 or tok.unk_token_id in ids:
        raise SystemExit(f"build-tokenizer: self-check failed: {ids}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="directory to write")
    ap.add_argument("--no-check", action="store_true", help="skip loading it back")
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    changed = [n for n, t in sorted(files().items()) if write_if_changed(os.path.join(out, n), t)]
    if not args.no_check:
        check(out)
    state = "wrote " + ", ".join(changed) if changed else "unchanged"
    print(f"build-tokenizer: {out}: {state}", file=sys.stderr)


if __name__ == "__main__":
    main()
