"""The writer layer: every output iterative (any depth), atomic (temp file, rename: an
interruption or a full disk leaves the previous file or none; fsync: test_fsync_policy.py), a planted symlink replaced and
not followed, strict JSON (NaN/Infinity as null), names escaped, parts pruned natively."""
import glob
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.writers.atomic import write_json, write_text
from flagtree.profiler.writers.device_scopes import write_device_scopes
from flagtree.profiler.writers.metadata import write_metadata
from support.json_check import JsonError, check_deep_chain, check_file, load_strict, scan
from support.profiles import find, load_json, load_tree

from support.package_path import PACKAGE_ROOT as SRC  # noqa: E402  (the imported build, src/ or site-packages)
TESTS = os.path.join(os.path.dirname(__file__), "..")


@pytest.fixture(autouse=True)
def no_open_sessions():
    yield
    profiler.finalize()


def _host_kernel(name="k"):
    t = _native.core.monotonic_ns()
    _native.session.record_host_kernel(name, t, t + 500, (1, 1, 1), (32, 1, 1))


def _chain(depth, name="level"):
    level = _native.core.intern(name)
    for _ in range(depth):
        _native.context.scope_enter(level)
    _host_kernel("innermost")
    for _ in range(depth):
        _native.context.scope_exit()


def _temps(folder):
    return glob.glob(os.path.join(folder, ".*.tmp"))


# --- iterative ---------------------------------------------------------------------------

def test_tree_chain_100000_deep_writes_and_reads_back(tmp_path):
    profiler.start(str(tmp_path / "deep"))
    _chain(100_000)
    profiler.finalize()
    path = str(tmp_path / "deep.hatchet")
    nodes, deepest = check_deep_chain(path)
    assert nodes == 100_000 + 2  # ROOT, the scopes, the kernel
    # The outer list, an object and its children list for ROOT and each scope, then the kernel's
    # object, its metadata object and the grid list: the kernel really is 100,001 levels down.
    assert deepest == 1 + 2 * (100_000 + 1) + 1 + 2
    text = open(path).read()
    assert text.count('"kind":"kernel"') == 1
    assert '"name":"innermost","type":"function","kind":"kernel"},"metrics":{"count":1,' in text
    assert load_json(tmp_path / "deep.meta.json")["kernel_records"] == 1


def test_trace_chain_100000_deep_names_the_whole_path(tmp_path):
    profiler.start(str(tmp_path / "deep"), data="trace")
    _chain(100_000, "s")
    profiler.finalize()
    events = load_strict(tmp_path / "deep.chrome_trace")["traceEvents"]
    (kernel,) = [e for e in events if e.get("cat") == "kernel"]
    assert kernel["args"]["context"] == "/".join(["s"] * 100_000)
    assert kernel["args"]["call_stack"] == ["ROOT"] + ["s"] * 100_000 + ["innermost"]
    assert sum(e.get("cat") == "scope" for e in events) == 100_000


def test_hatchet_reads_a_tree_deeper_than_the_old_limit(tmp_path):
    hatchet = pytest.importorskip("hatchet")
    profiler.start(str(tmp_path / "d"))
    _chain(300)  # json.dump failed beyond ~495 levels; hatchet itself recurses, so 300 here
    profiler.finalize()
    root, _ = load_tree(tmp_path / "d.hatchet")
    frame = hatchet.GraphFrame.from_literal([root])
    assert len(frame.graph) == 302


def test_checker_rejects_what_strict_json_rejects():
    for bad in ("[NaN]", "[Infinity]", "[-Infinity]", '{"a":1,}', "[1 2]", "[", "[1]]", "[01]", '"\x01"'):
        with pytest.raises(JsonError):
            scan(bad)
    assert scan('[{"a":[1,-2.5e3,"\\u00e9",true,null]}]') == 3


# --- strict JSON and escaping ------------------------------------------------------------

def test_non_finite_metrics_are_written_as_null(tmp_path):
    profiler.start(str(tmp_path / "nan"))
    with profiler.scope("s", {"bad": math.nan, "big": math.inf, "small": -math.inf, "fine": 1.5}):
        _host_kernel()
    profiler.finalize()
    root, _ = load_strict(tmp_path / "nan.hatchet")
    metrics = find(root, "s")["metrics"]
    assert metrics["bad"] is None and metrics["big"] is None and metrics["small"] is None
    assert metrics["fine"] == 1.5


