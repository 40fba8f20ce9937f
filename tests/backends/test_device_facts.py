"""The CUDA device facts of the nvidia backend (backends/nvidia.py _DeviceFacts): queried once per
process, on a thread started at the first session's start (the driver's clock attributes cost
about 1 ms), taken at finalize; a failed query is raised to the caller and not cached."""
import threading
import time

import pytest

from flagtree.profiler.backends import nvidia

FACTS = [{"index": 0, "name": "Fake GPU", "arch": "90", "num_sms": 132, "clock_rate": 1980000,
          "memory_clock_rate": 2619000, "bus_width": 6144}]


class FakeNative:
    def __init__(self, answers):
        self.answers = list(answers)
        self.calls = 0
        self.threads = []

    def cuda_devices(self):
        self.calls += 1
        self.threads.append(threading.current_thread().name)
        time.sleep(0.02)  # the driver's slow clock attributes
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


@pytest.fixture
def fake(monkeypatch):
    def install(*answers):
        native = FakeNative(answers)
        monkeypatch.setattr(nvidia, "_native", lambda: native)
        monkeypatch.setattr(nvidia, "_device_facts", nvidia._DeviceFacts())
        return native
    return install


def test_prefetch_queries_once_on_a_thread_and_every_later_call_reuses_the_answer(fake):
    native = fake(FACTS)
    nvidia._device_facts.prefetch()
    nvidia._device_facts.prefetch()  # a second session start while the first query runs
    assert nvidia._cuda_devices() == FACTS
    assert nvidia._cuda_devices() is nvidia._cuda_devices()
    nvidia._device_facts.prefetch()  # answered already: no new query
    assert native.calls == 1 and native.threads == ["flagtree-device-facts"]


def test_without_prefetch_the_query_runs_in_the_caller(fake):
    native = fake(FACTS)
    assert nvidia._cuda_devices() == FACTS
    assert native.threads == [threading.current_thread().name]


def test_a_failed_prefetch_is_raised_once_then_queried_again(fake):
    native = fake(RuntimeError("no CUDA driver"), FACTS)
    nvidia._device_facts.prefetch()
    with pytest.raises(RuntimeError, match="no CUDA driver"):
        nvidia._cuda_devices()
    assert nvidia._cuda_devices() == FACTS  # not cached: the next call asks the driver
    assert native.calls == 2


def test_backend_facts_survive_a_machine_without_a_driver(fake):
    fake(RuntimeError("no CUDA driver"))
    nvidia._device_facts.prefetch()
    assert nvidia.NvidiaBackend().device_info() == {}


def test_a_forked_child_starts_over(fake):
    import os

    fake(FACTS)
    nvidia._device_facts.prefetch()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a fresh, empty record (its query would ask its own driver)
        fresh = nvidia._device_facts._devices is None and nvidia._device_facts._query is None
        os.write(write, b"1" if fresh else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    assert nvidia._cuda_devices() == FACTS  # the parent's prefetch is untouched
