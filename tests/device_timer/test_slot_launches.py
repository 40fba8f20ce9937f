"""The ring's per-slot store of launch contexts (csrc/backends/device_timer/slot_launches.h):
the launching thread publishes what it resolved, the worker takes it with the slot's record."""
import pytest

from flagtree.profiler import _native

FOUND, UNKNOWN, MAPPED = 0, 1, 2  # SlotLaunches::Taken


def test_each_step_of_a_launch_number_has_its_outcome():
    steps = _native.testing.slot_launches_steps()
    assert steps["published_then_taken"] is True
    assert steps["taken_twice"] == UNKNOWN
    assert steps["taken_before_its_publish"] == UNKNOWN  # the worker went past it: abandoned
    assert steps["publish_after_abandon"] is False  # so the late publish is refused
    assert steps["mapped"] == MAPPED  # a deferred launch: the profiler's map has its context
    assert steps["publish_kept_at_destruction"] is True
    assert steps["stale_launch_number"] == UNKNOWN  # the slot holds a later launch: left alone


@pytest.mark.parametrize("every, delay", [(0, 0), (1, 0), (7, 20_000), (3, 200_000)])
def test_a_launcher_and_a_worker_at_once_never_tear_a_launch(every, delay):
    """Publishes slowed down every few launches, so that the worker overtakes some of them."""
    race = _native.testing.slot_launches_race(4, 20_000, every, delay)
    assert race["torn"] == 0
    assert race["found"] + race["unknown"] == 20_000
    assert race["found"] == race["published"] and race["unknown"] == race["refused"]
    assert race["found"] > 0
