"""The package's structure rules, read from the source (nothing is imported): one test function a
rule. The import-circle and deferred-import rules are test_import_graph.py's; file sizes are
test_source_sizes.py's."""
import os
import textwrap

from support.import_graph import PACKAGE, import_graph, package_modules
from support.triton_internals import internal_uses

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "src")
TRITON_GLUE = f"{PACKAGE}.triton_glue"


def test_the_triton_checker_sees_every_way_into_triton_internals():
    source = textwrap.dedent("""
        import importlib, sys
        import triton
        import triton.runtime.driver
        import triton._C.libtriton as lib
        from triton.compiler import CompiledKernel
        from triton import knobs, language
        from triton.backends.nvidia.compiler import CUDABackend

        def f(name):
            triton.knobs.runtime.launch_enter_hook = None
            importlib.import_module("triton._instrumentation")
            importlib.import_module(f"triton._C.libtriton.{name}")
            sys.modules.get("triton.compiler.compiler")
            return triton.language, triton.__version__, "triton.knobs.runtime in a message"
    """)
    assert [what for _, what in internal_uses(source)] == [
        "triton.runtime.driver", "triton._C.libtriton", "triton.compiler", "triton.knobs",
        "triton.backends.nvidia.compiler", "triton.knobs.runtime.launch_enter_hook", "triton._instrumentation",
        "triton._C.libtriton", "triton.compiler.compiler"]


def test_no_module_outside_triton_glue_imports_triton_internals():
    found = []
    for module, path in sorted(package_modules(SRC).items()):
        if module == TRITON_GLUE or module.startswith(TRITON_GLUE + "."):
            continue
        with open(path, encoding="utf-8") as source:
            found += [f"{module}:{line}: {what}" for line, what in internal_uses(source.read(), path)]
    assert found == []
    glue = [m for m in package_modules(SRC) if m.startswith(TRITON_GLUE + ".")]
    assert f"{TRITON_GLUE}.launch_hooks" in glue and f"{TRITON_GLUE}.versions" in glue


def _backend_of(module):
    """The backend folder a module belongs to (backends/<name>/...), else None."""
    parts = module[len(PACKAGE) + 1:].split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "backends" else None


def test_no_backend_imports_another_backend():
    """The two kernel-compiling backends share the kernel_scopes package and import nothing of
    each other's."""
    separate = {"device_timer", "instrumentation"}
    graph, _ = import_graph(SRC)
    crossing = sorted(f"{module} -> {target}" for module, targets in graph.items() for target in targets
                      if _backend_of(module) in separate and _backend_of(target) in separate
                      and _backend_of(module) != _backend_of(target))
    assert crossing == []
    shared = f"{PACKAGE}.kernel_scopes"
    for backend in sorted(separate):
        users = [m for m, targets in graph.items() if _backend_of(m) == backend
                 and any(t == shared or t.startswith(shared + ".") for t in targets)]
        assert users, f"backend {backend} no longer uses the shared kernel_scopes package"


# The reading side: the viewer (flagtree-profiler-viewer) and the analysis API built on it.
READING = (f"{PACKAGE}.viewer", f"{PACKAGE}.analysis")
# The package root is the public API of both sides: its `read` reaches the analysis API, deferred
# until first use, so that profiling never loads the viewer.
ROOT_READS = {PACKAGE: {f"{PACKAGE}.analysis"}}


def _inside(module, packages):
    return any(module == p or module.startswith(p + ".") for p in packages)


def recording_imports_of_the_viewer(graph):
    """Sorted (module, target) pairs where a recording module imports the reading side."""
    found = []
    for module, targets in graph.items():
        if _inside(module, READING):
            continue
        allowed = ROOT_READS.get(module, set())
        found += [(module, t) for t in targets if _inside(t, READING) and t not in allowed]
    return sorted(found)


def test_the_viewer_rule_sees_a_recording_module_that_imports_the_viewer():
    graph = {f"{PACKAGE}.session": {f"{PACKAGE}.viewer.render"},
             f"{PACKAGE}.viewer.cli": {f"{PACKAGE}.common.safe_text"},
             f"{PACKAGE}.cli.command": {f"{PACKAGE}.analysis.profile"},
             PACKAGE: {f"{PACKAGE}.analysis"}}
    assert recording_imports_of_the_viewer(graph) == [
        (f"{PACKAGE}.cli.command", f"{PACKAGE}.analysis.profile"),
        (f"{PACKAGE}.session", f"{PACKAGE}.viewer.render")]


def test_no_recording_module_imports_the_viewer():
    graph, _ = import_graph(SRC)
    assert f"{PACKAGE}.session" in graph and f"{PACKAGE}.viewer.cli" in graph
    assert recording_imports_of_the_viewer(graph) == []
