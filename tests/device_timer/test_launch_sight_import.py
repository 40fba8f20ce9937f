"""The inductor door of the launch sight opens when torch's inductor runtime is imported after the
sight went in (a program's first compiled call inside a session), through a finder on
sys.meta_path; and the finder is gone once the sight is taken down. A module of the same shape
stands in for torch._inductor.runtime.triton_heuristics (the real one cannot be imported twice)."""
import sys
import textwrap

from flagtree.profiler.triton_glue.launch_sight import LaunchSight

RUNTIME = '''
class CachingAutotuner:
    def __init__(self, launchers):
        self.launchers = launchers

    def run(self, *args, stream):
        return self.launchers[0](*args, stream=stream)
'''


def _counted(kernel, launcher, kind):
    return launcher, "counted here"


def test_the_door_opens_when_the_runtime_is_imported_after_the_sight(tmp_path, monkeypatch):
    (tmp_path / "standin_heuristics.py").write_text(textwrap.dedent(RUNTIME))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "standin_heuristics", raising=False)
    sight = LaunchSight(_counted, inductor_module="standin_heuristics")
    sight.install()
    try:
        assert "CachingAutotuner.run" not in sight.doors
        import standin_heuristics  # the program's first compiled call

        assert "CachingAutotuner.run" in sight.doors

        def launcher(*args, stream):
            ran.append(args)

        launcher.__name__ = "triton_poi_fused_add_0"
        ran = []
        tuner = standin_heuristics.CachingAutotuner([launcher])
        for _ in range(3):
            tuner.run(1, 2, stream=0)
        assert len(ran) == 3
        assert sight.counts() == {"triton_poi_fused_add_0": (3, "an inductor launcher of a kind not known here: not timed")}
    finally:
        sight.uninstall()
    assert not any(getattr(f, "opened", None) == sight._open_inductor for f in sys.meta_path)
    assert not hasattr(standin_heuristics.CachingAutotuner.run, "__wrapped__") and "run" not in tuner.__dict__
    assert tuner.launchers == [launcher]


def test_a_sight_taken_down_before_the_import_leaves_the_runtime_alone(tmp_path, monkeypatch):
    (tmp_path / "standin_heuristics2.py").write_text(textwrap.dedent(RUNTIME))
    monkeypatch.syspath_prepend(str(tmp_path))
    sight = LaunchSight(_counted, inductor_module="standin_heuristics2")
    sight.install()
    sight.uninstall()
    import standin_heuristics2

    assert sight.doors == [] and not hasattr(standin_heuristics2.CachingAutotuner.run, "__wrapped__")
