"""Where Proton's users look for Proton's words, ours carry them: an unknown session id's error
says `Session has not been initialized: <id>` beside our own sentence."""
import sys
import threading

import numpy
import pytest

import flagtree.profiler as profiler
from support.kernels import launch_add, tensors
from support.profiles import kernel_counts, load_json, load_tree


@pytest.mark.parametrize("call", [profiler.activate, profiler.deactivate, profiler.finalize])
def test_an_unknown_session_id_is_said_in_our_words_and_protons(tmp_path, call):
    session = profiler.start(str(tmp_path / "s"), backend="interpreter")
    try:
        with pytest.raises(ValueError, match=r"no (open )?profiling session 999") as raised:
            call(999)
        assert "Session has not been initialized: 999" in str(raised.value)
    finally:
        profiler.finalize(session)


@pytest.mark.parametrize("alias", [float, numpy.int64])
def test_an_id_of_another_type_than_int_names_no_session_in_any_call(tmp_path, alias):
    # 1.0 and numpy.int64(1) hash and compare as 1 (as True does): no call may take them for session 1.
    sid = _start(tmp_path / "s")
    for call in (profiler.activate, profiler.deactivate, profiler.flush_part, profiler.step, profiler.finalize,
                 profiler.context.depth):
        with pytest.raises(ValueError, match=r"(must be an int returned by start\(\)|no open profiling session)"):
            call(alias(sid))
    assert profiler.session.open_sessions() == [sid] and list(tmp_path.glob("s.*")) == []
    profiler.finalize(sid)


# Proton's keyword `session=` (beside our `session_id=`) on activate, deactivate and finalize.


def _start(path, data="tree"):
    return profiler.start(str(path), backend="interpreter", data=data)


def test_activate_deactivate_finalize_take_protons_session_keyword(tmp_path):
    x, y, out = tensors()
    one, two = _start(tmp_path / "one"), _start(tmp_path / "two")
    try:
        profiler.deactivate(session=one)  # only `one` is paused
        launch_add(x, y, out)
        profiler.activate(session=one)
        launch_add(x, y, out)
        profiler.finalize(session=one)
        assert (tmp_path / "one.hatchet").exists() and not (tmp_path / "two.hatchet").exists()
        profiler.finalize(session_id=two)  # ours still works
    finally:
        profiler.finalize()
    assert kernel_counts(load_tree(tmp_path / "one.hatchet")[0]) == {("add_kernel",): 1}
    assert kernel_counts(load_tree(tmp_path / "two.hatchet")[0]) == {("add_kernel",): 2}


@pytest.mark.parametrize("call", [profiler.activate, profiler.deactivate, profiler.finalize])
@pytest.mark.parametrize("session_id", [0, None])
def test_giving_session_id_and_session_is_a_type_error(tmp_path, call, session_id):
    sid = _start(tmp_path / "s")
    try:
        with pytest.raises(TypeError, match="both session_id"):
            call(session_id, session=sid)
        with pytest.raises(TypeError, match="both session_id"):
            call(session_id=session_id, session=sid)
        assert (call is not profiler.finalize) or not (tmp_path / "s.hatchet").exists()
    finally:
        profiler.finalize(sid)


def test_protons_session_keyword_names_unknown_sessions_as_ours_does(tmp_path):
    sid = _start(tmp_path / "s")
    try:
        with pytest.raises(ValueError, match=f"Session has not been initialized: {sid + 1}"):
            profiler.activate(session=sid + 1)
    finally:
        profiler.finalize(session=sid)


# finalize(..., output_format=...): Proton's formats, checked against what the session writes.


@pytest.mark.parametrize("data, fmt, written", [
    ("tree", "", "t.hatchet"), ("tree", None, "t.hatchet"), ("tree", "hatchet", "t.hatchet"),
    ("trace", "chrome_trace", "t.chrome_trace"), ("trace", "", "t.chrome_trace"),
    ("tree,trace", "chrome_trace", "t.chrome_trace"), ("perfetto", None, "t.pftrace")])
def test_output_format_naming_what_the_session_writes_writes_it(tmp_path, data, fmt, written):
    x, y, out = tensors()
    sid = _start(tmp_path / "t", data)
    launch_add(x, y, out)
    profiler.finalize(sid, fmt)
    assert (tmp_path / written).exists()


@pytest.mark.parametrize("data, fmt", [("tree", "chrome_trace"), ("trace", "hatchet"), ("tree", "json"),
                                       ("perfetto", "chrome_trace"), ("tree", 3)])
def test_output_format_the_session_does_not_write_is_refused_saying_what_it_writes(tmp_path, data, fmt):
    sid = _start(tmp_path / "t", data)
    with pytest.raises(ValueError, match=f"session {sid} writes .*{data}.*does not convert"):
        profiler.finalize(sid, output_format=fmt)
    assert profiler.session.open_sessions() == [sid]  # nothing written, the session still open
    profiler.finalize(sid)


