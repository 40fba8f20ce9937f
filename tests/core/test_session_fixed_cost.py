"""What a session no longer redoes at every start and finalize, and when it must redo it: the
output folder's write check (paths.check_writable) and the launcher's rank variables
(distributed/ranks.current)."""
import os
import sys
import tempfile
import types

import pytest

from flagtree.profiler import paths
from flagtree.profiler.distributed import ranks
from support.triton_needs import needs_compiler_hooks


@pytest.fixture
def probes(monkeypatch):
    """The temporary files check_writable makes, counted by folder."""
    made = []
    real = tempfile.TemporaryFile

    def counted(*args, dir=None, **kwargs):
        made.append(dir)
        return real(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "TemporaryFile", counted)
    monkeypatch.setattr(paths, "_writable", {})
    return made


def test_a_folder_that_took_a_file_is_not_tried_again(tmp_path, probes):
    for _ in range(3):
        paths.check_writable(str(tmp_path / "run"))
    assert probes == [str(tmp_path)]


def test_a_changed_mode_or_a_new_folder_at_the_path_is_tried_again(tmp_path, probes):
    folder = tmp_path / "out"
    paths.check_writable(str(folder / "run"))  # made here
    os.chmod(folder, 0o700)
    paths.check_writable(str(folder / "run"))
    os.rmdir(folder)
    paths.check_writable(str(folder / "run"))  # made again: another inode
    assert probes == [str(folder)] * 3 and folder.is_dir()


def test_a_file_put_where_the_folder_was_fails_at_start(tmp_path, probes):
    folder = tmp_path / "out"
    paths.check_writable(str(folder / "run"))
    os.rmdir(folder)
    folder.write_text("not a folder")
    with pytest.raises(ValueError, match="cannot write the profile"):
        paths.check_writable(str(folder / "run"))


def test_the_kept_answers_stay_few(tmp_path, probes):
    for i in range(paths._WRITABLE_KEPT + 5):
        paths.check_writable(str(tmp_path / f"d{i}" / "run"))
    assert len(paths._writable) <= paths._WRITABLE_KEPT


@pytest.fixture
def no_launcher(monkeypatch):
    for name in ranks._ALL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(ranks, "_cache", {})


def test_launcher_variables_are_parsed_once_per_value_and_a_later_rank_is_seen(no_launcher, monkeypatch):
    reads = []
    real = ranks._from_environment
    monkeypatch.setattr(ranks, "_from_environment", lambda: reads.append(1) or real())
    assert ranks.current() is None and ranks.current() is None and reads == []  # no rank variable set
    monkeypatch.setenv("RANK", "not a rank")
    assert ranks.current() is None and ranks.current() is None and len(reads) == 1
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert ranks.current().rank == 3 and ranks.current().world_size == 4 and len(reads) == 2
    monkeypatch.setenv("SLURM_PROCID", "5")  # RANK wins, as before; a new key, read once more
    assert ranks.current().rank == 3 and len(reads) == 3


def test_a_process_group_initialised_later_is_still_seen(no_launcher, monkeypatch):
    group = {"up": False}
    dist = types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: group["up"],
                                 get_rank=lambda: 1, get_world_size=lambda: 2)
    monkeypatch.setitem(sys.modules, "torch.distributed", dist)
    assert ranks.current() is None
    group["up"] = True
    info = ranks.current()
    assert (info.rank, info.world_size, info.source) == (1, 2, "torch.distributed")


@needs_compiler_hooks
def test_the_scopes_route_and_proton_bindings_are_found_once_and_a_missing_one_is_asked_again(monkeypatch):
    from flagtree.profiler.backends.base import BackendUnavailable
    from flagtree.profiler.kernel_scopes import compiler_hook
    from flagtree.profiler.triton_glue import compiler_points

    asked = []
    real_route, real_libtriton = compiler_points.point_route, compiler_points.libtriton
    monkeypatch.setattr(compiler_hook, "_found", {})
    monkeypatch.setattr(compiler_points, "point_route", lambda: asked.append("route") or real_route())
    monkeypatch.setattr(compiler_points, "libtriton", lambda name: asked.append(name) or real_libtriton(name))
    assert compiler_hook.route() == compiler_hook.route() == real_route()
    assert compiler_hook.triton_proton() is compiler_hook.triton_proton()
    assert asked == ["route", "proton"]
    monkeypatch.setattr(compiler_hook, "_found", {})  # a Triton without the point: not kept
    monkeypatch.setattr(compiler_points, "point_route", lambda: asked.append("route") or None)
    for _ in range(2):
        with pytest.raises(BackendUnavailable, match="no compiler instrumentation point"):
            compiler_hook.route()
    assert asked == ["route", "proton", "route", "route"]


@needs_compiler_hooks
def test_the_scopes_pipelines_ask_the_target_s_architecture_only_when_lowering(monkeypatch):
    from flagtree.profiler.kernel_scopes import compiler_hook
    from flagtree.profiler.kernel_scopes.options import InstrumentationOptions

    asked = []
    monkeypatch.setattr(compiler_hook, "current_arch", lambda: asked.append(1) or 90)
    pipelines = compiler_hook._Pipelines(InstrumentationOptions())
    assert asked == []
    assert pipelines.arch == 90 and pipelines.arch == 90 and asked == [1]
    assert compiler_hook._Pipelines(InstrumentationOptions(), 80).arch == 80 and asked == [1]
