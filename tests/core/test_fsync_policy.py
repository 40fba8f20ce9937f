"""The outputs' fsync policy (writers/atomic.py, csrc/dump/out_file.cpp): no fsync by default, an
fsync of each file before its rename with FLAGTREE_PROFILER_FSYNC=1, for the Python writers and
the native ones alike; either way a file appears whole at its rename or not at all. And the
metadata encoded once per finalize: the .meta.json and a trace's otherData are the same text."""
import json
import os

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.writers import atomic
from flagtree.profiler.writers.metadata import metadata_json, write_metadata


@pytest.fixture
def calls(monkeypatch):
    """Every os.fsync and os.replace of the Python writers, in order: ("fsync", path of the fd)
    and ("replace", source)."""
    seen = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        seen.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        return real_fsync(fd)

    def replace(src, dst):
        seen.append(("replace", os.fspath(src)))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return seen


def _session(folder, data="trace"):
    sid = profiler.start(str(folder / "run"), backend="interpreter", data=data)
    with profiler.scope("work"):
        pass
    profiler.finalize(sid)


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    yield
    profiler.finalize()


def _write(target, writer, text):
    """`text` written to `target` through one of the atomic writers; returns `target`."""
    if writer == "write_text":
        atomic.write_text(target, text)
    else:
        with atomic.atomic_file(target) as out:
            out.write(text.encode())
    return target


@pytest.mark.parametrize("writer", ["write_text", "atomic_file"])
def test_no_fsync_by_default(tmp_path, calls, monkeypatch, writer):
    monkeypatch.delenv("FLAGTREE_PROFILER_FSYNC", raising=False)
    target = _write(tmp_path / "out.json", writer, "[1]")
    assert [kind for kind, _ in calls] == ["replace"] and json.loads(target.read_text()) == [1]


@pytest.mark.parametrize("writer", ["write_text", "atomic_file"])
def test_fsync_on_syncs_the_temporary_before_its_rename(tmp_path, calls, monkeypatch, writer):
    monkeypatch.setenv("FLAGTREE_PROFILER_FSYNC", "1")
    target = _write(tmp_path / "out.json", writer, "[2]")
    (fsync, synced), (replace, renamed) = calls
    assert (fsync, replace) == ("fsync", "replace") and synced == renamed  # the same temporary, synced first
    assert os.path.basename(renamed).startswith(".out.json.") and json.loads(target.read_text()) == [2]


@pytest.mark.parametrize("fsync", ["", "1"])
def test_interrupted_at_the_rename_leaves_the_previous_file_and_no_temporary(tmp_path, monkeypatch, fsync):
    monkeypatch.setenv("FLAGTREE_PROFILER_FSYNC", fsync)
    target = tmp_path / "run.meta.json"
    target.write_text('{"previous": true}')

    def interrupted(src, dst):  # Ctrl-C with the whole text in the temporary file
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_metadata(target, {"new": True})
    assert json.loads(target.read_text()) == {"previous": True}
    assert sorted(os.listdir(tmp_path)) == ["run.meta.json"]


def test_a_planted_link_is_replaced_not_followed_without_fsync(tmp_path, monkeypatch):
    monkeypatch.delenv("FLAGTREE_PROFILER_FSYNC", raising=False)
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (tmp_path / "out.json").symlink_to(victim)
    atomic.write_text(tmp_path / "out.json", "[3]")
    assert victim.read_text() == "keep me" and not os.path.islink(tmp_path / "out.json")


@pytest.mark.parametrize("fsync", [False, True])
def test_the_native_writers_follow_the_policy_at_every_write(tmp_path, monkeypatch, calls, fsync):
    # The policy is read at each write: a variable changed between two sessions is seen.
    monkeypatch.setenv("FLAGTREE_PROFILER_FSYNC", "0" if fsync else "1")
    _session(tmp_path / "a")
    assert _native.dump.fsync_outputs() is (not fsync)
    monkeypatch.setenv("FLAGTREE_PROFILER_FSYNC", "1" if fsync else "0")
    calls.clear()
    _session(tmp_path / "b")
    assert _native.dump.fsync_outputs() is fsync
    # the metadata (Python's write) followed the same answer
    assert [kind for kind, _ in calls] == (["fsync", "replace"] if fsync else ["replace"])
    json.loads((tmp_path / "b" / "run.chrome_trace").read_text())
    monkeypatch.delenv("FLAGTREE_PROFILER_FSYNC")
    _session(tmp_path / "c")
    assert _native.dump.fsync_outputs() is False


def test_the_metadata_text_is_the_traces_other_data(tmp_path):
    _session(tmp_path)
    text = (tmp_path / "run.meta.json").read_text()
    meta = json.loads(text)
    assert text == metadata_json(meta)  # sorted keys, one member a line
    assert len(text.splitlines()) > len(meta)
    other = json.loads((tmp_path / "run.chrome_trace").read_text())["otherData"]
    assert other == meta and meta["data"] == "trace" and meta["run_id"]


def test_a_tree_session_writes_the_same_metadata_text(tmp_path):
    _session(tmp_path, data="tree")
    text = (tmp_path / "run.meta.json").read_text()
    assert text == metadata_json(json.loads(text))
    root = json.loads((tmp_path / "run.hatchet").read_text())[0]
    assert root["run_id"] == json.loads(text)["run_id"]


@pytest.mark.parametrize("there", ["file", "link", "nothing"])
def test_a_native_output_replaces_what_was_there_whole(tmp_path, there):
    # Over a file or a link the names are exchanged and the old file removed (out_file.cpp).
    target, victim = tmp_path / "run.chrome_trace", tmp_path / "victim"
    victim.write_text("keep me")
    if there == "file":
        target.write_text('{"previous": true}')
    elif there == "link":
        target.symlink_to(victim)
    _session(tmp_path)
    trace = json.loads(target.read_text())
    assert "previous" not in trace and trace["otherData"]["data"] == "trace" and not target.is_symlink()
    assert victim.read_text() == "keep me"
    assert sorted(os.listdir(tmp_path)) == ["run.chrome_trace", "run.meta.json", "victim"]


def test_a_folder_at_a_native_output_is_left_as_it_was(tmp_path):
    target = tmp_path / "run.chrome_trace"
    target.mkdir()
    (target / "inside").write_text("kept")
    with pytest.raises(RuntimeError, match="cannot replace"):
        _session(tmp_path)
    assert (target / "inside").read_text() == "kept"
    assert sorted(os.listdir(tmp_path)) == ["run.chrome_trace"]
