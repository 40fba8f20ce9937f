"""data="perfetto": the native protobuf TrackEvent writer, decoded with the generated classes of
the `perfetto` package (a real parser) and compared with the Chrome trace of the same run."""
import os

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from kernels import launch_add, tensors
from profiles import load_json

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2",
                         reason="the perfetto package (pyproject's test extra) decodes the .pftrace")

SLICE_BEGIN, SLICE_END, INSTANT = 1, 2, 3


@pytest.fixture(autouse=True)
def no_open_sessions():
    yield
    profiler.finalize()


def decode(path):
    """Tracks, and the events with every interned reference resolved."""
    trace = pb.Trace.FromString(open(path, "rb").read())
    names, categories, notes, strings, tracks, events = {}, {}, {}, {}, {}, []
    for packet in trace.packet:
        assert packet.trusted_packet_sequence_id == 1
        interned = packet.interned_data
        names.update((e.iid, e.name) for e in interned.event_names)
        categories.update((e.iid, e.name) for e in interned.event_categories)
        notes.update((e.iid, e.name) for e in interned.debug_annotation_names)
        strings.update((e.iid, e.str.decode()) for e in interned.debug_annotation_string_values)
        if packet.HasField("track_descriptor"):
            tracks[packet.track_descriptor.uuid] = packet.track_descriptor
        if packet.HasField("track_event"):
            e = packet.track_event
            args = {}
            for a in e.debug_annotations:
                key = notes[a.name_iid]
                if a.HasField("string_value_iid"):
                    args[key] = strings[a.string_value_iid]
                elif a.array_values:
                    args[key] = [v.int_value for v in a.array_values]
                else:
                    args[key] = getattr(a, a.WhichOneof("value"))
            events.append({"type": e.type, "ts": packet.timestamp, "track": e.track_uuid,
                           "name": names.get(e.name_iid), "cat": [categories[c] for c in e.category_iids],
                           "args": args, "flows": list(e.flow_ids), "ends": list(e.terminating_flow_ids)})
    return tracks, events


def slices(events, track_filter=lambda t: True):
    """Begin/end pairs per track (they must nest), as (begin event, duration ns)."""
    out, stacks = [], {}
    for e in sorted(events, key=lambda e: (e["ts"], e["type"] != SLICE_END)):
        if e["type"] == SLICE_BEGIN:
            stacks.setdefault(e["track"], []).append(e)
        elif e["type"] == SLICE_END:
            begin = stacks[e["track"]].pop()
            out.append((begin, e["ts"] - begin["ts"]))
    assert all(not s for s in stacks.values())
    return out


def test_perfetto_matches_the_chrome_trace_of_the_same_run(tmp_path):
    x, y, out = tensors()
    profiler.start(str(tmp_path / "pf"), data="perfetto")
    profiler.start(str(tmp_path / "ct"), data="trace")
    with profiler.scope("outer"):
        for _ in range(3):
            launch_add(x, y, out)
        with profiler.scope("inner"):
            launch_add(x, y, out)
    profiler.finalize()
    assert load_json(tmp_path / "pf.meta.json")["data"] == "perfetto"
    tracks, events = decode(tmp_path / "pf.pftrace")
    chrome = load_json(tmp_path / "ct.chrome_trace")["traceEvents"]

    kernels = [(b, d) for b, d in slices(events) if b["cat"] == ["kernel"]]
    chrome_kernels = sorted((e for e in chrome if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    assert len(kernels) == len(chrome_kernels) == 4
    for (begin, _), c in zip(sorted(kernels, key=lambda k: k[0]["ts"]), chrome_kernels):
        assert begin["name"] == c["name"] == "add_kernel"
        for key in ("context", "grid", "block", "registers", "device"):
            assert begin["args"][key] == c["args"][key]
        stream = tracks[begin["track"]]
        assert stream.name == f"stream {c['tid']}" and tracks[stream.parent_uuid].name.startswith("Device ")
    assert sorted(k[0]["args"]["context"] for k in kernels) == ["outer"] * 3 + ["outer/inner"]

    scopes = sorted((b["name"], d) for b, d in slices(events) if b["cat"] == ["scope"])
    assert [s[0] for s in scopes] == ["inner", "outer"]
    assert tracks[next(b for b, _ in slices(events) if b["cat"] == ["scope"])["track"]].thread.pid == os.getpid()

    launches = [e for e in events if e["type"] == INSTANT]
    assert sorted(e["name"] for e in launches) == ["launch add_kernel"] * 4
    # Every launch's flow ends at one kernel.
    assert sorted(f for e in launches for f in e["flows"]) == sorted(f for b, _ in kernels for f in b["ends"])


def test_perfetto_is_a_third_of_the_json_or_less(tmp_path):
    for data in ("perfetto", "trace"):
        slot = _native.session_create(0, 2 if data == "perfetto" else 1)
        _native.scope_enter(_native.intern("step"))
        for i in range(20_000):
            _native.testing.launch(i + 1, False)
            _native.testing.record(i + 1, "kernel_a" if i % 2 else "kernel_b", 1000 + 10 * i, 1005 + 10 * i, 0)
        _native.scope_exit()
        _native.session_write(slot, str(tmp_path / f"t.{data}"), pid=os.getpid())
        _native.session_remove(slot)
    size_pf = os.path.getsize(tmp_path / "t.perfetto")
    assert size_pf * 3 <= os.path.getsize(tmp_path / "t.trace")
    _, events = decode(tmp_path / "t.perfetto")
    assert sum(e["cat"] == ["kernel"] for e in events) == 20_000
