"""Exit-hook order: a backend that records a launch in Triton's exit hook (tianshu) must run before
hook="triton"'s exit drops the launch's metadata, whichever was installed first and whichever way
the chain runs (Triton 3.6+ runs launch_exit_hook in reverse order of addition; 3.4/3.5 keep one
callable that we wrap). Seen on the H200: the recorder ran second and lost the metrics."""
import types

import pytest

from flagtree.profiler.triton_glue.launch_hooks import attach

knobs = pytest.importorskip("triton.knobs")


def owners():
    yield "reversed chain", types.SimpleNamespace(hook=knobs.HookChain(reversed=True))
    yield "forward chain", types.SimpleNamespace(hook=knobs.HookChain())
    yield "plain callable", types.SimpleNamespace(hook=None)


@pytest.mark.parametrize("recorder_first_installed", [True, False])
@pytest.mark.parametrize("kind, owner", list(owners()))
def test_the_recorder_runs_before_the_metadata_is_dropped(kind, owner, recorder_first_installed):
    calls = []
    recorder = lambda metadata: calls.append("record")  # noqa: E731
    dropper = lambda metadata: calls.append("drop")  # noqa: E731
    install = [lambda: attach(owner, "hook", recorder, order="first"),
               lambda: attach(owner, "hook", dropper, order="last")]
    undo = [step() for step in (install if recorder_first_installed else install[::-1])]
    owner.hook(None)
    assert calls == ["record", "drop"], kind
    for step in reversed(undo):
        step()
    calls.clear()
    if owner.hook is not None:
        owner.hook(None)
    assert calls == []
