"""Extras that may come after their record (counters, PC samples, imports) under a schedule: each
part keeps what came before it was taken, the store forgets the taken part's launches, and an
extra that comes after its part was taken is dropped and counted, never added to the next part.
The native launch and record paths are driven by hand, as the CUPTI backends drive them."""
import warnings

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native, session as sessions
from support.profiles import load_json, load_tree, walk

WINDOWS = 30
PLAN = dict(wait=1, active=2)  # cycles of 3 steps: one unrecorded, two in one part


@pytest.fixture(autouse=True)
def no_open_sessions():
    yield
    profiler.finalize()


def stats(slot):
    return _native.session.session_stats(slot)


def corr_of(step):
    return 1000 + 10 * step  # spaced: corr + 5 is an id no record will carry


def run_windows(tmp_path, name, data):
    """Drives WINDOWS scheduled windows; returns (session id, slot, {part path: its steps},
    number of extras that came after their part)."""
    sid = profiler.start(str(tmp_path / name), data=data, schedule=profiler.schedule(**PLAN))
    slot = sessions.find_session(sid).slot
    _native.session.session_enable_extras(slot, after_records=True)
    late = 0
    parts = {}
    window = []
    for step in range(3 * WINDOWS):
        if step % 3:  # an active step: one kernel under the step's scope
            corr = corr_of(step)
            with profiler.scope(f"step{step}"):
                _native.testing.launch(corr, False)
            t = _native.core.monotonic_ns()
            if step % 3 == 2:  # its extra before its record (held), then the record
                _native.session.session_attach(slot, corr, [("own", 1.0)])
                _native.testing.record(corr, "gemm", t, t + 10, 0)
            else:  # its record first, then its extra, and one for a launch whose record never comes
                _native.testing.record(corr, "gemm", t, t + 10, 0)
                _native.session.session_attach(slot, corr, [("own", 1.0)])
                _native.session.session_attach(slot, corr + 5, [("lost", 1.0)])
                late += 1
            window.append(step)
            if data == "tree":  # a trace keeps no kernel nodes: its extras go with its events
                assert stats(slot)["nodes_kept_for_extras"] == len(window)
        written = profiler.step(sid)
        if written:  # the window's part was taken: its launches are forgotten
            parts[written[0]] = list(window)
            assert stats(slot)["nodes_kept_for_extras"] == 0
            # dropped and counted at the part's end: the extra held for the record that never
            # came, and the previous window's late one (the last window's goes at finalize)
            assert stats(slot)["extras_after_part"] == late
            # a result of the window's first launch coming now, after its part was taken
            _native.session.session_attach(slot, corr_of(window[0]), [("late", 1.0)])
            late += 1
            window = []
    assert len(parts) == WINDOWS
    return sid, slot, parts, late


def finalize(sid):
    """Finalizes, returning the warnings' texts (checked after the parts)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        profiler.finalize(sid)
    return [str(w.message) for w in caught]


def check_counted(meta, said, late):
    assert meta["extras_after_part"] == late
    assert any(f"results of {late} launches" in text and "extras_after_part" in text for text in said), said
    # nothing held forever: each went at its part's end, none is left over as unmatched
    assert "unmatched_extras" not in meta


def test_tree_parts_keep_their_own_extras_and_drop_late_ones(tmp_path):
    sid, slot, parts, late = run_windows(tmp_path, "s", "tree")
    said = finalize(sid)
    for path, steps in parts.items():
        own = {p: n["metrics"] for p, n in walk(load_tree(path)[0]) if n["metrics"].get("own")}
        # each launch's extra in its own part, whether it came before or after its record
        assert own.keys() == {(f"step{k}", "gemm") for k in steps}, path
        assert all(m["own"] == 1.0 and m["count"] == 1 for m in own.values())
        names = {name for _, n in walk(load_tree(path)[0]) for name in n["metrics"]}
        assert "late" not in names and "lost" not in names, path
    check_counted(load_json(tmp_path / "s.meta.json"), said, late)


def test_trace_parts_keep_their_own_extras_and_drop_late_ones(tmp_path):
    sid, slot, parts, late = run_windows(tmp_path, "t", "trace")
    said = finalize(sid)
    for path, steps in parts.items():
        kernels = {e["args"]["correlation"]: e["args"] for e in load_json(path)["traceEvents"]
                   if e.get("cat") == "kernel"}
        assert sorted(kernels) == [corr_of(k) for k in steps], path
        assert all(a.get("own") == 1.0 and "late" not in a and "lost" not in a for a in kernels.values())
    # the taken parts' extras left with them: none is left over at finalize as unmatched
    check_counted(load_json(tmp_path / "t.meta.json"), said, late)


def test_a_late_record_still_finds_its_late_extra(tmp_path):
    """A record delivered out of order, after the part its id falls in was taken, is the current
    part's: an extra coming after the part boundary still joins it there."""
    sid = profiler.start(str(tmp_path / "o"), schedule=profiler.schedule(active=1))
    slot = sessions.find_session(sid).slot
    _native.session.session_enable_extras(slot, after_records=True)
    with profiler.scope("first"):
        _native.testing.launch(3001, False)
        _native.testing.launch(3002, False)
    t = _native.core.monotonic_ns()
    _native.testing.record(3002, "gemm", t, t + 10, 0)  # 3001's record is still to come
    profiler.step(sid)
    _native.session.session_attach(slot, 3001, [("own", 1.0)])
    _native.testing.record(3001, "gemm", t, t + 10, 0)
    profiler.finalize(sid)
    second = load_tree(tmp_path / "o.part2.hatchet")[0]
    own = {p: n["metrics"]["own"] for p, n in walk(second) if n["metrics"].get("own")}
    assert own == {("first", "gemm"): 1.0}
    assert "extras_after_part" not in load_json(tmp_path / "o.meta.json")