def test_non_finite_extras_in_a_trace_are_null(tmp_path):
    slot = _native.session.session_create(0, 1)  # shadow context, trace store
    try:
        _native.testing.launch(7, False)
        _native.testing.record(7, "k", 100, 200, 0)
        _native.session.session_attach(slot, 7, [("ratio", math.nan), ("ok", 2.0)])
        _native.dump.session_write(slot, str(tmp_path / "tr.chrome_trace"), pid=os.getpid())
    finally:
        _native.session.session_remove(slot)
    (kernel,) = [e for e in load_strict(tmp_path / "tr.chrome_trace")["traceEvents"] if e.get("cat") == "kernel"]
    assert kernel["args"]["ratio"] is None and kernel["args"]["ok"] == 2.0


def test_python_side_files_are_strict(tmp_path):
    write_metadata(tmp_path / "m.meta.json", {"x": math.nan, "nested": [{"y": math.inf}], "z": 1.0})
    meta = load_strict(tmp_path / "m.meta.json")
    assert meta == {"x": None, "nested": [{"y": None}], "z": 1.0}
    write_device_scopes(tmp_path / "d.device_scopes.json", [{"ph": "X", "ts": math.nan}], math.inf)
    trace = load_strict(tmp_path / "d.device_scopes.json")
    assert trace["traceEvents"] == [{"ph": "X", "ts": None}] and trace["otherData"]["clock_ghz"] is None


@pytest.mark.parametrize("data", ["tree", "trace"])
def test_names_are_escaped_and_round_trip(tmp_path, data):
    name = 'quote" back\\ tab\t nl\n bell\x07 é 漢 \U0001f600'
    profiler.start(str(tmp_path / "esc"), data=data)
    with profiler.scope(name):
        _host_kernel(name + " kernel")
    profiler.finalize()
    out = tmp_path / ("esc.hatchet" if data == "tree" else "esc.chrome_trace")
    check_file(out)
    if data == "tree":
        root, _ = load_strict(out)
        assert find(root, name, name + " kernel")["metrics"]["count"] == 1
    else:
        events = load_strict(out)["traceEvents"]
        (kernel,) = [e for e in events if e.get("cat") == "kernel"]
        assert kernel["name"] == name + " kernel" and kernel["args"]["context"] == name
        assert kernel["args"]["call_stack"] == ["ROOT", name, name + " kernel"]
        assert [e["name"] for e in events if e.get("cat") == "scope"] == [name]


# --- parts -------------------------------------------------------------------------------

def test_a_part_leaves_out_the_nodes_empty_since_the_previous_one(tmp_path):
    profiler.start(str(tmp_path / "p"))
    with profiler.scope("first"):
        with profiler.scope("inner"):
            _host_kernel()
    profiler.flush_part()
    with profiler.scope("second"):
        _host_kernel()
    profiler.finalize()
    one, _ = load_tree(tmp_path / "p.part1.hatchet")
    two, _ = load_tree(tmp_path / "p.part2.hatchet")
    assert find(one, "first", "inner", "k")["metrics"]["count"] == 1
    assert [c["frame"]["name"] for c in two["children"]] == ["second"]
    assert find(two, "second", "k")["metrics"]["count"] == 1


# --- atomic: interruptions and a full disk ----------------------------------------------

# A child that fills a trace store with `events` records, then writes it to `path`. "fsize"
# caps the size of any file it writes at 1 MiB (the kernel fails the write with EFBIG, as a
# full disk fails it with ENOSPC).
_WRITER_CHILD = textwrap.dedent("""
    import os, resource, signal, sys
    sys.path.insert(0, sys.argv[4])
    from flagtree.profiler import _native as n
    events, path, how = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    slot = n.session.session_create(0, 1)
    for i in range(events):
        n.testing.launch(i + 1, False)
        n.testing.record(i + 1, "kernel", 1000 + i, 2000 + i, 0)
    if how == "fsize":
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
    print("writing", flush=True)
    try:
        n.dump.session_write(slot, path, pid=os.getpid())
    except RuntimeError as error:
        print("failed:", error, flush=True)
        sys.exit(3)
    except KeyboardInterrupt:
        print("interrupted after the write", flush=True)
        sys.exit(4)
    print("written", flush=True)
""")


def _start_writer(path, events, how="plain"):
    return subprocess.Popen([sys.executable, "-c", _WRITER_CHILD, str(events), str(path), how, SRC],
                            stdout=subprocess.PIPE, text=True)


