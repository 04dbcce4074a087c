"""Payload validation and the answer rules (standard library + pillow)."""
import json
import unittest

from helpers import chat, data_url, png
from refgpu import task


class Echo:
    """A stand-in model: the rule-based answer over fixed shapes."""

    def answer(self, img, question, max_tokens):
        shapes = [{"colour": "red", "shape": "square", "area": 400, "min_x": 10, "min_y": 10},
                  {"colour": "blue", "shape": "disc", "area": 300, "min_x": 2, "min_y": 40}]
        return task.truncate(task.answer_rules(question, img.width, img.height, shapes), max_tokens)


class TaskTest(unittest.TestCase):
    def setUp(self):
        self.t = task.Task(Echo())

    def test_answer(self):
        r = self.t.answer(chat("Describe the image."))
        self.assertEqual(r["text"], "2 shapes: blue disc, red square")
        self.assertEqual(r["finish_reason"], "stop")
        self.assertEqual(r["completion_tokens"], 6)
        self.assertEqual(r["image"]["width"], 96)
        self.assertEqual(json.loads(r["answer"]), r["text"])
        r = self.t.answer(chat("Describe the image.", max_tokens=2))
        self.assertEqual((r["text"], r["finish_reason"]), ("2 shapes:", "length"))
        warm = json.loads(chat())
        warm["messages"].insert(0, {"role": "system", "content": "warmup"})
        r = self.t.answer(json.dumps(warm).encode())
        self.assertTrue(r["warmup"])
        self.assertEqual(r["prompt_tokens"], 8)

    def test_rules(self):
        shapes = [{"colour": "red", "shape": "square", "area": 400, "min_x": 30, "min_y": 10},
                  {"colour": "red", "shape": "disc", "area": 100, "min_x": 5, "min_y": 10},
                  {"colour": "blue", "shape": "disc", "area": 450, "min_x": 60, "min_y": 40}]
        for q, want in [("How many shapes are in the image?", "3"), ("how many red shapes are there", "2"),
                        ("Is there a blue circle?", "yes"), ("Is there a green square?", "no"),
                        ("What is the dominant colour?", "red"), ("What is the image size?", "96x64"),
                        ("Which shape is largest?", "blue disc"),
                        ("Describe the image.", "3 shapes: red disc, red square, blue disc"),
                        ("What is the meaning of life?", task.FALLBACK)]:
            self.assertEqual(task.answer_rules(q, 96, 64, shapes), want, q)
        self.assertEqual(task.answer_rules("Which shape is largest?", 1, 1, []), "none")
        self.assertEqual(task.answer_rules("Describe the image.", 1, 1, []), "0 shapes")

    def test_rejects(self):
        good = json.loads(chat())
        cases = {
            "unknown field": (dict(good, top_p=1), "unknown field \"top_p\""),
            "stream": (dict(good, stream=True), "stream=true"),
            "both max": (dict(good, max_tokens=3, max_completion_tokens=3), "not both"),
            "max range": (dict(good, max_tokens=0), "between 1 and"),
            "temperature": (dict(good, temperature=3), "temperature"),
            "seed": (dict(good, seed=1.5), "integer"),
            "no messages": (dict(good, messages=[]), "required"),
            "model": ({k: v for k, v in good.items() if k != "model"}, "model"),
        }
        three = json.loads(chat())
        three["messages"] = [{"role": "system", "content": "a"}] * 2 + three["messages"]
        cases["three messages"] = (three, "holds 3 messages")
        two_texts = json.loads(chat())
        two_texts["messages"][0]["content"].append({"type": "text", "text": "again"})
        cases["two texts"] = (two_texts, "exactly one of each")
        detail = json.loads(chat())
        detail["messages"][0]["content"][1]["image_url"]["detail"] = "high"
        cases["detail"] = (detail, "unknown field \"detail\"")
        http = json.loads(chat(image="http://example.invalid/a.png"))
        cases["http url"] = (http, "only data: URLs")
        gif = json.loads(chat(image="data:image/gif;base64,R0lGOD"))
        cases["gif"] = (gif, "unsupported image type")
        lie = json.loads(chat(image=data_url(png(), "image/jpeg")))
        cases["not jpeg"] = (lie, "not a valid image/jpeg")
        for name, (body, want) in cases.items():
            with self.assertRaises(task.RequestError, msg=name) as cm:
                self.t.answer(json.dumps(body).encode())
            self.assertIn(want, str(cm.exception), name)
        with self.assertRaises(task.RequestError) as cm:
            self.t.answer(b'{"model":"a","model":"b","messages":[]}')
        self.assertIn("repeated", str(cm.exception))
        with self.assertRaises(task.RequestError):
            self.t.answer(b"not json")
        big = data_url(png(4097, 2))
        with self.assertRaises(task.RequestError) as cm:
            self.t.answer(chat(image=big))
        self.assertIn("at most 4096", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
