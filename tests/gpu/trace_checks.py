"""The one check every GPU trace test makes: each kernel starts after the call that launched it,
and within a second of it. A kernel before its launch, or far after it, is a record on another
clock than the profile's (as the counters route's kernel-replay records were)."""

from flagtree.profiler.writers.profile import CLOCK_SLACK_NS

SECOND_US = 1e6
# A tracer's clock off the host's by less than this is left as it is (writers/profile.py).
TRACER_SLACK_US = CLOCK_SLACK_NS / 1e3


def assert_kernels_follow_launches(events, slack_us=TRACER_SLACK_US):
    """`events`: a Chrome trace's traceEvents. Every launch -> kernel flow arrow is checked (its
    start at the launch call, its end at the kernel's start); returns how many. `slack_us`: how
    far before its recorded launch a kernel may start, for routes whose launch time is taken
    after the launch call returned (the device timer's, hook="triton"); a tracer's default is the
    clock disagreement the writer leaves in place."""
    starts = {e["id"]: e["ts"] for e in events if e.get("ph") == "s" and e.get("cat") == "launch"}
    ends = {e["id"]: e["ts"] for e in events if e.get("ph") == "f" and e.get("cat") == "launch"}
    assert starts and set(starts) == set(ends), "every launch has one arrow to its kernel"
    for flow, launched in starts.items():
        lead = ends[flow] - launched
        assert -slack_us <= lead < SECOND_US, \
            f"a kernel starts {lead:.1f} us after its launch call (flow {flow}): not on the profile's clock"
    return len(starts)
