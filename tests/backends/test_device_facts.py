"""The CUDA device facts of the nvidia backend (backends/nvidia.py _DeviceFacts over
csrc/backends/nvidia/device_facts.cpp): queried once per process, on a native thread started at
the first session's start (the driver's clock attributes cost about 1 ms), taken at finalize; a
failed query is raised to the caller and not kept. The native side runs against
tests/standins/cuda_driver_standin.c, a libcuda stand-in, in a child process (the driver, once
loaded, stays for the process)."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from flagtree.profiler import _native
from flagtree.profiler.backends.nvidia import backend as nvidia
from standins import build_standin

FACTS = [{"index": 0, "name": "Fake GPU", "arch": "90", "num_sms": 132, "clock_rate": 1980000,
          "memory_clock_rate": 2619000, "bus_width": 6144}]


class FakeNative:
    """The two native calls _DeviceFacts makes, answering from a list (the module and its nvidia
    submodule in one)."""

    def __init__(self, answers):
        self.nvidia = self
        self.answers = list(answers)
        self.prefetches = 0
        self.takes = 0

    def cuda_devices_prefetch(self):
        self.prefetches += 1

    def cuda_devices_take(self):
        self.takes += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


@pytest.fixture
def fake(monkeypatch):
    def install(*answers):
        native = FakeNative(answers)
        monkeypatch.setattr(nvidia, "native", native)
        monkeypatch.setattr(nvidia, "_device_facts", nvidia._DeviceFacts())
        return native
    return install


def test_one_prefetch_one_take_and_every_later_call_reuses_the_answer(fake):
    native = fake(FACTS)
    nvidia._device_facts.prefetch()
    nvidia._device_facts.prefetch()  # a second session start while the first query runs
    assert nvidia.cuda_devices() == FACTS
    assert nvidia.cuda_devices() is nvidia.cuda_devices()
    nvidia._device_facts.prefetch()  # answered already: no new query
    assert (native.prefetches, native.takes) == (1, 1)


def test_without_prefetch_the_facts_are_taken_directly(fake):
    native = fake(FACTS)
    assert nvidia.cuda_devices() == FACTS
    assert (native.prefetches, native.takes) == (0, 1)


def test_a_failed_query_is_raised_once_then_asked_again(fake):
    native = fake(RuntimeError("no CUDA driver"), FACTS)
    nvidia._device_facts.prefetch()
    with pytest.raises(RuntimeError, match="no CUDA driver"):
        nvidia.cuda_devices()
    assert nvidia.cuda_devices() == FACTS  # not kept: the next call asks the driver
    assert native.takes == 2
    nvidia._device_facts.prefetch()
    assert native.prefetches == 1  # answered: nothing more to prefetch


def test_backend_facts_survive_a_machine_without_a_driver(fake):
    fake(RuntimeError("no CUDA driver"))
    nvidia._device_facts.prefetch()
    assert nvidia.NvidiaBackend().device_info() == {}


def test_a_forked_child_starts_over(fake):
    fake(FACTS)
    nvidia._device_facts.prefetch()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a fresh, empty record (its query would ask its own driver)
        fresh = nvidia._device_facts._devices is None and not nvidia._device_facts._pending
        os.write(write, b"1" if fresh else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    assert nvidia.cuda_devices() == FACTS  # the parent's prefetch is untouched


def test_native_prefetch_without_a_driver_raises_at_take_and_keeps_nothing():
    if _native.nvidia.cuda_driver_version():
        pytest.skip("this machine has a CUDA driver")
    _native.nvidia.cuda_devices_prefetch()
    with pytest.raises(_native.LibraryNotFound, match="libcuda"):
        _native.nvidia.cuda_devices_take()
    with pytest.raises(_native.LibraryNotFound):  # no prefetch left: asked again, fails again
        _native.nvidia.cuda_devices_take()


CHILD = textwrap.dedent(r'''
    import ctypes, json, os, sys, threading
    from flagtree.profiler import _native
    driver = ctypes.CDLL("libcuda.so.1")  # the stand-in, found through LD_LIBRARY_PATH
    out = {"main_tid": threading.get_native_id()}
    driver.standin_close_gate()  # holds this process's device queries until opened
    _native.nvidia.cuda_devices_prefetch()
    out["returned_while_held"] = True  # prefetch did not wait for the held query
    while driver.standin_waiting() == 0:  # the query reached the driver on its own thread
        pass
    out["query_tid"] = driver.standin_last_query_tid()
    if sys.argv[1] == "fork":
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # no query thread here, the parent's may hold the slot's lock: ask anew
            os.write(write, json.dumps(_native.nvidia.cuda_devices_take()).encode())
            os._exit(0)
        os.close(write)
        child = b""
        while chunk := os.read(read, 65536):
            child += chunk
        os.waitpid(pid, 0)
        out["child_facts"] = json.loads(child)
    driver.standin_open_gate()
    out["facts"] = _native.nvidia.cuda_devices_take()
    out["queries"] = driver.standin_queries()
    print(json.dumps(out))
''')


@pytest.fixture(scope="module")
def driver_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cuda_driver")
    build_standin("cuda_driver_standin.c", folder, "libcuda.so.1")
    return folder


def run_child(driver_folder, variant):
    env = dict(os.environ, LD_LIBRARY_PATH=f"{driver_folder}:{os.environ.get('LD_LIBRARY_PATH', '')}")
    done = subprocess.run([sys.executable, "-c", CHILD, variant], capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


STANDIN_FACTS = [{"index": 0, "name": "Stand-in GPU", "arch": "90", "num_sms": 132, "clock_rate": 1980000,
                  "memory_clock_rate": 2619000, "bus_width": 6144}]


def _without_extras(facts):
    return [{k: d[k] for k in STANDIN_FACTS[0]} for d in facts]


def test_native_prefetch_queries_on_its_own_thread_and_take_waits_for_it(driver_folder):
    out = run_child(driver_folder, "plain")
    assert out["returned_while_held"]
    assert out["query_tid"] != out["main_tid"]
    assert _without_extras(out["facts"]) == STANDIN_FACTS
    assert out["queries"] == 1


def test_a_child_forked_during_the_native_query_asks_its_own_driver(driver_folder):
    out = run_child(driver_folder, "fork")
    assert _without_extras(out["child_facts"]) == STANDIN_FACTS
    assert _without_extras(out["facts"]) == STANDIN_FACTS
    assert out["queries"] == 1  # the parent's count: its one prefetched query
