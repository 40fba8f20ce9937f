"""While no device-timer session is active, Triton's two compiler knobs the route sets (the
stages inspection hook, instrumentation_mode) are back to what they were before it, so that
JITFunction.run launches the plain kernel with nothing of ours per launch; they come back for an
active session and for every CUDA graph capture. Real Triton knobs; a real device_timer session
on the stand-in target with the ring on the host (test_launch_sight.py)."""
import pytest
import triton
from triton.compiler.compiler import CompiledKernel

import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.backends.device_timer import compiler_hook, graph_replays
from flagtree.profiler.backends.device_timer.compile_pause import CompilePause
from flagtree.profiler.triton_glue import stages
from test_launch_sight import device  # noqa: F401 (fixture)

PLAIN = (None, "")
TRITONS_RUN = CompiledKernel.__dict__["run"]


def _knobs():
    return triton.knobs.runtime.add_stages_inspection_hook, triton.knobs.compilation.instrumentation_mode


@pytest.fixture
def plain_knobs():
    saved = stages.compiler_knobs()
    stages.set_compiler_knobs(PLAIN)
    yield
    stages.set_compiler_knobs(saved)


def _ours():
    def hook(*args, **kwargs):
        return "", "ours"

    stages.set_compiler_knobs((hook, "ours-mode"))
    return stages.compiler_knobs()


def test_the_knobs_follow_activity_and_captures(plain_knobs):
    ours = _ours()
    pause = CompilePause(PLAIN, ours)
    pause.set_active(False)
    assert _knobs() == PLAIN
    pause.capture(True)  # a capture while nothing is active: its launches must carry stamps
    assert _knobs() == ours
    pause.capture(True)
    pause.capture(False)
    assert _knobs() == ours  # one capture still under way
    pause.capture(False)
    assert _knobs() == PLAIN
    pause.set_active(True)
    assert _knobs() == ours


def test_knobs_someone_else_changed_are_left_alone(plain_knobs):
    pause = CompilePause(PLAIN, _ours())
    stages.set_compiler_knobs((None, "another-tool"))
    pause.set_active(False)
    assert _knobs() == (None, "another-tool")


def test_a_schedule_between_windows_launches_with_the_knobs_of_no_profiler(tmp_path, device, plain_knobs):
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer",
                         schedule=profiler.schedule(wait=1, active=1, repeat=1))
    assert _knobs() == PLAIN  # step 0 waits
    profiler.step()
    window = _knobs()
    assert window[1].startswith(compiler_hook.MODE_PREFIX) and window[0] is not None
    profiler.deactivate(sid)
    assert _knobs() == PLAIN
    assert CompiledKernel.__dict__["run"] is TRITONS_RUN  # the kernels' own launchers, as with no profiler

    class Graph:  # as torch.cuda.CUDAGraph is wrapped while the ring runs
        def capture_begin(self):
            self.during = _knobs()

        def capture_end(self):
            pass

        def replay(self):
            pass

    assert graph_replays.install(_native, cls=Graph)
    graph = Graph()
    Graph.capture_begin(graph)
    Graph.capture_end(graph)
    assert graph.during == window and _knobs() == PLAIN
    profiler.activate(sid)
    assert _knobs() == window and CompiledKernel.__dict__["run"] is not TRITONS_RUN
    profiler.finalize(sid)
    assert _knobs() == PLAIN and CompiledKernel.__dict__["run"] is TRITONS_RUN  # the route's own undo