def _interrupt_during_write(folder, path, sig, previous):
    """Sends `sig` to a writer child once its temporary file exists; True when it was caught
    mid-write (retried with more events when the write finished first)."""
    for events in (300_000, 600_000, 1_200_000):
        child = _start_writer(path, events)
        assert child.stdout.readline().strip() == "writing"
        deadline = time.monotonic() + 60
        while not _temps(folder) and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.0005)
        if child.poll() is None and _temps(folder):
            child.send_signal(sig)
            child.communicate(timeout=120)
            return child.returncode
        child.communicate(timeout=120)
        path.write_text(previous)  # too fast: put the previous file back and retry, larger
    pytest.fail("the write always finished before it could be interrupted")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killed_during_the_write_leaves_the_previous_file(tmp_path, sig):
    path = tmp_path / "t.chrome_trace"
    previous = '{"traceEvents":[],"previous":true}'
    path.write_text(previous)
    returncode = _interrupt_during_write(str(tmp_path), path, sig, previous)
    assert returncode == -sig
    assert path.read_text() == previous  # never a truncated file
    # SIGKILL cannot clean up: at most a hidden temporary file stays beside it.
    assert all(os.path.basename(t).startswith(".t.chrome_trace.") for t in _temps(str(tmp_path)))


def test_ctrl_c_during_the_write_leaves_a_whole_file(tmp_path):
    path = tmp_path / "t.chrome_trace"
    previous = '{"traceEvents":[],"previous":true}'
    path.write_text(previous)
    returncode = _interrupt_during_write(str(tmp_path), path, signal.SIGINT, previous)
    # The native write runs to its end with the signal pending; Python then raises.
    assert returncode == 4
    data = load_strict(path)
    assert "previous" not in data and sum(e.get("cat") == "kernel" for e in data["traceEvents"]) >= 300_000
    assert not _temps(str(tmp_path))


def test_a_full_disk_leaves_the_previous_file_and_no_temporary(tmp_path):
    path = tmp_path / "t.chrome_trace"
    previous = '{"traceEvents":[],"previous":true}'
    path.write_text(previous)
    child = _start_writer(path, 20_000, "fsize")  # about 11 MB against a 1 MiB cap
    out, _ = child.communicate(timeout=120)
    assert child.returncode == 3 and "cannot write" in out and "too large" in out
    assert path.read_text() == previous
    assert not _temps(str(tmp_path))


def test_python_side_writes_fail_whole(tmp_path, monkeypatch):
    target = tmp_path / "x.meta.json"
    target.write_text('{"previous": true}')
    child = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import resource, signal, sys
        sys.path.insert(0, sys.argv[2])
        from flagtree.profiler.writers.atomic import write_json
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 16, 1 << 16))
        try:
            write_json(sys.argv[1], {"big": "x" * (1 << 20)})
        except OSError as error:
            print("failed", error.errno)
    """), str(target), SRC], capture_output=True, text=True, timeout=60)
    assert child.stdout.startswith("failed"), child.stderr
    assert json.loads(target.read_text()) == {"previous": True}
    assert not _temps(str(tmp_path))

    def interrupted(fd):  # Ctrl-C while the data is being synced (FLAGTREE_PROFILER_FSYNC=1)
        raise KeyboardInterrupt

    monkeypatch.setenv("FLAGTREE_PROFILER_FSYNC", "1")
    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_text(target, "new")
    assert json.loads(target.read_text()) == {"previous": True}
    assert not _temps(str(tmp_path))


_SESSION_CHILD = textwrap.dedent("""
    import os, sys
    os.environ["TRITON_INTERPRET"] = "1"
    sys.path.insert(0, sys.argv[3])
    import flagtree.profiler as profiler
    from flagtree.profiler import _native as n
    profiler.start(sys.argv[1], data="trace", backend="interpreter")
    for i in range(int(sys.argv[2])):
        t = n.core.monotonic_ns()
        n.session.record_host_kernel("kernel", t, t + 100, (1, 1, 1), (32, 1, 1))
    print("finalizing", flush=True)
    profiler.finalize()
    print("done", flush=True)
""")


def _run_session(base, launches):
    return subprocess.Popen([sys.executable, "-c", _SESSION_CHILD, str(base), str(launches), SRC],
                            stdout=subprocess.PIPE, text=True)


def test_a_profile_and_its_metadata_never_disagree(tmp_path):
    base = tmp_path / "run"
    first = _run_session(base, 1_000)
    first.communicate(timeout=120)
    assert first.returncode == 0
    # Killed while the second run's trace is being written: the first run's trace may stay, but
    # not beside metadata of either run that does not match it.
    second = _run_session(base, 400_000)
    assert second.stdout.readline().strip() == "finalizing"
    while not _temps(str(tmp_path)) and second.poll() is None:
        time.sleep(0.0005)
    second.kill()
    second.communicate(timeout=120)
    assert second.returncode == -signal.SIGKILL  # killed while writing, not after
    trace = load_strict(tmp_path / "run.chrome_trace")
    meta_path = tmp_path / "run.meta.json"
    if meta_path.exists():
        assert load_strict(meta_path)["start_time_ns"] == trace["otherData"]["start_time_ns"]
    else:
        assert trace["otherData"]["kernel_records"] in (1_000, 400_000)


def test_a_full_disk_at_finalize_leaves_no_mismatched_metadata(tmp_path):
    base = tmp_path / "run"
    (tmp_path / "run.chrome_trace").write_text('{"traceEvents":[],"previous":true}')
    (tmp_path / "run.meta.json").write_text('{"previous": true}')
    child = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
        exec(sys.argv[4])
    """), str(base), "20000", SRC, _SESSION_CHILD], capture_output=True, text=True, timeout=120)
    assert child.returncode != 0 and "cannot write" in child.stderr
    assert load_strict(tmp_path / "run.chrome_trace") == {"traceEvents": [], "previous": True}
    assert not (tmp_path / "run.meta.json").exists()  # the old one went first; no new one came
    assert not _temps(str(tmp_path))


