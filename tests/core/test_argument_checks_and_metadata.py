"""Checks at start() and in the outputs, in process: clear errors for bad arguments and environment
values, metadata files that never overwrite each other, metadata that always names the devices,
warnings that point at the user's launch, and the mode parsed once into the session's options."""
import os
import warnings

import pytest
import triton
import triton.language as tl

import flagtree.profiler as profiler
from flagtree.profiler import _env, session as sessions
from flagtree.profiler.backends import BackendUnavailable, get_backend
from flagtree.profiler.backends.base import Backend
from flagtree.profiler.backends.mode import ModeGrammar, Option
from support.kernels import launch_add, tensors
from support.profiles import kernel_counts, load_json, load_tree
from support.triton_needs import needs_interpreter_metadata


@pytest.fixture(autouse=True)
def no_open_sessions():
    yield
    profiler.finalize()


# ---- arguments and environment ----

@pytest.mark.parametrize("name", [123, 4.5, ["a"]])
def test_a_name_that_is_not_a_path_is_a_clear_error(tmp_path, name):
    with pytest.raises(TypeError, match=r"name must be a path string .*got " + repr(name).replace("[", r"\[")):
        profiler.start(name)
    assert sessions.open_sessions() == []


@pytest.mark.parametrize("name", ["\udcff", "dir\ud800/p"])
def test_a_name_that_is_not_utf8_text_fails_at_start(tmp_path, name):
    with pytest.raises(ValueError, match="holds a lone surrogate, which UTF-8 cannot encode"):
        profiler.start(str(tmp_path / name))
    assert profiler.session.open_sessions() == [] and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["\x00", "a\x00b", "dir\x00/p"])
def test_a_name_with_a_nul_character_fails_at_start(tmp_path, name):
    with pytest.raises(ValueError, match="holds a NUL character, which no file name can"):
        profiler.start(str(tmp_path / name))
    assert profiler.session.open_sessions() == [] and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["sub/", "sub/.hatchet", ".chrome_trace", "sub/.", "sub/..", "./"])
def test_a_name_that_names_a_folder_fails_at_start(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="names a folder, not a file: give the output path without extension"):
        profiler.start(name)
    assert profiler.session.open_sessions() == [] and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("make", [lambda: profiler.profile(3), lambda: profiler.profile(name="p")("f")])
def test_profile_of_what_is_not_a_function_fails_before_any_session(tmp_path, monkeypatch, make):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TypeError, match="profile\\(\\) takes the function to run in its session, got"):
        make()
    assert sessions.open_sessions() == [] and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", ["1e-6", "0", "-3", "1e300", "inf", "nan"])
def test_periodic_interval_has_a_minimum_and_a_maximum(tmp_path, monkeypatch, value):
    monkeypatch.setenv("FLAGTREE_PROFILER_PERIODIC_S", value)
    expected = rf"FLAGTREE_PROFILER_PERIODIC_S must be between 0.1 and 604800 seconds \(a week\), got '{value}'"
    with pytest.raises(ValueError, match=expected):
        profiler.start(str(tmp_path / "p"))
    assert sessions.open_sessions() == [] and not os.listdir(tmp_path)


def test_periodic_interval_bounds_themselves_are_accepted(monkeypatch):
    for value in ("0.1", "604800"):
        monkeypatch.setenv("FLAGTREE_PROFILER_PERIODIC_S", value)
        assert _env.periodic_seconds() == float(value)


@pytest.mark.parametrize("variable, reader, value", [
    ("FLAGTREE_PROFILER_BUFFER_SIZE", _env.buffer_size, str(1 << 70)),
    ("FLAGTREE_PROFILER_BUFFER_SIZE", _env.buffer_size, str((1 << 30) + 1)),
    ("FLAGTREE_PROFILER_BUFFER_SIZE", _env.buffer_size, "100"),
    ("FLAGTREE_PROFILER_BUFFER_LIMIT", _env.buffer_limit, str(1 << 70)),
])
def test_oversized_buffer_values_are_clear_errors(monkeypatch, variable, reader, value):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError, match=f"{variable} must be between .* bytes"):
        reader()


