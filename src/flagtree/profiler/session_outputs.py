"""What a session writes: its parts while it runs, and at finalize its profile and metadata.
A run of several data kinds (run_group.py) writes each kind's profile and one metadata.

Order at finalize: the old metadata goes first, the new one is written last, once the profile is
in place. An interruption in between leaves a profile without metadata, never a profile beside
the metadata of another run. File names: paths.py; every file through the writers (atomic).

Parts: the caller's thread takes a closed window's data out of the session and the writer thread
(part_writer.py) writes it; finalize waits for those before it writes the last part itself.
"""
import functools
import warnings

from .common.safe_text import safe
from .native_core import native
from .run_group import lost_launches, members, run_facts
from . import part_writer
from .part_writer import PartJob
from .schedule_steps import part_steps
from .writers.atomic import remove
from .writers.metadata import build_metadata, metadata_json, write_metadata
from .writers.profile import CLOCK_WARN_NS, device_clock_shift, profile_request, write_profile


def write_parts(sessions, open_sessions, defer=False):
    """Ends the current part of each of `sessions` and hands it to the writer thread
    (part_writer.py); returns the paths, written there shortly after. Every open session's
    backend is flushed first (not only the targets'): graph launches made before then have all
    their records delivered and can be forgotten. With `defer` (a schedule's window, its sessions
    deactivated) and backends that allow it, the flush and the take happen on the writer thread:
    the caller only hands the part over."""
    began = native.core.monotonic_ns()
    wait_for_closes(sessions)  # an earlier window's close, still on the writer thread, comes first
    backends = list({id(s.backend): s.backend for s in open_sessions}.values())
    if defer and all(impl.flush_off_thread for impl in backends):
        return _hand_over_deferred([m for s in sessions for m in members(s)], backends, began)
    for impl in backends:
        impl.flush()
    native.session.prune_graph_launches(began)
    return [_hand_over_part(m, began) for s in sessions for m in members(s)]


def wait_for_closes(sessions):
    """Returns once the deferred closes of `sessions`' parts have run on the writer thread: before
    their next window opens, another part is taken, or they are finalized or closed."""
    part_writer.wait_closed(j for s in sessions for m in members(s) for j in m.part_jobs[-1:])


def _close_part(s, other, backends, began):
    """A deferred close on the writer thread: the backends flushed (the first part of a run only),
    then the part taken and what its writer is told (a trace's clock shift needs the records)."""
    for impl in backends:
        impl.flush()
    if backends:
        native.session.prune_graph_launches(began)
    return native.dump.session_take_part(s.slot), profile_request(s, other)


def _hand_over_deferred(targets, backends, began):
    """The parts of `targets` handed over untaken: the writer thread flushes once (the first
    part's close) and takes each, in order."""
    paths = []
    for k, s in enumerate(targets):
        path, steps, other = _next_part(s)
        take = functools.partial(_close_part, s, other, backends if k == 0 else [], began)
        _submit(s, PartJob(s, path, steps, take=take), began)
        paths.append(path)
    return paths


def _next_part(s):
    """The next part's path, steps and what its file says of itself."""
    number = s.earlier_parts + len(s.part_jobs) + 1
    path = s.part_path(number)
    steps = part_steps(s)
    other = {"name": s.name, "part": number, "session": s.id, "run_id": s.run_id}
    if steps is not None:  # a scheduled session: the steps of the active window this part holds
        other["steps"] = steps
    return path, steps, other


def _hand_over_part(s, began):
    """On the caller's thread, only what is ordered with the program: the part's data taken out
    of the session (the flush is done); `began`: when the window closed."""
    path, steps, other = _next_part(s)
    job = PartJob(s, path, steps, native.dump.session_take_part(s.slot), profile_request(s, other))
    _submit(s, job, began)
    return path


def _submit(s, job, began):
    s.part_jobs.append(job)
    s.parts.append(job.path)
    s.part_steps.append(job.steps)
    job.queue_wait_ns = part_writer.submit(job)
    job.caller_ns = native.core.monotonic_ns() - began


def write_part(s, device_shift_ns=None):
    """Finalize's last part, written here. `device_shift_ns`: what the metadata states."""
    path, steps, other = _next_part(s)
    job = PartJob(s, path, steps)
    began = native.core.monotonic_ns()
    write_profile(s, path, part=True, other_data=other, device_shift_ns=device_shift_ns)
    job.write_ns = job.caller_ns = native.core.monotonic_ns() - began
    s.part_jobs.append(job)
    s.parts.append(path)
    s.part_steps.append(steps)
    return path


