"""The native core's layers hold: every `#include "..."` in csrc/ goes to the including file's own
layer or a lower one (the order docs/ARCHITECTURE.md states), and each backend's Python side calls
only its own submodule of _native besides the generic ones. Both checks read the source."""
import os
import re

import pytest

from flagtree.profiler import _native
from flagtree.profiler.backends import get_backend
from test_docs import ROOT

# Lowest first: a layer includes only itself and the layers before it. `viewer` is a branch of its
# own on `core`. Files named *_bindings.* beside a backend are part of `bindings` (the documented
# convention: backends/<name>/<name>_bindings.cpp), as is csrc/bindings.cpp, the module itself.
ORDER = ("core", "data", "dump", "store", "context", "session", "backends", "bindings")
BRANCHES = {"viewer": ("core",)}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# _native's submodules that belong to one backend, by the backend whose Python side calls them
# (the nvidia backend's folder holds its counters and PC sampling too).
BACKEND_SUBMODULES = {"nvidia": {"nvidia", "counters", "pcsampling"}, "roctracer": {"roctracer"},
                      "instrumentation": {"instrumentation"}, "device_timer": {"device_timer"},
                      "mthreads": {"mthreads"}, "cann": {"cann"}}
# The kernel-side scope modules serve instrumentation and device_timer alike.
SHARED_MODULES = {"kernel_scopes": {"instrumentation", "device_timer"}}
NATIVE_ATTRIBUTE = re.compile(r"\b_?native(?:_module)?(?:\(\))?\.(\w+)")


def layer_of(path):
    """The layer of a file, from its path relative to csrc/."""
    parts = path.split("/")
    if len(parts) == 1 or re.search(r"_bindings\.(cpp|h)$", parts[-1]):
        return "bindings"
    return parts[0]


def below(layer):
    if layer in BRANCHES:
        return (layer,) + BRANCHES[layer]
    if layer not in ORDER:
        return None
    return ORDER[:ORDER.index(layer) + 1]


def upward_includes(csrc):
    """['file: include (why)'] for every include that leaves its layer upward or names no layer."""
    found = []
    for folder, _, files in os.walk(csrc):
        for name in sorted(files):
            if not name.endswith((".h", ".cpp")):
                continue
            path = os.path.relpath(os.path.join(folder, name), csrc).replace(os.sep, "/")
            with open(os.path.join(folder, name), encoding="utf-8") as source:
                includes = INCLUDE.findall(source.read())
            allowed = below(layer_of(path))
            for include in includes:
                if allowed is None:
                    found.append(f"{path}: {include} (its folder is in no layer of ORDER)")
                elif layer_of(include) not in allowed:
                    found.append(f"{path}: {include} ({layer_of(path)} includes {layer_of(include)})")
    return found


def _plant(root, files):
    for name, text in files.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as out:
            out.write(text)


def test_the_include_checker_sees_upward_includes(tmp_path):
    _plant(tmp_path, {"data/a.h": '#include "core/c.h"\n#include "session/s.h"\n', "core/c.h": "",
                      "session/s.h": '#include "data/a.h"\n',
                      "backends/x/x_bindings.cpp": '#include "bindings/bindings.h"\n',
                      "backends/x/tracer.cpp": '#include "bindings/bindings.h"\n#include "session/s.h"\n',
                      "viewer/v.cpp": '#include "session/s.h"\n', "extra/e.h": '#include "core/c.h"\n'})
    assert sorted(upward_includes(str(tmp_path))) == [
        "backends/x/tracer.cpp: bindings/bindings.h (backends includes bindings)",
        "data/a.h: session/s.h (data includes session)",
        "extra/e.h: core/c.h (its folder is in no layer of ORDER)",
        "viewer/v.cpp: session/s.h (viewer includes session)"]


def test_no_native_include_goes_up_a_layer():
    csrc = os.path.join(ROOT, "csrc")
    assert os.path.isfile(os.path.join(csrc, "session", "profiler.h"))
    assert upward_includes(csrc) == []


def test_architecture_states_the_order_the_check_holds():
    with open(os.path.join(ROOT, "docs", "ARCHITECTURE.md"), encoding="utf-8") as doc:
        text = doc.read()
    assert " < ".join(f"`{layer}/`" for layer in ORDER) in text
    assert "`viewer/` includes `core/` only" in text


