"""Outputs when the disk fails part-way: ENOSPC and EIO from write() or fsync(), a failing close()
or rename() (the native writer's renameat2 exchange included), a read-only or vanished folder.
Whatever fails, no temporary file stays, the previous file at the failing output's path is kept
whole, the user is told which file and why (finalize raises; a window written in the background
is warned of and counted), and the process can start and write a new session at once.

The faults come from an LD_PRELOAD shim (tests/standins/write_faults.c) in a child process that
runs a real session on the interpreter backend: the native core is in that process, so only a
preload reaches its calls. The child turns the fault on once its session started, and off again
before the session that shows the profiler still works."""
import errno
import glob
import json
import os
import subprocess
import sys
import textwrap

import pytest

from standins import build_standin
from support.json_check import load_strict
from support.package_path import PACKAGE_ROOT as SRC

EXTENSIONS = {"tree": "hatchet", "trace": "chrome_trace", "perfetto": "pftrace"}
PREVIOUS = b'{"previous": true}'

_CHILD = textwrap.dedent("""
    import json, os, shutil, sys, time, warnings
    sys.path.insert(0, sys.argv[2])
    import flagtree.profiler as profiler
    from flagtree.profiler import _native as n, part_writer, session as sessions
    from flagtree.profiler.window_close import wait_for_windows
    folder, spec = sys.argv[1], json.loads(sys.argv[3])
    base, data, out = os.path.join(folder, "run"), spec["data"], {}

    def record(count=spec["kernels"]):
        for i in range(count):
            t = n.core.monotonic_ns()
            n.session.record_host_kernel(f"kernel{i % 7}", t, t + 100, (1, 1, 1), (32, 1, 1))

    def fault(on):
        os.environ["FTP_FAULT_OP"] = spec["op"] if on else ""

    def attempt(key, call, *args, **options):
        try:
            call(*args, **options)
        except Exception as error:
            out[key] = [type(error).__name__, str(error)]

    def start(**options):
        return profiler.start(base, data=data, backend="interpreter", **options)

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        how = spec["how"]
        if how == "finalize":
            sid = start()
            record()
            fault(True)
            attempt("raised", profiler.finalize, sid)
        elif how == "vanish":
            sid = start()
            record()
            shutil.rmtree(folder)
            attempt("raised", profiler.finalize, sid)
            os.makedirs(folder)
        elif how == "part":
            sid = start()
            record()
            fault(True)
            attempt("raised", profiler.flush_part, sid, wait=True)
            fault(False)
            record()
            attempt("finalize", profiler.finalize, sid)
        elif how == "schedule":
            sid = start(schedule=profiler.schedule(active=1))
            fault(True)
            for _ in range(3):
                record()
                profiler.step()
            attempt("raised", profiler.finalize, sid)
        elif how == "window":
            armed = profiler.arm("steps:0-1,3-3", name=base, data=data, backend="interpreter")
            fault(True)
            for step in range(5):
                record()
                profiler.step()
                if step == 1:
                    wait_for_windows()  # window 1 met the fault on the writer thread
                    fault(False)
            profiler.disarm()
            out["failed_windows"] = armed.failed_windows
        fault(False)
        time.sleep(0.2)  # a write still pending after the failure would land now
    out["warnings"] = [str(w.message) for w in seen]
    out["open"] = sessions.open_sessions()
    out["unreported"] = [job.path for job in part_writer.failed]
    fds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds += [os.readlink(f"/proc/self/fd/{fd}")]
        except OSError:
            pass
    out["open_files"] = [f for f in fds if f.startswith(folder + os.sep)]
    again = profiler.start(os.path.join(folder, "again"), data=data, backend="interpreter")
    record(50)
    profiler.finalize(again)
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    return build_standin("write_faults.c", tmp_path_factory.mktemp("shim"), "libwrite_faults.so", ["-ldl"])


@pytest.fixture
def folder(tmp_path):
    """The output folder, with a previous run's files at every path a run named "run" writes."""
    path = os.path.realpath(tmp_path / "out")
    os.makedirs(path)
    for ext in EXTENSIONS.values():
        for name in (f"run.{ext}", f"run.part1.{ext}"):
            with open(os.path.join(path, name), "wb") as f:
                f.write(PREVIOUS)
    with open(os.path.join(path, "run.meta.json"), "wb") as f:
        f.write(PREVIOUS)
    return path


def run_child(shim, folder, how, data="tree", op="write", error=errno.ENOSPC, after=0, only="", fsync=False,
              kernels=50):
    """Runs the child with `op` failing with `error` (after `after` bytes or calls) for files under
    `folder` whose name holds `only`; returns what it reports. It must end by itself, in time."""
    env = dict(os.environ, TRITON_INTERPRET="1", FTP_FAULT_DIR=folder, FTP_FAULT_ERRNO=str(error),
               FTP_FAULT_AFTER=str(after), FTP_FAULT_NAME=only, FTP_FAULT_OP="",
               # after a preload already there (libasan must come first in an ASan run)
               LD_PRELOAD=" ".join(filter(None, [os.environ.get("LD_PRELOAD"), shim])))
    env.pop("FLAGTREE_PROFILER_FSYNC", None)
    if fsync:
        env["FLAGTREE_PROFILER_FSYNC"] = "1"
    spec = {"how": how, "data": data, "op": op, "kernels": kernels}
    done = subprocess.run([sys.executable, "-c", _CHILD, folder, SRC, json.dumps(spec)], env=env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.splitlines()[-1])


def previous_kept(folder, name):
    with open(os.path.join(folder, name), "rb") as f:
        return f.read() == PREVIOUS


def assert_clean_and_usable(folder, report, data="tree"):
    """No temporary file, nothing left open or unreported, and the next session wrote whole files."""
    assert glob.glob(os.path.join(folder, ".*")) == []
    assert report["open"] == [] and report["unreported"] == [] and report["open_files"] == []
    assert load_strict(os.path.join(folder, "again.meta.json"))["kernel_records"] == 50
    if data != "perfetto":
        load_strict(os.path.join(folder, f"again.{EXTENSIONS[data]}"))
    assert os.path.getsize(os.path.join(folder, f"again.{EXTENSIONS[data]}")) > 0


def says(message, path, error):
    """The message names the file and the operating system's reason."""
    return path in message and os.strerror(error) in message


# The native writers: write() failing at once and part-way (a short write first, as a disk filling up),
# the fsync, the close, and the rename (the exchange over the previous file and the plain rename).
PROFILE_FAULTS = {
    "disk-full-at-once": dict(op="write", error=errno.ENOSPC),
    "disk-full-part-way": dict(op="write", error=errno.ENOSPC, after=1_200_000, kernels=10_000),
    "io-error-on-fsync": dict(op="fsync", error=errno.EIO, fsync=True),
    "io-error-on-close": dict(op="close", error=errno.EIO),
    "rename-fails": dict(op="rename", error=errno.EIO),
}


@pytest.mark.parametrize("data,fault", [("tree", f) for f in PROFILE_FAULTS]
                         + [(d, f) for d in ("trace", "perfetto")
                            for f in ("disk-full-part-way", "io-error-on-close", "rename-fails")])
def test_a_failed_profile_write_keeps_the_previous_profile_and_raises_with_path_and_reason(shim, folder, data, fault):
    fault = PROFILE_FAULTS[fault]
    if fault.get("kernels", 0) > 1000 and data == "tree":
        fault = dict(fault, after=1000)  # a tree of seven kernels is 2 kB: it fails part-way sooner
    target = f"run.{EXTENSIONS[data]}"
    report = run_child(shim, folder, "finalize", data=data, only=target, **fault)
    kind, message = report["raised"]
    assert kind == "RuntimeError" and says(message, os.path.join(folder, target), fault["error"])
    assert previous_kept(folder, target)
    # The old metadata goes before the profile is written (never beside another run's profile),
    # and no new one follows a profile that was not written.
    assert not os.path.exists(os.path.join(folder, "run.meta.json"))
    assert_clean_and_usable(folder, report, data)


@pytest.mark.parametrize("data", ["tree", "trace"])
def test_an_old_file_the_disk_will_not_remove_after_the_exchange_is_not_left_behind(shim, folder, data):
    # The native writer exchanges the new file with the old one, then removes the old one, now
    # under the temporary name; when that fails, the plain rename replaces it instead.
    target = f"run.{EXTENSIONS[data]}"
    report = run_child(shim, folder, "finalize", data=data, op="unlink", error=errno.EIO, only=".tmp")
    assert "raised" not in report
    assert not previous_kept(folder, target) and load_strict(os.path.join(folder, target))
    assert_clean_and_usable(folder, report, data)


@pytest.mark.parametrize("op,error,fsync", [("write", errno.ENOSPC, False), ("fsync", errno.EIO, True),
                                            ("close", errno.EIO, False), ("rename", errno.EIO, False)])
def test_a_failed_metadata_write_raises_with_its_path_and_leaves_no_stale_metadata(shim, folder, op, error, fsync):
    report = run_child(shim, folder, "finalize", op=op, error=error, after=100 if op == "write" else 0,
                       only="run.meta.json", fsync=fsync)
    kind, message = report["raised"]
    meta = os.path.join(folder, "run.meta.json")
    assert kind == "OSError" and says(message, meta, error)  # os.write's own error names no file
    assert load_strict(os.path.join(folder, "run.hatchet"))  # the profile stands; its metadata did not land
    assert not os.path.exists(meta)
    assert_clean_and_usable(folder, report)


@pytest.mark.parametrize("data,op", [("tree", "write"), ("trace", "rename")])
def test_a_failed_part_is_raised_by_flush_part_and_finalize_and_listed_in_the_metadata(shim, folder, data, op):
    part = f"run.part1.{EXTENSIONS[data]}"
    report = run_child(shim, folder, "part", data=data, op=op, error=errno.ENOSPC, only=part)
    path = os.path.join(folder, part)
    kind, message = report["raised"]
    assert kind == "RuntimeError" and says(message, path, errno.ENOSPC)
    kind, message = report["finalize"]
    assert kind == "RuntimeError" and "1 parts of session" in message and says(message, path, errno.ENOSPC)
    assert previous_kept(folder, part)
    meta = load_strict(os.path.join(folder, "run.meta.json"))
    assert [f["path"] for f in meta["failed_parts"]] == [path]
    assert meta["parts"] == [os.path.join(folder, f"run.part2.{EXTENSIONS[data]}")]
    assert_clean_and_usable(folder, report, data)


@pytest.mark.parametrize("op,error", [("write", errno.ENOSPC), ("readonly", errno.EROFS)])
def test_schedule_parts_lost_before_a_failed_finalize_are_said_and_none_lands_after_it(shim, folder, op, error):
    report = run_child(shim, folder, "schedule", op=op, error=error)
    kind, message = report["raised"]
    # ENOSPC: the last part, written by finalize itself; read-only: the old metadata's removal.
    failing = "run.part4.hatchet" if op == "write" else "run.meta.json"
    assert kind in ("RuntimeError", "OSError") and says(message, os.path.join(folder, failing), error)
    # finalize warns of the three window parts lost on the writer thread beside its own error (a
    # step() that found one failed already may have warned of that one too).
    (lost,) = [w for w in report["warnings"] if "parts of session" in w]
    assert "3 parts of session" in lost and says(lost, os.path.join(folder, "run.part1.hatchet"), error)
    assert all("writing part" in w and os.strerror(error) in w for w in report["warnings"] if w != lost)
    # The window parts failed on the writer thread before finalize returned: none was written
    # afterwards, once the fault was gone, over the previous run's file.
    assert previous_kept(folder, "run.part1.hatchet")
    assert not glob.glob(os.path.join(folder, "run.part[234].hatchet"))
    assert_clean_and_usable(folder, report)


@pytest.mark.parametrize("only", ["", "run.meta.json"])
def test_a_windows_failed_background_write_is_warned_of_and_counted(shim, folder, only):
    report = run_child(shim, folder, "window", only=only)
    assert report["failed_windows"] == 1 and "raised" not in report
    (warning,) = [w for w in report["warnings"] if "window 1 was not written" in w]
    assert says(warning, os.path.join(folder, "run.meta.json"), errno.ENOSPC)
    assert (only == "") == says(warning, os.path.join(folder, "run.part1.hatchet"), errno.ENOSPC)
    assert previous_kept(folder, "run.part1.hatchet") == (only == "")
    # The next window's metadata, written once the disk had room again, counts the lost one.
    meta = load_strict(os.path.join(folder, "run.meta.json"))
    assert meta["failed_windows"] == 1 and [w["window"] for w in meta["windows"]] == [1, 2]
    lost = [os.path.join(folder, "run.part1.hatchet")] if only == "" else []
    assert [f["path"] for f in meta.get("failed_parts", [])] == lost
    assert_clean_and_usable(folder, report)


def test_a_vanished_folder_fails_finalize_with_the_path_and_reason(shim, folder):
    report = run_child(shim, folder, "vanish")
    kind, message = report["raised"]
    assert kind == "RuntimeError" and says(message, os.path.join(folder, "run.hatchet"), errno.ENOENT)
    assert_clean_and_usable(folder, report)


@pytest.mark.parametrize("data", ["tree", "trace"])
def test_a_read_only_folder_fails_finalize_and_keeps_every_previous_file(shim, folder, data):
    report = run_child(shim, folder, "finalize", data=data, op="readonly", error=errno.EROFS)
    kind, message = report["raised"]
    assert kind in ("RuntimeError", "OSError") and folder in message and os.strerror(errno.EROFS) in message
    assert all(previous_kept(folder, name) for name in (f"run.{EXTENSIONS[data]}", "run.meta.json"))
    assert_clean_and_usable(folder, report, data)
