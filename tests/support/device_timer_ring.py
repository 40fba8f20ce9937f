"""What the device_timer ring tests share: Triton's profile allocator called as its launcher does."""
from flagtree.profiler import _native


def allocate(stream=0x5000):
    """The scratch pointer Triton's launcher gets for a stamped kernel launched on `stream`."""
    from triton.runtime import _allocation

    return _allocation._profile_allocator.get()(16, _native.device_timer.device_timer_layout()["align_tag"], stream)