def _owner(path):
    """The backend a module under backends/ belongs to (its folder or its file name), else None."""
    for part in path.split("/"):
        stem = part[:-3] if part.endswith(".py") else part
        for backend in BACKEND_SUBMODULES:
            if stem == backend or stem.startswith(backend + "_"):
                return backend
    return None


def foreign_submodules(backends_dir):
    """['module: _native.<submodule>'] for each backend submodule a module calls that is not its own."""
    mine = set().union(*BACKEND_SUBMODULES.values())
    found = []
    for folder, _, files in os.walk(backends_dir):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.relpath(os.path.join(folder, name), backends_dir).replace(os.sep, "/")
            owner = _owner(path)
            allowed = SHARED_MODULES.get(name[:-3], BACKEND_SUBMODULES.get(owner, set()))
            with open(os.path.join(folder, name), encoding="utf-8") as source:
                used = set(NATIVE_ATTRIBUTE.findall(source.read())) & mine
            found += [f"{path}: _native.{sub}" for sub in sorted(used - allowed)]
    return found


def test_the_submodule_checker_sees_another_backends_submodule(tmp_path):
    _plant(tmp_path, {"nvidia/backend.py": "native.nvidia.cupti_flush()\nnative.counters.counters_flush()\n",
                      "device_timer/__init__.py": "_native().device_timer.device_timer_drain()\n"
                                                  "native.nvidia.cuda_driver_version()\n",
                      "vendor/cann_metrics.py": "native.session.launch_log_enable(0, True)\nnative.mthreads.x()\n",
                      "base.py": "native.cann.npu_devices()\n", "interpreter.py": "native.core.monotonic_ns()\n"})
    assert sorted(foreign_submodules(str(tmp_path))) == [
        "base.py: _native.cann", "device_timer/__init__.py: _native.nvidia",
        "vendor/cann_metrics.py: _native.mthreads"]


def test_each_backend_calls_only_its_own_native_submodule():
    backends_dir = os.path.join(ROOT, "src", "flagtree", "profiler", "backends")
    assert _owner("nvidia/counters.py") == "nvidia" and os.path.isdir(os.path.join(backends_dir, "nvidia"))
    assert foreign_submodules(backends_dir) == []


# `from . import _native`, `from .._native import f`, `import flagtree.profiler._native`
IMPORTS_NATIVE = re.compile(r"^\s*(?:from\s+\S+\s+import\s+(?:\w+(?:\s+as\s+\w+)?\s*,\s*)*_native\b"
                            r"|from\s+\S*\b_native\b|import\s+\S*\b_native\b)", re.M)


def test_the_package_reaches_the_native_module_through_native_core_only():
    package = os.path.join(ROOT, "src", "flagtree", "profiler")
    assert IMPORTS_NATIVE.search("from .. import _native\n") and IMPORTS_NATIVE.search("  from .._native import f\n")
    assert IMPORTS_NATIVE.search("from flagtree.profiler import session, _native\n")
    assert not IMPORTS_NATIVE.search("from ...native_core import native as _native\n")
    importers = []
    for folder, _, files in os.walk(package):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as source:
                    if IMPORTS_NATIVE.search(source.read()):
                        importers.append(os.path.relpath(os.path.join(folder, name), package).replace(os.sep, "/"))
    assert importers == ["native_core.py"]


@pytest.mark.parametrize("name", ["mthreads", "cann"])
def test_a_dialect_backend_finds_its_tracer_in_its_own_submodule(name):
    # The dialect base reaches the tracer by the backend's name (getattr), which the source check
    # above cannot read: the submodule of that name holds the tracer under the backend's prefix.
    backend = get_backend(name)
    tracer = getattr(_native, backend.name)
    for call in ("acquire", "release", "flush", "dropped", "stats", "library", "set_buffer_limit"):
        assert callable(getattr(tracer, f"{backend.prefix}_{call}")), call
    others = [sub for sub in BACKEND_SUBMODULES if sub != name]
    assert not [sub for sub in others if hasattr(getattr(_native, sub), f"{backend.prefix}_acquire")]
