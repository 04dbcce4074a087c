"""refgpu: a small deterministic vision-language model that computes on CUDA
with PyTorch, behind the same trtmc-server contract as trtmc-refserver.

Only refgpu.model imports torch, and only when a model is loaded: the HTTP
layer, the payload validation, the bundle format and the answer rules are
standard library, so they are tested on machines without torch or a GPU.
"""

FAMILY = "ref-vlm-gpu"
TASK = "vision_language_generation"
ROUTE = "/v1/chat/completions"
VERSION = "1"
