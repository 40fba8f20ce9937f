"""The profile-scratch alignments that mark a kernel stamped by the device timer: Triton's
launcher passes a kernel's alignment to the profile allocator, so the alignment is the tag by
which the ring's slot path, the kernel-side scopes' collector and the untimed-launch checks tell
the device timer's kernels apart (this version's tag; retired tags are earlier versions' stamps,
which no longer match the ring's layout). Read from the native layout once, at first use:
reading profiles needs no native module."""
import functools

from ..native_core import native


@functools.cache
def _layout():
    layout = native.device_timer.device_timer_layout()
    return layout["align_tag"], tuple(layout["retired_align_tags"])


def current():
    """The tag this version's stamps ask with."""
    return _layout()[0]


def retired():
    """Tags of earlier versions' stamps."""
    return _layout()[1]


@functools.cache
def any_version():
    """Every tag the device timer's stamps have asked with, this version's first (the scopes'
    collector asks at every launch: one tuple, made once)."""
    return (current(), *retired())