def warn_of_failed_parts(sessions):
    """Warns once of each part of `sessions` whose write failed on the writer thread. With no
    failure, one look at an empty list (step() looks first, sparing its callers the call)."""
    if not part_writer.failed:
        return
    owners = {id(m) for s in sessions for m in members(s)}
    for job in [j for j in part_writer.failed if id(j.owner) in owners]:
        part_writer.failed.remove(job)
        warnings.warn(f"flagtree.profiler: writing part {safe(job.path)} failed, its data are lost: "
                      f"{safe(str(job.error))}", stacklevel=3)


def wait_for_parts(sessions):
    """flush_part(wait=True): returns once every part of `sessions` is written; a failed one not
    warned of yet is raised here instead (RuntimeError). Not under session.py's lock."""
    jobs = [j for s in sessions for m in members(s) for j in m.part_jobs]
    part_writer.wait(jobs)
    return [j for j in jobs if j in part_writer.failed]


def settle_parts_after_failure(s):
    """A finalize of `s` failed, maybe before write_outputs waited for its parts (the backend's
    own outputs raised): waits for them, so that none lands after finalize returned, and warns of
    those that failed."""
    wait_for_parts([s])
    warn_of_failed_parts([s])


def raise_failed_parts(failed):
    """What wait_for_parts found failed: taken off the warning list and raised (a step() on
    another thread may have warned of some meanwhile). Under session.py's lock."""
    failed = [j for j in failed if j in part_writer.failed]
    for job in failed:
        part_writer.failed.remove(job)
    if failed:
        raise RuntimeError(f"flagtree.profiler: writing part {safe(failed[0].path)} failed, its data are lost: "
                           f"{safe(str(failed[0].error))}" + (f" ({len(failed)} parts)" if len(failed) > 1 else ""))


def _settle_parts(s):
    """At finalize: waits for the run's parts on the writer thread; the failed ones leave the
    parts lists (their files are not there). Returns the failures."""
    part_writer.wait(j for m in members(s) for j in m.part_jobs)
    failed = [j for m in members(s) for j in m.part_jobs if j.error is not None]
    for job in (j for j in failed if j in part_writer.failed):  # said in finalize's raise instead
        part_writer.failed.remove(job)
    for m in members(s):
        m.parts = m.parts[:m.earlier_parts] + [j.path for j in m.part_jobs if j.error is None]
        m.part_steps = m.part_steps[:m.earlier_parts] + [j.steps for j in m.part_jobs if j.error is None]
    return failed


def _stats(s):
    """The counts the metadata carries: records, losses, and what the backend adds."""
    # first: settling counts the extras of parts already written, which session_stats reports
    unmatched = native.session.session_settle_extras(s.slot)
    counts = native.session.session_stats(s.slot)
    stats = {
        "kernel_records": counts["records"],
        "unattributed_records": counts["unattributed"],
        # launches whose records never arrived after the final flush
        "lost_launches": native.session.pending_launches(s.slot),
        "dropped_records": s.backend.dropped_records() - s.dropped_at_start,
    }
    if counts.get("placed_at_launch"):  # stamped off the tracer's clock: start at their launch call
        stats["records_placed_at_launch"] = counts["placed_at_launch"]
    shift = device_clock_shift(s, counts)
    if shift:  # durations stand; a trace's device events are moved (writers/profile.py)
        stats["device_clock_shift_ns"] = shift
    if unmatched:  # extras (counters, samples) whose launch never got a record
        stats["unmatched_extras"] = unmatched
    if counts.get("extras_after_part"):  # extras that came after their launch's part was taken: dropped
        stats["extras_after_part"] = counts["extras_after_part"]
    if counts.get("metric_conflicts"):  # a scope's sum and property (or text and number) of one name on one node
        stats["metric_conflicts"] = counts["metric_conflicts"]
        stats["first_metric_conflict"] = counts["first_metric_conflict"]
    stats.update(s.extra_stats)
    # each of the run's sessions counts its launches apart
    stats["lost_launches"] = lost_launches(lambda m: native.session.pending_launches(m.slot), s)
    return stats, shift


