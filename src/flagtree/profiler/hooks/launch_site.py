"""Warnings about a launch, reported where the user launched the kernel (``kernel[grid](...)``)
rather than at the profiler's own line: the innermost frame outside flagtree.profiler and Triton."""
import os
import sys
import warnings

_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # flagtree/profiler


def launch_site():
    """The innermost calling frame outside flagtree.profiler and Triton, or None."""
    internal = [_OWN_DIR + os.sep, "<frozen"]
    triton = sys.modules.get("triton")
    if getattr(triton, "__file__", None):
        internal.append(os.path.dirname(os.path.abspath(triton.__file__)) + os.sep)
    internal = tuple(internal)
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(internal):
        frame = frame.f_back
    return frame


def warn_at_launch_site(message, category=RuntimeWarning):
    frame = launch_site()
    if frame is None:
        warnings.warn(message, category, stacklevel=2)
        return
    module = frame.f_globals
    warnings.warn_explicit(message, category, frame.f_code.co_filename, frame.f_lineno,
                           module=module.get("__name__", "<unknown>"),
                           registry=module.setdefault("__warningregistry__", {}), module_globals=module)
