"""A backend built only from the contract (toy_backend.py), registered and run through the public
API, and docs/ARCHITECTURE.md's "Add a backend" held to it."""
import importlib
import os
import re

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import backends
from flagtree.profiler.backends import base, mode
from flagtree.profiler.cli import extension
import toy_backend
from vendor_outputs import find, kernels, load_meta, load_tree

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def toy():
    toy_backend.register()
    try:
        yield backends.get_backend("toy")
    finally:
        profiler.finalize()
        backends.unregister_backend("toy")


def test_a_registered_toy_backend_profiles_through_the_public_api(toy, tmp_path):
    @toy.kernel
    def add(a, b):
        return a + b

    assert add(1, 2) == 3 and not toy.installed  # no session: not recorded
    assert profiler.available_backends()["toy"] is None
    session = profiler.start(str(tmp_path / "toy"), backend="toy", mode="label=step_:warmup=2:record=yes")
    assert session >= 0 and toy.installed
    with profiler.scope("work"):
        assert add(2, 3) == 5
        assert add(4, 5) == 9
    profiler.finalize()
    assert not toy.installed
    root, devices = load_tree(tmp_path / "toy")
    node = find(root, "work", "step_add")
    assert node["metrics"]["count"] == 2 and node["metrics"]["time (ns)"] > 0
    assert [path for path, _ in kernels(root)] == [("work", "step_add")]
    assert devices == {"CPU": {"0": {"arch": "toy", "num_sms": 0, "clock_rate": 0, "memory_clock_rate": 0,
                                     "bus_width": 0}}}
    meta = load_meta(tmp_path / "toy")
    assert meta["backend"] == "toy" and meta["toy_kernels"] == 2
    assert meta["mode"] == "label=step_:warmup=2:record=on"  # the grammar's canonical text


def test_the_toy_mode_goes_through_the_one_grammar(toy, tmp_path):
    assert toy.check_mode(None) == toy_backend.ToyOptions()  # no mode: every default
    assert toy.check_mode("warmup=3,record=off") == toy_backend.ToyOptions("", 3, False)
    with pytest.raises(ValueError) as error:
        profiler.start(str(tmp_path / "bad"), backend="toy", mode="warmup=500")
    assert str(error.value) == ("backend 'toy' does not support mode 'warmup=500': warmup must be between 0 and "
                                "100, got 500; supported forms: label=<kernel name prefix>:warmup=<0..100>:"
                                "record=on|off")
    assert profiler.session.open_sessions() == [] and not toy.installed


def test_registration_refuses_a_second_toy_and_forgets_it_after():
    toy_backend.register()
    try:
        with pytest.raises(ValueError, match="registered already"):
            toy_backend.register()
        with pytest.raises(ValueError, match="stays registered"):
            backends.unregister_backend("nvidia")
        with pytest.raises(TypeError, match="Backend subclass"):
            backends.register_backend("other", object)
    finally:
        backends.unregister_backend("toy")
    with pytest.raises(ValueError, match="unknown backend 'toy'"):
        backends.get_backend("toy")


def _section(text, title):
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def test_architecture_add_a_backend_names_only_what_the_contract_and_the_toy_have():
    with open(os.path.join(ROOT, "docs", "ARCHITECTURE.md")) as f:
        section = _section(f.read(), "Add a backend")
    assert "`tests/backends/toy_backend.py`" in section
    # the toy, the contract's modules, and an extension of the command (for its protocol's names)
    owners = (toy_backend, toy_backend.ToyBackend, toy_backend.ToyOptions, base, backends, backends.Registration,
              mode, extension,
              importlib.import_module("flagtree.profiler.backends.nvidia.metrics_cli"))
    names = {n for n in re.findall(r"`([A-Za-z_][\w.]*)`", section) if "/" not in n and not n.endswith(".py")}
    assert {"ToyBackend", "MODE_GRAMMAR", "ToyOptions", "ToyState", "options_from", "register_backend"} <= names
    missing = []
    for name in names:
        *dotted, last = name.split(".")
        if dotted[:1] == ["native"]:  # native.<submodule>.<function>
            holder = toy_backend.native
            for part in dotted[1:]:
                holder = getattr(holder, part, None)
            found = hasattr(holder, last)
        elif dotted[:2] == ["flagtree", "profiler"]:
            found = hasattr(importlib.import_module(".".join(dotted)), last)
        else:
            found = any(hasattr(owner, last) for owner in owners)
        if not found:
            missing.append(name)
    assert not missing, missing
    # the toy uses every contract name the walk-through gives it
    with open(toy_backend.__file__) as f:
        toy_source = f.read()
    for name in ("mode_grammar", "options_from", "SharedUse", "SessionState", "acquire", "release",
                 "register_backend", "native.session.record_host_kernel"):
        assert name in toy_source and name in section, name


def test_architecture_add_a_backend_shows_the_declared_launch_hooks():
    with open(os.path.join(ROOT, "docs", "ARCHITECTURE.md")) as f:
        section = _section(f.read(), "Add a backend")
    with open(toy_backend.__file__) as f:
        toy_source = f.read()
    for name in ("LaunchHooks", "launch_hooks", "LAUNCH_HOOKS", "launch_enter", "launch_exit"):
        assert name in toy_source and f"`{name}`" in section, name
    assert isinstance(toy_backend.ToyBackend.launch_hooks, base.LaunchHooks)
