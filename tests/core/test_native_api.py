"""The native module's own names: its enums agree with the Python names and the file formats,
its errors are typed (Python catches by type, never by message), and what only tests call lives
in _native.testing, out of the public module."""
import json
import types

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native, session
from flagtree.profiler.common import devices
from flagtree.profiler.viewer import nodes


def names(enum):
    return tuple(sorted(enum.__members__, key=lambda name: int(enum[name])))


def test_context_and_data_names_are_the_native_enums():
    assert session.CONTEXTS == names(_native.ContextKind)
    assert session.DATA_KINDS == names(_native.DataKind)


def test_node_kind_numbering_is_the_one_the_tree_writer_names(tmp_path):
    assert names(_native.NodeKind) == ("root", "scope", "frame", "state", "kernel", "memcpy", "memset",
                                       "line", "device_scope")
    assert [int(_native.NodeKind[n]) for n in names(_native.NodeKind)] == list(range(9))
    base = tmp_path / "kinds"
    sid = profiler.start(str(base))
    with profiler.scope("outer"):
        _native.testing.launch(6001, False)
    _native.testing.record(6001, "k", 0, 10, 0)
    profiler.finalize(sid)
    root = json.loads((tmp_path / "kinds.hatchet").read_text())[0]
    scope = root["children"][0]
    assert (root["frame"]["kind"], scope["frame"]["kind"], scope["children"][0]["frame"]["kind"]) == \
        ("root", "scope", "kernel")


def test_device_type_numbers_agree_with_the_viewer_and_the_interpreter():
    for name, number in nodes._DEVICE_TYPE_NUMBERS.items():  # Proton's spellings in its files
        assert int(_native.DeviceType[name]) == number
    for number, name in devices.DEVICE_KINDS.items():  # the viewer's device_info keys
        assert int(_native.DeviceType[name]) == number
    assert int(_native.DeviceType.CPU) == 2  # the tree format's number for host-side records
    assert names(_native.RecordKind) == ("kernel", "memcpy", "memset")


@pytest.mark.parametrize("name", ["LibraryNotFound", "SubscriberTaken", "Unsupported", "NotInitialized"])
def test_native_errors_are_runtime_errors(name):
    kind = getattr(_native, name)
    assert issubclass(kind, RuntimeError) and kind is not RuntimeError
    assert kind.__module__.startswith("flagtree.profiler")


def test_a_missing_library_is_library_not_found():
    with pytest.raises(_native.LibraryNotFound, match=r"^cannot load /no/such/libcupti\.so: "):
        _native.nvidia.cupti_acquire("/no/such/libcupti.so", 1 << 20)
    with pytest.raises(_native.LibraryNotFound, match=r"^cannot load /no/such/libroctracer64\.so: "):
        _native.roctracer.roctracer_acquire("/no/such/libroctracer64.so", 1 << 20)


@pytest.mark.parametrize("load, sentence", [
    (lambda path: _native.nvidia.cupti_acquire(path, 1 << 20), r"^libc\.so\.6 lacks cuptiGetVersion$"),
    (_native.counters.counters_load, r"^libc\.so\.6 lacks cuptiGetResultString: hardware counters need .*CUPTI 12\.6"),
    (lambda path: _native.roctracer.roctracer_acquire(path, 1 << 20),
     r"^libc\.so\.6 lacks roctracer_error_string \(is it libroctracer64 of ROCm 5 or later\?\)$"),
])
def test_a_library_without_the_functions_is_library_not_found_naming_the_first(load, sentence):
    with pytest.raises(_native.LibraryNotFound, match=sentence):
        load("libc.so.6")  # loads (the process holds it) but is not a vendor library


def test_test_only_functions_are_out_of_the_public_module():
    moved = ("launch", "record", "graph_node_created", "graph_node_cloned", "captured_graph_nodes",
             "scope_depth", "instrumentation_launch", "counters_on_launch_enter", "counters_on_launch_exit",
             "counters_is_additive", "counters_is_kernel_launch_api", "pcsampling_launch_enter",
             "pcsampling_launch_exit", "pcsampling_running", "pcsampling_context_created", "cupti_floor_start")
    public = [_native] + [module for _, module in _submodules() if module is not _native.testing]
    for name in moved:
        assert callable(getattr(_native.testing, name)), name
        assert not [module.__name__ for module in public if hasattr(module, name)], name
    assert not [name for module in public for name in dir(module) if name.startswith("_debug")]


def _submodules():
    return [(name, getattr(_native, name)) for name in dir(_native)
            if isinstance(getattr(_native, name), types.ModuleType)]


def test_the_top_module_holds_submodules_and_shared_types_only():
    loose = [name for name in dir(_native) if not name.startswith("__") and callable(getattr(_native, name))
             and not isinstance(getattr(_native, name), type)]
    assert loose == []  # every function lives in the submodule of its concern
    names = {name for name, _ in _submodules()}
    assert {"core", "context", "session", "dump", "viewer", "nvidia", "cann", "device_timer"} <= names
    assert all(module.__name__ == f"flagtree.profiler._native.{name}" for name, module in _submodules())
