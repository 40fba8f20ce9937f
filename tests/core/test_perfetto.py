"""data="perfetto": the native protobuf TrackEvent writer, decoded with the generated classes of
the `perfetto` package (a real parser) and compared with the Chrome trace of the same run."""
import os

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from support.kernels import launch_add, tensors
from support.profiles import load_json

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
        slot = _native.session.session_create(0, 2 if data == "perfetto" else 1)
        _native.context.scope_enter(_native.core.intern("step"))
        for i in range(20_000):
            _native.testing.launch(i + 1, False)
            _native.testing.record(i + 1, "kernel_a" if i % 2 else "kernel_b", 1000 + 10 * i, 1005 + 10 * i, 0)
        _native.context.scope_exit()
        _native.dump.session_write(slot, str(tmp_path / f"t.{data}"), pid=os.getpid())
        _native.session.session_remove(slot)
    size_pf = os.path.getsize(tmp_path / "t.perfetto")
    assert size_pf * 3 <= os.path.getsize(tmp_path / "t.trace")
    _, events = decode(tmp_path / "t.perfetto")
    assert sum(e["cat"] == ["kernel"] for e in events) == 20_000


def displayed_slices(events):
    """The slices as a timestamp-ordered reader builds them (Perfetto's: a stable sort by
    timestamp, then a stack per track), each checked against the slice the writer meant: an
    end belongs to the last begin written on its track. A mis-nested track shows a slice with
    another's end; returns (begin, duration) per slice."""
    written, open_on = {}, {}
    for i, e in enumerate(events):
        if e["type"] == SLICE_BEGIN:
            open_on[e["track"]] = i
        elif e["type"] == SLICE_END:
            written[i] = open_on.pop(e["track"])  # the writer ends a slice right after beginning it
    stacks, out = {}, []
    for i in sorted(range(len(events)), key=lambda i: events[i]["ts"]):  # stable: file order at ties
        e = events[i]
        if e["type"] == SLICE_BEGIN:
            stacks.setdefault(e["track"], []).append(i)
        elif e["type"] == SLICE_END:
            shown = stacks[e["track"]].pop()
            assert shown == written[i], f"{events[shown]['name']} shown with the end of {events[written[i]]['name']}"
            out.append((events[shown], e["ts"] - events[shown]["ts"]))
    assert all(not s for s in stacks.values())
    return out


def session_pair(tmp_path):
    profiler.start(str(tmp_path / "pf"), data="perfetto")
    profiler.start(str(tmp_path / "ct"), data="trace")


def same_kernels_as_chrome(tmp_path, shown):
    """The kernels of the Chrome trace of the same session, as (name, duration ns, context,
    correlation), equal those shown from the .pftrace."""
    chrome = load_json(tmp_path / "ct.chrome_trace")["traceEvents"]
    theirs = sorted((e["name"], round(e["dur"] * 1000), e["args"]["context"], e["args"]["correlation"])
                    for e in chrome if e.get("cat") == "kernel")
    ours = sorted((k["name"], d, k["args"]["context"], k["args"]["correlation"])
                  for k, d in shown if k["cat"] == ["kernel"])
    assert ours == theirs
    return ours


def test_kernels_that_overlap_on_a_stream_get_lanes_and_none_is_dropped(tmp_path):
    # (name, start, end): b overlaps a, c lies within both, e arrives after d yet starts before
    # it (a concurrent-kernel buffer need not be in start order) and starts where a ends.
    kernels = [("a", 1000, 2000), ("b", 1500, 2500), ("c", 1600, 1700), ("d", 3000, 4000), ("e", 2000, 2100)]
    session_pair(tmp_path)
    base = _native.core.monotonic_ns() + 1_000_000  # after the launch calls, as a kernel runs
    with profiler.scope("overlap"):
        for corr, (name, start, end) in enumerate(kernels, 100):
            _native.testing.launch(corr, False)
            _native.testing.record(corr, name, base + start, base + end, 0)
    profiler.finalize()
    tracks, events = decode(tmp_path / "pf.pftrace")
    shown = displayed_slices(events)
    got = sorted((k["name"], k["ts"] - base, k["ts"] + d - base) for k, d in shown if k["cat"] == ["kernel"])
    assert got == sorted(kernels)
    on_track = {}
    for k, d in shown:
        if k["cat"] == ["kernel"]:
            on_track.setdefault(k["track"], []).append((k["ts"], k["ts"] + d))
    for spans in on_track.values():  # kernels never nest in one another: a lane holds disjoint ones
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    # Three deep at most (a, b, c): the stream's track and two overlap lanes below the same device.
    names = sorted(tracks[t].name for t in on_track)
    assert names == ["stream 0", "stream 0 (overlap 1)", "stream 0 (overlap 2)"]
    assert len({tracks[t].parent_uuid for t in on_track}) == 1
    device = tracks[tracks[next(iter(on_track))].parent_uuid]
    assert device.name == "Device 0" and device.child_ordering == pb.TrackDescriptor.EXPLICIT
    assert sorted(tracks[t].sibling_order_rank for t in on_track) == [0, 1, 2]
    assert len(same_kernels_as_chrome(tmp_path, shown)) == 5