# --- symlinks ----------------------------------------------------------------------------

@pytest.mark.parametrize("data", ["tree", "trace"])
def test_a_planted_symlink_is_replaced_not_followed(tmp_path, data):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ext = ".hatchet" if data == "tree" else ".chrome_trace"
    for suffix in (ext, ".meta.json"):
        victim = elsewhere / ("victim" + suffix)
        victim.write_text("keep me")
        os.symlink(victim, tmp_path / ("p" + suffix))
    profiler.start(str(tmp_path / "p"), data=data)
    _host_kernel()
    profiler.finalize()
    for suffix in (ext, ".meta.json"):
        assert (elsewhere / ("victim" + suffix)).read_text() == "keep me"
        assert not os.path.islink(tmp_path / ("p" + suffix))
        load_strict(tmp_path / ("p" + suffix))


def test_python_writers_replace_a_planted_symlink(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    os.symlink(victim, tmp_path / "d.device_scopes.json")
    write_device_scopes(tmp_path / "d.device_scopes.json", [], 1.5)
    assert victim.read_text() == "keep me"
    assert not os.path.islink(tmp_path / "d.device_scopes.json")
    assert load_strict(tmp_path / "d.device_scopes.json")["otherData"]["clock_ghz"] == 1.5
    write_json(tmp_path / "victim", {"a": 1})  # and an ordinary file is simply replaced
    assert load_strict(victim) == {"a": 1}


def test_metadata_versions_come_from_the_imported_modules_and_agree_with_the_installed_ones():
    """triton/torch versions are read from the imported modules (no scan of every installed
    distribution at the first finalize) and say what importlib.metadata says."""
    from importlib import metadata as importlib_metadata

    import torch
    import triton

    from flagtree.profiler.writers import metadata

    metadata._version.cache_clear()
    for distribution, module in (("triton", triton), ("torch", torch)):
        assert metadata._version(distribution) == module.__version__
        assert importlib_metadata.version(distribution) == module.__version__


def test_metadata_versions_of_modules_not_imported_come_from_their_installed_metadata(tmp_path, monkeypatch):
    """A process that never imported Triton still reports its version, from the name of its
    dist-info folder (no importlib.metadata import or scan at the first finalize); the first
    folder on sys.path wins, as for an import; egg-info names carry a python tag."""
    from importlib import metadata as importlib_metadata

    from flagtree.profiler.writers import metadata

    metadata.installed_versions.cache_clear()
    for distribution in ("triton", "torch", "nanobind", "pytest", "scikit-build-core"):
        try:
            expected = importlib_metadata.version(distribution)
        except importlib_metadata.PackageNotFoundError:
            continue
        assert metadata.installed_version(distribution) == expected, distribution
    first, later = tmp_path / "first", tmp_path / "later"
    (first / "Fake_Pkg-1.2.3.dist-info").mkdir(parents=True)
    (later / "fake_pkg-9.9.dist-info").mkdir(parents=True)
    (later / "eggy-0.4.1-py3.11.egg-info").mkdir()
    (later / "no_version.dist-info").mkdir()
    monkeypatch.setattr(sys, "path", [str(first), str(tmp_path / "missing"), str(later)] + sys.path)
    metadata.installed_versions.cache_clear()
    try:
        assert metadata.installed_version("fake-pkg") == "1.2.3"
        assert metadata.installed_version("eggy") == "0.4.1"
        assert metadata.installed_version("no_version") is None
        assert metadata.installed_version("not-installed-anywhere") is None
    finally:
        metadata.installed_versions.cache_clear()


def test_metadata_versions_do_not_import_importlib_metadata():
    code = ("import sys, flagtree.profiler\n"
            "from flagtree.profiler.writers import metadata\n"
            "v = metadata._version('triton')\n"
            "assert 'triton' not in sys.modules and 'importlib.metadata' not in sys.modules, sorted(sys.modules)\n"
            "print(v)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    from importlib import metadata as importlib_metadata

    assert done.stdout.strip() == importlib_metadata.version("triton")
