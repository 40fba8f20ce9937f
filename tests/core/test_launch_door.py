"""The native launch door (`_native.core.LaunchDoor`), what ``CompiledKernel.run`` is while
triton_glue/launch_sight.py has its door open, on a class shaped as Triton's CompiledKernel is
(a ``run`` property over ``_run``)."""
import gc

import pytest

from flagtree.profiler import _native


class Kernel:
    def __init__(self, name, fail=False):
        self.name, self.fail, self._run = name, fail, None

    @property
    def run(self):
        if self.fail:
            raise RuntimeError(f"{self.name}: out of resources")
        if self._run is None:
            self._run = ("triton's launcher", self.name)
        return self._run


@pytest.fixture
def door():
    original = Kernel.__dict__["run"]
    seen = []

    def first_sight(kernel, launcher):
        seen.append((kernel.name, launcher))
        if kernel.name == "refused":
            raise ValueError("not this one")
        return ("chosen", launcher)

    ours = _native.core.LaunchDoor(original, first_sight)
    Kernel.run = ours
    try:
        yield ours, seen
    finally:
        Kernel.run = original
        ours.close()


def test_a_kernels_first_run_is_chosen_once_and_its_dictionary_left_alone(door):
    ours, seen = door
    kernel = Kernel("k")
    own = dict(kernel.__dict__)
    first = kernel.run
    assert first == ("chosen", ("triton's launcher", "k")) and kernel.run is first and kernel.run is first
    assert seen == [("k", ("triton's launcher", "k"))] and ours.chosen() == 1
    assert kernel.__dict__ == {**own, "_run": ("triton's launcher", "k")}  # only what Triton's property set
    assert Kernel.run is ours and isinstance(ours.original, property)  # on the class: the door itself


def test_run_cannot_be_set_as_with_tritons_property(door):
    kernel = Kernel("k")
    with pytest.raises(AttributeError):
        kernel.run = "mine"
    assert "run" not in kernel.__dict__


def test_a_kernel_that_goes_takes_its_choice_with_it(door):
    ours, _ = door
    kept, gone = Kernel("kept"), Kernel("gone")
    kept.run, gone.run
    assert ours.chosen() == 2
    del gone
    gc.collect()
    assert ours.chosen() == 1 and kept.run[0] == "chosen"


def test_errors_reach_the_caller_and_nothing_is_kept(door):
    ours, seen = door
    with pytest.raises(RuntimeError, match="out of resources"):
        Kernel("big", fail=True).run  # Triton's own property refused: first_sight never asked
    refused = Kernel("refused")
    for _ in range(2):
        with pytest.raises(ValueError, match="not this one"):
            refused.run
    assert [name for name, _ in seen] == ["refused", "refused"] and ours.chosen() == 0


def test_a_closed_door_keeps_nothing_and_chooses_nothing(door):
    ours, seen = door
    kernel = Kernel("k")
    kernel.run
    ours.close()
    assert ours.chosen() == 0
    with pytest.raises(AttributeError, match="closed"):
        kernel.run
    del kernel
    gc.collect()  # the weak reference went with close(): no callback into a closed door
    assert len(seen) == 1