def test_buffer_size_in_range_is_used(monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_BUFFER_SIZE", str(1 << 30))
    assert _env.buffer_size() == 1 << 30


def test_every_variable_is_read_through_the_table():
    with pytest.raises(KeyError, match="not a documented"):
        _env.raw("FLAGTREE_PROFILER_NO_SUCH_KNOB")
    src = os.path.join(os.path.dirname(profiler.__file__))
    for folder, _, files in os.walk(src):
        for file in files:
            if not file.endswith(".py") or file == "_env.py":
                continue
            with open(os.path.join(folder, file)) as handle:
                text = handle.read()
            # The variables' values are read only in _env.py: os.environ is read elsewhere only
            # for other programs' variables (TRITON_INTERPRET, CUDA_HOME, RANK, NO_COLOR, ...).
            for line in text.splitlines():
                if "os.environ" in line:
                    assert "FLAGTREE_PROFILER_" not in line, (file, line)


def test_backend_from_the_environment_without_the_interpreter_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_BACKEND", "interpreter")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(BackendUnavailable) as error:
        profiler.start(str(tmp_path / "e"))
    message = str(error.value)
    assert message.startswith("FLAGTREE_PROFILER_BACKEND=interpreter: the interpreter backend needs Triton's "
                              "interpreter mode, which is off")
    assert "TRITON_INTERPRET=1" in message
    assert sessions.open_sessions() == [] and not os.listdir(tmp_path)


# ---- what was written ----

def test_same_name_tree_and_trace_keep_their_own_metadata(tmp_path):
    x, y, out = tensors()
    name = str(tmp_path / "both")
    tree = profiler.start(name, data="tree")
    trace = profiler.start(name, data="trace")
    launch_add(x, y, out)
    profiler.finalize(trace)
    launch_add(x, y, out)
    profiler.finalize(tree)
    tree_meta = load_json(name + ".meta.json")
    trace_meta = load_json(name + ".chrome_trace.meta.json")
    assert (tree_meta["data"], tree_meta["kernel_records"]) == ("tree", 2)
    assert (trace_meta["data"], trace_meta["kernel_records"]) == ("trace", 1)
    assert sum(kernel_counts(load_tree(name + ".hatchet")[0]).values()) == 2
    # Later sessions of this process keep the names their data kind got first.
    again = profiler.start(name, data="trace")
    launch_add(x, y, out)
    profiler.finalize(again)
    assert load_json(name + ".meta.json")["data"] == "tree"
    assert load_json(name + ".chrome_trace.meta.json")["kernel_records"] == 1


def test_a_single_session_keeps_the_plain_metadata_name(tmp_path):
    profiler.start(str(tmp_path / "solo"), data="trace")
    profiler.finalize()
    assert sorted(os.listdir(tmp_path)) == ["solo.chrome_trace", "solo.meta.json"]


def test_interpreter_metadata_names_the_cpu_device(tmp_path):
    x, y, out = tensors()
    profiler.start(str(tmp_path / "dev"))
    launch_add(x, y, out)
    profiler.finalize()
    devices = load_json(tmp_path / "dev.meta.json")["devices"]
    assert len(devices) == 1 and devices[0]["type"] == "CPU" and devices[0]["index"] == 0
    assert devices[0]["arch"] and devices[0]["name"]


def test_every_backend_metadata_has_a_devices_list():
    class Silent(Backend):
        name = "silent"

    assert Silent().metadata_facts() == {"backend": "silent", "devices": []}
    assert get_backend("roctracer").metadata_facts.__func__ is Backend.metadata_facts


# ---- the mode parsed once ----

def test_the_session_keeps_the_options_its_backend_parsed(tmp_path, monkeypatch):
    backend = get_backend("interpreter")
    seen = []
    original = type(backend).acquire
    grammar = ModeGrammar((Option("fast", "switch", default=False, bare=True),))
    monkeypatch.setattr(type(backend), "mode_grammar", grammar)
    monkeypatch.setattr(type(backend), "acquire", lambda self, options: (seen.append(options), original(self, options)))
    sid = profiler.start(str(tmp_path / "o"), mode="fast")
    opened = sessions.find_session(sid)
    assert seen == [opened.options] and opened.options.canonical() == "fast=on" and opened.mode == "fast=on"
    profiler.finalize()
    assert load_json(tmp_path / "o.meta.json")["mode"] == "fast=on"


def test_backend_state_is_declared_not_added_to_the_session(tmp_path):
    sid = profiler.start(str(tmp_path / "s"))
    opened = sessions.find_session(sid)
    assert opened.state is None  # the interpreter backend keeps nothing per session
    from flagtree.profiler.backends.nvidia.cupti import CuptiBackend, SamplingState
    from flagtree.profiler.backends.instrumentation import InstrumentationBackend, InstrumentationState
    from flagtree.profiler.backends.nvidia.backend import CounterState, NvidiaBackend

    assert (NvidiaBackend.SessionState, CuptiBackend.SessionState, InstrumentationBackend.SessionState) == (
        CounterState, SamplingState, InstrumentationState)
    assert isinstance(NvidiaBackend().SessionState(), CounterState)


# ---- warnings point at the user's launch ----

def _raising_metadata(grid, kernel, args):
    raise KeyError("no such argument")


@triton.jit(launch_metadata=_raising_metadata)
def metadata_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)


@needs_interpreter_metadata
def test_hook_warnings_name_the_kernel_and_the_launch_line(tmp_path):
    x, _, _ = tensors()
    profiler.start(str(tmp_path / "w"), hook="triton")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = _line() + 1
        metadata_kernel[(1,)](x, 64, BLOCK=64)
    profiler.finalize()
    ours = [w for w in caught if "launch_metadata raised KeyError" in str(w.message)]
    assert len(ours) == 1, [str(w.message) for w in caught]
    assert "kernel 'metadata_kernel'" in str(ours[0].message)
    assert (ours[0].filename, ours[0].lineno) == (__file__, line)


def _line():
    import inspect

    return inspect.currentframe().f_back.f_lineno
