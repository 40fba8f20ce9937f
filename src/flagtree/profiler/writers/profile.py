"""The profile itself, written by the native writer of the session's store (csrc/dump/):
`<name>.hatchet` (tree), `<name>.chrome_trace` (trace) or `<name>.pftrace` (perfetto), whole or
as a part. Python only
supplies what the native side does not know: the device facts of a tree, the metadata a trace
embeds as `otherData`."""
import os
import sys
import warnings

from .atomic import strict_json, sync_wanted
from ..native_core import native


# A kernel cannot start before the call that launched it. A tracer's record that does, by more
# than this, says the tracer's clock is off the host's by at least that much (seen with CUPTI:
# docs/reference/outputs.md): a trace then moves its device events by it.
CLOCK_SLACK_NS = 20_000
CLOCK_WARN_NS = 1_000_000  # a shift a trace's reader is told of at finalize


def device_clock_shift(session, counts=None):
    """Nanoseconds to add to the session's device times so that no kernel starts before its
    launch call (0 when none does by more than CLOCK_SLACK_NS); `counts`: native.session.session_stats."""
    lead = (counts or native.session.session_stats(session.slot)).get("max_launch_lead_ns")
    return lead if lead is not None and lead > CLOCK_SLACK_NS else 0


def _inductor_kernels():
    """What each inductor kernel fuses, by kernel name (inductor/registry.py), when torch's inductor
    is loaded: read once per profile, written once per name in the root (what our readers use) and
    in the metadata of each kernel node of that name (what hatchet's and Proton's readers see)."""
    if "torch._inductor.codecache" not in sys.modules:
        return {}
    from ..inductor.registry import kernel_facts  # deferred: only a process that loaded inductor reads its wrappers

    try:
        return kernel_facts()
    except Exception as exc:  # noqa: BLE001 - inductor's internals moved: the profile is still written
        warnings.warn(f"flagtree.profiler: what inductor's kernels fuse could not be read ({exc!r}); "
                      "the profile is written without it", stacklevel=2)
        return {}


def _tree_request(session, other_data, device_shift_ns):
    # other_data of a tree: members of its root node, written before its frame (run_id.py);
    # a scheduled session's part also says its steps (schedule_steps.py)
    root = {"run_id": session.run_id} if session.run_id else {}
    if other_data and "steps" in other_data:
        root["steps"] = other_data["steps"]
    fused = _inductor_kernels()
    if fused:
        root["inductor_kernels"] = fused
    return {"device_info": strict_json(session.backend.device_info(), separators=(",", ":")),
            "other_data": strict_json(root, separators=(",", ":")),
            "kernel_metadata": {name: strict_json(facts, separators=(",", ":")) for name, facts in fused.items()}}


def _trace_request(session, other_data, device_shift_ns):
    # A str is the metadata's text already encoded for its file (session_outputs.py): not twice.
    text = other_data if isinstance(other_data, str) else strict_json(other_data or {}, sort_keys=True)
    return {"other_data": text,
            "origin_ns": session.start_monotonic_ns, "pid": os.getpid(),
            "device_shift_ns": device_clock_shift(session) if device_shift_ns is None else device_shift_ns}


# What each kind of data hands its native writer.
_REQUESTS = {"tree": _tree_request, "trace": _trace_request, "perfetto": _trace_request}


def profile_request(session, other_data=None, device_shift_ns=None):
    """What the native writer of the session's data is given besides the path: keyword
    arguments of ``session_write`` and of a taken part's ``write`` (part_writer.py). `other_data`:
    a dict, or (a trace's) its JSON text. Sets the native writers' fsync policy (atomic.py's)."""
    native.dump.set_fsync(sync_wanted())
    return _REQUESTS[session.data](session, other_data, device_shift_ns)


def write_profile(session, path, *, part=False, other_data=None, device_shift_ns=None):
    """Writes the session's data to `path`; with `part`, frees what was written (periodic parts:
    a tree leaves out its empty nodes and zeroes its metrics, a trace empties its events).
    `device_shift_ns`: what a trace adds to its device times (None: device_clock_shift now)."""
    request = profile_request(session, other_data, device_shift_ns)
    return native.dump.session_write(session.slot, os.fspath(path), part=part, **request)