def test_graph_replays_get_a_track_per_graph_beside_the_stream(tmp_path):
    session_pair(tmp_path)
    corr = iter(range(1000, 2000))
    with profiler.scope("capture"):  # graph A: nodes 11 and 12; graph B: node 13
        for node in (11, 12, 13):
            c = next(corr)
            _native.testing.launch(c, False)
            _native.testing.graph_node_created(c, node)
    for clone, original in ((21, 11), (22, 12), (23, 13)):  # instantiation
        _native.testing.graph_node_cloned(clone, original)
    with profiler.scope("replay"):
        for r in range(3):
            t = 10_000 * (r + 1)
            g = next(corr)
            _native.testing.launch(g, True)  # graph A: its two branches run at the same time
            _native.testing.record(g, "k1", t, t + 100, 21)
            _native.testing.record(g, "k2", t + 50, t + 300, 22)
            g = next(corr)
            _native.testing.launch(g, True)
            _native.testing.record(g, "k3", t + 20, t + 80, 23)
            c = next(corr)  # ordinary work on the same stream, under the graphs in time
            _native.testing.launch(c, False)
            _native.testing.record(c, "plain", t + 10, t + 60, 0)
    # the records above are stamped near 0, far before their launches on the host's clock
    with pytest.warns(UserWarning, match="clock is off the host's"):
        profiler.finalize()
    tracks, events = decode(tmp_path / "pf.pftrace")
    shown = displayed_slices(events)
    track_names = {}
    for k, _ in shown:
        if k["cat"] == ["kernel"]:
            track_names.setdefault(k["name"], set()).add(tracks[k["track"]].name)
    assert track_names["plain"] == {"stream 0"}
    (graph_a,) = {n.split(" (")[0] for n in track_names["k1"] | track_names["k2"]}  # all replays of A
    (graph_b,) = track_names["k3"]
    assert graph_a != graph_b and {graph_a, graph_b} == {"stream 0 graph 1", "stream 0 graph 2"}
    assert track_names["k1"] | track_names["k2"] == {graph_a, graph_a + " (overlap 1)"}
    parents = {tracks[k["track"]].parent_uuid for k, _ in shown if k["cat"] == ["kernel"]}
    assert len(parents) == 1 and tracks[parents.pop()].name == "Device 0"
    assert len(same_kernels_as_chrome(tmp_path, shown)) == 12
    contexts = {k["name"]: k["args"]["context"] for k, _ in shown if k["cat"] == ["kernel"]}
    assert contexts["k3"] == "replay/<captured_at>/capture" and contexts["plain"] == "replay"
    # Each replayed kernel keeps its flow from the graph launch.
    launches = [f for e in events if e["type"] == INSTANT for f in e["flows"]]
    assert sorted(launches) == sorted(f for k, _ in shown if k["cat"] == ["kernel"] for f in k["ends"])
    assert len(launches) == 12


def test_a_packet_too_large_for_the_direct_path_still_decodes(tmp_path):
    # A 100 KB scope name makes the packet that interns it larger than the writer's in-buffer
    # bound: it goes out in pieces, beside packets written directly.
    long_name = "s" * 100_000
    session_pair(tmp_path)
    with profiler.scope(long_name):
        _native.testing.launch(7, False)
        _native.testing.record(7, "k", 100, 200, 0)
    # the records above are stamped near 0, far before their launches on the host's clock
    with pytest.warns(UserWarning, match="clock is off the host's"):
        profiler.finalize()
    tracks, events = decode(tmp_path / "pf.pftrace")
    shown = displayed_slices(events)
    assert sorted(b["name"] for b, _ in shown) == ["k", long_name]
    assert [k["args"]["context"] for k, _ in shown if k["name"] == "k"] == [long_name]
    same_kernels_as_chrome(tmp_path, shown)