def test_finalize_all_with_a_format_checks_every_session_before_writing_any(tmp_path):
    tree, trace = _start(tmp_path / "a"), _start(tmp_path / "b", "trace")
    with pytest.raises(ValueError, match=f"session {trace} writes 'chrome_trace'"):
        profiler.finalize(output_format="hatchet")
    assert not (tmp_path / "a.hatchet").exists() and profiler.session.open_sessions() == [tree, trace]
    other = _start(tmp_path / "c")
    profiler.finalize(trace, "chrome_trace")
    profiler.finalize(None, "hatchet")  # every open session writes a tree now
    assert {p.name for p in tmp_path.glob("*.*") if not p.name.endswith(".json")} == \
        {"a.hatchet", "b.chrome_trace", "c.hatchet"}
    assert profiler.session.open_sessions() == [] and other != tree


def test_a_misspelt_output_format_fails_with_nothing_open():
    with pytest.raises(ValueError, match="unknown output format"):
        profiler.finalize(output_format="hatchett")
    profiler.finalize(output_format="")  # nothing open, nothing to do


def test_a_misspelt_output_format_fails_for_a_session_already_finalized(tmp_path):
    sid = _start(tmp_path / "done")
    profiler.finalize(sid)
    with pytest.raises(ValueError, match="unknown output format"):
        profiler.finalize(sid, "hatchett")
    profiler.finalize(sid, "chrome_trace")  # a format the profiler knows: nothing left to write, nothing checked


def test_the_default_profile_name_is_exported_and_is_the_one_start_writes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert profiler.DEFAULT_PROFILE_NAME == "flagtree"
    x, y, out = tensors()
    profiler.profile(lambda: launch_add(x, y, out), backend="interpreter")()
    assert (tmp_path / f"{profiler.DEFAULT_PROFILE_NAME}.hatchet").exists()


# context.depth(session): Proton's, for shadow and python sessions.


def test_context_depth_of_a_shadow_session_is_the_threads_scope_depth(tmp_path):
    assert profiler.context.depth() is None  # nothing open
    sid = _start(tmp_path / "d")
    assert profiler.context.depth(sid) == 0
    profiler.enter_scope("test0")
    assert profiler.context.depth(sid) == 1
    with profiler.scope("test1"), profiler.state("s"):  # a state is no level of the context
        assert profiler.context.depth(sid) == 2
        seen = []
        thread = threading.Thread(target=lambda: seen.append(profiler.context.depth(sid)))
        thread.start()
        thread.join()
        assert seen == [2]  # a thread it starts inherits the scopes its launches go under
    assert profiler.context.depth(session=sid) == 1
    profiler.exit_scope()
    assert profiler.context.depth(sid) == 0
    with pytest.raises(ValueError, match=f"Session has not been initialized: {sid + 1}"):
        profiler.context.depth(sid + 1)
    profiler.finalize()
    assert profiler.context.depth(sid) is None


def test_context_depth_of_a_python_session_counts_the_frames_as_protons_source_does(tmp_path):
    sid = profiler.start(str(tmp_path / "p"), backend="interpreter", context="python")

    def frames_here():
        frame, count = sys._getframe(), 0
        while frame is not None:
            frame, count = frame.f_back, count + 1
        return count

    def deeper():
        return profiler.context.depth(sid), frames_here()

    with profiler.scope("not a frame"):
        depth, frames = deeper()
    assert depth == frames  # each counts its own frame, then this thread's stack from its caller
    assert profiler.context.depth(sid) == frames - 1
    profiler.finalize(sid)


def test_trace_kernel_events_carry_protons_call_stack_in_both_contexts(tmp_path):
    x, y, out = tensors()
    shadow = profiler.start(str(tmp_path / "s"), backend="interpreter", data="trace")
    python = profiler.start(str(tmp_path / "p"), backend="interpreter", data="trace", context="python")
    with profiler.scope("test"), profiler.state("fwd"):
        launch_add(x, y, out)
    profiler.finalize()
    (kernel,) = [e for e in load_json(tmp_path / "s.chrome_trace")["traceEvents"] if e.get("cat") == "kernel"]
    assert kernel["args"]["call_stack"] == ["ROOT", "test", "fwd", "add_kernel"]
    assert kernel["args"]["context"] == "test/fwd" and "correlation" in kernel["args"]  # ours stay
    (kernel,) = [e for e in load_json(tmp_path / "p.chrome_trace")["traceEvents"] if e.get("cat") == "kernel"]
    stack = kernel["args"]["call_stack"]
    assert stack[0] == "ROOT" and stack[-2:] == ["fwd", "add_kernel"]
    assert "/".join(stack[1:-1]) == kernel["args"]["context"]  # frames hold "/": the list says where each ends
    assert any(frame.endswith("@test_trace_kernel_events_carry_protons_call_stack_in_both_contexts")
               for frame in stack)
