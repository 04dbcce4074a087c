"""The correctness case: the Task of the exact bundle over a ref-vlm corpus
(trtmc-refserver corpus --family ref-vlm), payloads built as AIPerf builds
them; gate: exact-answer accuracy >= 0.90."""
import base64
import json
import os

from . import FAMILY
from .task import RequestError

SCHEMA = "trtmc-ref/check/v1"
MIN_ACCURACY = 0.90


def payload(corpus_dir, entry):
    with open(os.path.join(corpus_dir, entry["file"]), "rb") as f:
        data = base64.b64encode(f.read()).decode()
    return json.dumps({"messages": [{"role": "user", "content": [
        {"type": "text", "text": entry["question"]},
        {"type": "image_url", "image_url": {"url": "data:%s;base64,%s" % (entry["mime"], data)}}]}],
        "model": "check", "stream": False}).encode()


def run(task, bundle_sha256, corpus_dir):
    with open(os.path.join(corpus_dir, "corpus.json")) as f:
        corpus = json.load(f)
    if corpus.get("family") != "ref-vlm":
        raise ValueError("corpus %s is for family %s; %s answers ref-vlm corpora" % (corpus_dir, corpus.get("family"), FAMILY))
    entries = corpus["entries"]
    if not entries:
        raise ValueError("corpus %s has no entries" % corpus_dir)
    right, failures = 0, []
    for e in entries:
        try:
            got = task.answer(payload(corpus_dir, e))["text"]
        except RequestError as err:
            failures.append({"id": e["id"], "error": str(err)})
            continue
        if got.strip().lower() == e["answer"].strip().lower():
            right += 1
        elif len(failures) < 20:
            failures.append({"id": e["id"], "question": e["question"], "expected": e["answer"], "got": got})
    acc = round(right / len(entries), 4)
    gate = {"name": "accuracy", "value": acc, "op": ">=", "threshold": MIN_ACCURACY, "passed": acc >= MIN_ACCURACY}
    res = {"schema": SCHEMA, "family": FAMILY, "bundle_sha256": bundle_sha256, "passed": gate["passed"],
           "count": len(entries), "metrics": {"accuracy": acc}, "gates": [gate]}
    if failures:
        res["failures"] = failures[:20]
    return res
