"""When a steps trigger has its backend prepare the next window (trigger_ahead.WindowAhead): at
the pace of the steps since the last window, the backend's lead ahead of the window; never for a
backend with nothing to prepare. Driven step by step on a clock the test sets."""
import pytest

from flagtree.profiler import trigger_ahead
from flagtree.profiler.trigger_ahead import PACE_STEPS, WindowAhead


class Backend:
    def __init__(self, lead):
        self.lead, self.prepared = lead, []

    def window_lead(self):
        return self.lead

    def prepare_window(self):
        self.prepared.append(self.step)


@pytest.fixture
def clock(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(trigger_ahead.time, "perf_counter", lambda: now[0])
    return now


def walk(ahead, backend, clock, first, last, next_range, step_s):
    """Steps `first`..`last` begin, `step_s` apart, as trigger.Armed.on_step calls WindowAhead:
    only at steps from lock_from() on."""
    for step in range(first, last + 1):
        clock[0] += step_s
        backend.step = step
        if 0 <= ahead.lock_from(next_range) <= step:
            ahead.on_step(step, next_range)


def test_after_a_window_the_backend_prepares_its_lead_ahead_of_the_next(clock):
    backend = Backend(lead=0.02)
    ahead = WindowAhead(None, 2)  # arm() named no backend: the first window is not prepared
    walk(ahead, backend, clock, 0, 1, 2, 0.001)
    ahead.opened(2)  # steps 0-1 took 1 ms each
    assert not ahead.closed(backend, 3, 100)  # 96 steps of 1 ms to go, 20 ms of lead: prepare at 80
    assert ahead.lock_from(100) == 80
    walk(ahead, backend, clock, 4, 99, 100, 0.001)
    assert backend.prepared == [80]


def test_a_next_window_within_the_lead_keeps_what_the_backend_holds(clock):
    backend = Backend(lead=0.02)
    ahead = WindowAhead(backend, 2)
    walk(ahead, backend, clock, 0, 1, 2, 0.001)
    ahead.opened(2)
    assert ahead.closed(backend, 3, 10)  # 6 steps of 1 ms: nearer than 20 ms
    walk(ahead, backend, clock, 4, 9, 10, 0.001)
    assert backend.prepared == []


def test_the_first_window_is_prepared_at_the_pace_of_the_first_steps_when_the_backend_is_known(clock):
    backend = Backend(lead=0.05)
    ahead = WindowAhead(backend, 200)
    assert ahead.lock_from(200) == PACE_STEPS
    walk(ahead, backend, clock, 0, 199, 200, 0.002)  # 2 ms a step: 25 steps of lead
    assert backend.prepared == [175]


def test_a_backend_with_nothing_to_prepare_is_never_asked(clock):
    backend = Backend(lead=None)
    ahead = WindowAhead(backend, 200)
    walk(ahead, backend, clock, 0, 199, 200, 0.002)
    ahead.opened(200)
    assert not ahead.closed(backend, 200, 400)
    assert ahead.lock_from(400) == 400
    walk(ahead, backend, clock, 201, 399, 400, 0.002)
    assert backend.prepared == []


def test_a_first_window_before_its_pace_is_measured_is_not_prepared(clock):
    backend = Backend(lead=0.05)
    ahead = WindowAhead(backend, PACE_STEPS)  # no steps to measure a pace before it
    assert ahead.lock_from(PACE_STEPS) == PACE_STEPS
    walk(ahead, backend, clock, 0, PACE_STEPS - 1, PACE_STEPS, 0.002)
    assert backend.prepared == []
