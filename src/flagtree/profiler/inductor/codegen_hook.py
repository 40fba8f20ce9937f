"""The model's source lines of each kernel inductor writes in this process.

Inductor's wrapper text names a kernel's FX nodes but not where in the model they came from; the
nodes' ``meta["stack_trace"]`` does, while inductor generates code. Inductor's Triton codegen asks
``get_kernel_metadata(node_schedule, wrapper)`` (its module global in
``torch._inductor.codegen.triton``) for the comment it writes above each kernel: wrapping that one
function sees the kernel's origin nodes and the very comment, which ties what is seen here to the
kernel's entry in the wrapper (wrapper_text.comment_key), whatever name the kernel gets. A torch
without that function is left alone: its kernels' source lines are then unavailable.
"""
import os
import re
import sys

from ..common.after_import import watch
from .wrapper_text import comment_key

CODEGEN = "torch._inductor.codegen.triton"
_UTILS = "torch._inductor.utils"
_FUNCTION = "get_kernel_metadata"
_MARK = "_flagtree_original"
# The innermost frame of a stack trace: where the model's code made the node.
_FRAME = re.compile(r'File "([^"]*)", line (\d+), in (\S+)')

SOURCE_LINES = {}  # comment key -> ["file:line in function", ...]


def install():
    """Wraps the codegen's comment function now if inductor's Triton codegen is loaded, else once
    it is imported."""
    module = sys.modules.get(CODEGEN)
    if module is not None:
        wrap(module)
    else:
        watch(CODEGEN, wrap, once=True)  # leaves sys.meta_path at that import


def wrap(module):
    original = getattr(module, _FUNCTION, None)
    if not callable(original) or hasattr(original, _MARK):
        return

    def get_kernel_metadata(node_schedule, wrapper):
        result = original(node_schedule, wrapper)
        try:
            remember(node_schedule, result)
        except Exception:  # noqa: BLE001 - what we read must never break inductor's compile
            pass
        return result

    setattr(get_kernel_metadata, _MARK, original)
    setattr(module, _FUNCTION, get_kernel_metadata)


def remember(node_schedule, result):
    """Keeps the source lines of the kernel whose comment is `result` (origins, detailed)."""
    utils = sys.modules.get(_UTILS)
    aggregate = getattr(utils, "aggregate_origins", None)
    if aggregate is None or not isinstance(result, tuple) or len(result) != 2:
        return
    lines = source_lines(aggregate(node_schedule), _torch_folder())
    if lines:
        SOURCE_LINES[comment_key("\n".join(result).splitlines())] = lines


def _torch_folder():
    path = getattr(sys.modules.get("torch"), "__file__", None)
    return os.path.dirname(path) + os.sep if isinstance(path, str) else None


def _model_frame(frames, torch_folder):
    """The innermost frame outside torch's own files (a model's ``self.norm(x)`` traces on into
    torch.nn's code), else the innermost."""
    for frame in reversed(frames):
        if torch_folder is None or not frame[0].startswith(torch_folder):
            return frame
    return frames[-1]


def source_lines(origins, torch_folder=None):
    """Where in the model each origin node came from (see _model_frame): distinct, in order."""
    found = []
    for node in origins:
        meta = getattr(node, "meta", None)
        trace = meta.get("stack_trace") if isinstance(meta, dict) else None
        frames = _FRAME.findall(trace) if isinstance(trace, str) else []
        if frames:
            path, line, function = _model_frame(frames, torch_folder)
            entry = f"{path}:{line} in {function}"
            if entry not in found:
                found.append(entry)
    return found
