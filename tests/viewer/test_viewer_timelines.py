"""A timeline given to the viewer (a session's .chrome_trace or .pftrace, or any Chrome-trace
JSON or Perfetto protobuf under another name) is named as one, with what opens it: exit 2."""

import json
import shutil

import pytest


@pytest.fixture(scope="module")
def timelines(tmp_path_factory):
    """The trace and perfetto outputs of real sessions (Triton's interpreter)."""
    import flagtree.profiler as profiler
    from support.kernels import launch_add, tensors

    folder = tmp_path_factory.mktemp("timelines")
    x, y, z = tensors(256)
    out = {}
    for data in ("trace", "perfetto"):
        profiler.start(str(folder / data), data=data)
        try:
            with profiler.scope("attention"):
                launch_add(x, y, z)
        finally:
            profiler.finalize()
        (out[data],) = [p for p in folder.iterdir() if p.stem == data and not p.name.endswith(".meta.json")]
    return out


def test_a_chrome_trace_is_named_a_timeline_with_what_opens_it(viewer, timelines):
    status, out, err = viewer(timelines["trace"])
    assert status == 2 and out == "" and err.count("\n") == 1
    assert "is a Chrome-trace JSON timeline, not a tree profile" in err
    assert "https://ui.perfetto.dev" in err and "chrome://tracing" in err


def test_a_perfetto_trace_is_named_a_timeline_with_what_opens_it(viewer, timelines):
    assert timelines["perfetto"].suffix == ".pftrace"
    status, _, err = viewer(timelines["perfetto"])
    assert status == 2 and "is a Perfetto trace, not a tree profile" in err
    assert "https://ui.perfetto.dev" in err and "chrome://tracing" not in err


def test_timelines_are_recognised_by_content_under_any_name(viewer, timelines, tmp_path):
    shutil.copy(timelines["perfetto"], tmp_path / "capture.bin")
    shutil.copy(timelines["trace"], tmp_path / "capture.json")
    array = tmp_path / "events.json"  # Chrome's array form
    array.write_text(json.dumps([{"name": "k", "ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]))
    for path, kind in ((tmp_path / "capture.bin", "Perfetto trace"), (tmp_path / "capture.json", "Chrome-trace"),
                       (array, "Chrome-trace")):
        status, _, err = viewer(path)
        assert status == 2 and f"is a {kind}" in err, (path, err)


def test_other_json_is_still_not_a_tree_profile(viewer, write_profile):
    path = write_profile('{"some": "object"}')
    status, _, err = viewer(path)
    assert status == 2 and "is not a tree profile" in err and "timeline" not in err
