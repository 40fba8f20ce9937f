"""The mapping of the device timer's global timer onto the profile's monotonic clock: the offset a
session's records are placed with, and finalize's check of it (clock_probe.cpp probes both ways).

A session starts with the offset the previous session's finalize probed, without probing again,
when that probe is younger than REUSE_NS and the ring it was taken on is still the one running
(kept between sessions, the same size): a probe costs a session's start a visible part of its fixed
cost, and two probes that close apart agree to well within their uncertainty. Otherwise the ring
is started (or kept) and probed. Finalize always probes: its drift from the offset the session
used is in the metadata either way, with the offset's age at start
(docs/reference/device-timer.md)."""

# How old finalize's probe may be for the next session's start to use it: a session per step of
# a loop finds it a step old.
REUSE_NS = 100_000_000


class RingClock:
    def __init__(self):
        self.at_start = None  # the offset the running session uses: the probe's dict, with age_ns
        self._last = None  # (monotonic ns when probed, the probe's dict, the ring's key)
        self._key = None  # the running ring's (slots, batch, graph records)

    def start(self, native, start_ring, key):
        """Starts or keeps the ring (`start_ring(*key)`, key = (slots, batch, graph records)) and
        sets the offset the session's records are placed with."""
        last, now = self._last, native.core.monotonic_ns()
        if (last is not None and last[2] == key and now - last[0] < REUSE_NS
                and native.device_timer.device_timer_running()):
            native.device_timer.device_timer_set_clock(last[1]["offset_ns"])
            self.at_start = {**last[1], "age_ns": now - last[0]}
        else:
            self._last = None
            self.at_start = {**start_ring(*key), "age_ns": 0}
        self._key = key
        return self.at_start

    def forget(self):
        """The ring was freed: the next session probes."""
        self._last = None

    def facts(self, native):
        """The metadata's clock facts: the offset used (between the two one-way bounds), its age
        at start, the drift a probe now finds, and the host real-time clock's distance from it."""
        start = self.at_start or {}
        facts = {"device_timer_clock_offset_ns": start.get("offset_ns"),
                 "device_timer_clock_uncertainty_ns": start.get("uncertainty_ns"),
                 "device_timer_clock_realtime_minus_probe_ns": start.get("realtime_minus_probe_ns"),
                 "device_timer_clock_probe_age_ns": start.get("age_ns")}
        try:
            end = native.device_timer.device_timer_check_clock()
        except RuntimeError as error:
            self._last = None
            facts["device_timer_clock_check"] = f"not measured: {error}"
            return facts
        self._last = (native.core.monotonic_ns(), dict(end), self._key)
        facts["device_timer_clock_drift_ns"] = end["offset_ns"] - start.get("offset_ns", end["offset_ns"])
        facts["device_timer_clock_check_uncertainty_ns"] = end["uncertainty_ns"]
        return facts