def write_outputs(s):
    """Writes a finalized run's profiles (or their last parts), one per data kind, and its one
    metadata, then warns of a clock shift or lost records."""
    s.stop_realtime_ns = native.core.realtime_ns()
    stats, shift = _stats(s)
    # Before anything here can fail: a failed finalize must not return with parts still pending
    # (they would land later, and their failures be kept for a session no step() looks at again).
    failed = _settle_parts(s)  # parts in order: the writer thread's before the last
    lost = (f"{len(failed)} parts of session {s.id} were not written, their data are lost "
            f"({safe(failed[0].path)}: {safe(str(failed[0].error))})") if failed else ""
    try:
        shifts = _write_rest(s, stats, shift, failed)
    except Exception:
        if failed:  # the raise below that says so is not reached: said beside this error
            warnings.warn(f"flagtree.profiler: {lost}", stacklevel=4)
        raise
    _warn_of_losses(s, stats, shifts)
    if failed:  # after everything else is written: what is lost, said in finalize's raise
        raise RuntimeError(f"flagtree.profiler: {lost}; metadata: failed_parts")


def _write_rest(s, stats, shift, failed):
    """write_outputs' files after the parts on the writer thread: the last parts or the profiles,
    then the metadata; `failed`: the parts whose write failed. Returns the device shifts applied."""
    remove(s.metadata_path)  # first: see the module docstring
    shifts = {m.data: (shift if m is s else device_clock_shift(m)) for m in members(s)}
    # The rest becomes the last part, no whole-run file; a trigger's window is always a part.
    for m in (m for m in members(s) if m.part_jobs or s.window is not None):
        s.written.append(write_part(m, shifts[m.data]))
    if s.part_jobs:  # one entry per entry of parts in part_steps and part_times
        stats["parts"] = [p for m in members(s) for p in m.parts]
        if s.stepping is not None:
            stats["part_steps"] = [steps for m in members(s) for steps in m.part_steps]
        stats["part_times"] = [j.times() for m in members(s) for j in m.part_jobs if j.error is None]
        stats["part_queue_waits"] = sum(1 for m in members(s) for j in m.part_jobs if j.queue_wait_ns)
    if failed:
        stats["failed_parts"] = [{"path": j.path, "error": str(j.error)} for j in failed]
    if s.stepping is not None:
        stats["schedule"] = repr(s.stepping.plan)
    if s.window is not None:  # its trigger, and every window of the armed run so far
        stats.update(s.window)
    metadata = {**build_metadata(s, s.backend.metadata_facts(), stats), **run_facts(s)}
    text = metadata_json(metadata)  # once: the .meta.json and a trace's embedded otherData
    for m in (m for m in members(s) if not m.parts):
        write_profile(m, m.output_path, other_data=metadata if m.data == "tree" else text,
                      device_shift_ns=shifts[m.data])
        s.written.append(m.output_path)
    write_metadata(s.metadata_path, text)
    s.written.append(s.metadata_path)
    return shifts


def _warn_of_losses(s, stats, shifts):
    """`shifts`: {data kind: device shift applied}."""
    # stacklevel 5: the user's finalize() call (session.finalize, its _finalize_locked, write_outputs, here).
    shift = max((v for kind, v in shifts.items() if kind != "tree"), default=0)
    if shift >= CLOCK_WARN_NS:  # a tree holds durations only: nothing is off there
        warnings.warn(f"flagtree.profiler: in session {s.id} kernel records started up to {shift / 1e6:.1f} ms "
                      f"before the calls that launched them: the tracer's clock is off the host's; the trace "
                      f"moves kernels later by that much (durations are unaffected; metadata: "
                      f"device_clock_shift_ns)", stacklevel=5)
    if stats.get("extras_after_part"):
        warnings.warn(f"flagtree.profiler: in session {s.id} the results of {stats['extras_after_part']} launches "
                      f"(hardware counters, PC samples, imports) came after the part holding the launch was "
                      f"taken, and were dropped (metadata: extras_after_part)", stacklevel=5)
    if stats.get("metric_conflicts"):
        warnings.warn(f"flagtree.profiler: in session {s.id} {stats['metric_conflicts']} scope metrics met a value of "
                      f"the same name on their node that they cannot join (first: "
                      f"{safe(stats['first_metric_conflict'])!r}: a sum and a (pty) property, or an (exc) text and a "
                      f"number); the last value given was kept (metadata: metric_conflicts)", stacklevel=5)
    # A dropped record leaves its launch without a record, so the two counts overlap: the
    # larger one is the loss.
    lost = max(stats["dropped_records"], stats["lost_launches"])
    if lost:
        warnings.warn(f"flagtree.profiler: {lost} kernel records were lost in session {s.id} "
                      f"({stats['lost_launches']} launches got no record; the vendor library reported "
                      f"{stats['dropped_records']} records dropped for lack of buffer space); raise "
                      f"FLAGTREE_PROFILER_BUFFER_SIZE (or FLAGTREE_PROFILER_BUFFER_LIMIT). Counts are in "
                      f"{safe(s.metadata_path)}", stacklevel=5)
