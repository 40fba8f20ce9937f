"""backend="instrumentation" on a Triton with the compiler's instrumentation point but without the
``instrumentation_mode`` knob (the real 3.5.1: the mode goes in each launch's options there) is
refused with the reason, never failing later inside the install."""
import pytest

from flagtree.profiler.backends.base import BackendUnavailable
from flagtree.profiler.kernel_scopes import compiler_hook
from flagtree.profiler.triton_glue import compiler_points, versions


def test_a_triton_without_the_mode_knob_is_refused_with_the_reason(monkeypatch):
    monkeypatch.setattr(compiler_hook, "_found", {})  # asked afresh, and forgotten after the test
    monkeypatch.setattr(compiler_points, "point_route", lambda: "class_attribute")
    monkeypatch.setattr(versions, "triton_version", lambda: "3.5.1")
    monkeypatch.setattr(versions, "missing_compiler_hooks",
                        lambda: ["add_stages_inspection_hook", "compilation.instrumentation_mode"])
    with pytest.raises(BackendUnavailable, match=r"3\.5\.1 lacks triton\.knobs\.compilation\.instrumentation_mode "
                                                 r"\(needs Triton 3\.6 or later\)"):
        compiler_hook.route()
