"""What finalize tells the user once a session's files are written: a tracer clock found off the
host's (a trace moved its device events), and kernel records lost."""
import warnings

from .viewer.safe_text import safe
from .writers.profile import CLOCK_WARN_NS


def warn_after_write(s, shifts, stats):
    """`shifts`: {data kind: device shift applied}; `stats`: the run's metadata counts."""
    shift = max((v for kind, v in shifts.items() if kind != "tree"), default=0)
    if shift >= CLOCK_WARN_NS:  # a tree holds durations only: nothing is off there
        warnings.warn(f"flagtree.profiler: in session {s.id} kernel records started up to {shift / 1e6:.1f} ms "
                      f"before the calls that launched them: the tracer's clock is off the host's; the trace "
                      f"moves kernels later by that much (durations are unaffected; metadata: "
                      f"device_clock_shift_ns)", stacklevel=5)
    # A dropped record leaves its launch without a record, so the two counts overlap: the
    # larger one is the loss.
    lost = max(stats["dropped_records"], stats["lost_launches"])
    if lost:
        warnings.warn(f"flagtree.profiler: {lost} kernel records were lost in session {s.id} "
                      f"({stats['lost_launches']} launches got no record; the vendor library reported "
                      f"{stats['dropped_records']} records dropped for lack of buffer space); raise "
                      f"FLAGTREE_PROFILER_BUFFER_SIZE (or FLAGTREE_PROFILER_BUFFER_LIMIT). Counts are in "
                      f"{safe(s.metadata_path)}", stacklevel=5)
