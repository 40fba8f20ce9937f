"""What the stamps write is a protocol between a kernel compiled once, possibly by an earlier
version and kept in Triton's or inductor's disk cache, and the ring that reads it. The compiler
mode (part of the cache key) and the profile-scratch tag (what a launch asks the allocator with)
name that protocol; a change to the stamps' text under the same mode and tag lets a cache hand
the new ring kernels that write the old layout, which the ring then misreads (graph replays
numbered wrongly). So the text of both stampers, for fixed inputs, is
pinned here to the mode and tag it was written under: a change to the stamps fails this test
until the mode prefix (compiler_hook.py) and the tag (timer_ring.h) are new, the old tag is
retired, and the digest below is recorded for the new pair."""
import hashlib

from flagtree.profiler import _native
from flagtree.profiler.backends.device_timer import compiler_hook
from flagtree.profiler.backends.device_timer.llir_stamps import stamp_llir
from flagtree.profiler.backends.device_timer.ptx_stamps import stamp_ptx
from standins.corex_triton import LLIR
from support.stamped_kernel import PTX

# (compiler mode prefix, align tag) -> sha256 of the stamped texts below
PROTOCOLS = {
    ("ftdt5", 0x44540030): "2924ba4e7a2e4046bc218ebcb634d9fc88d6bf8b4b4ce18b1535b063d3deb24e",
    ("ftdt6", 0x44540040): "f9616db505352bbc0367abfe75038bddca36e65984f86d7d9acbda557763af4b",
}


def _stamped_texts():
    texts = [stamp_ptx(PTX, 77, 1 << 20, lanes, records) for lanes, records in ((32, 256), (8, 4))]
    texts.append(stamp_ptx(PTX.replace(".reqntid 128", ""), 77, 1 << 20, 32, 256))
    texts.append(stamp_llir(LLIR, 77, 1 << 20, 32, warp_size=64))
    return texts


def _digest():
    h = hashlib.sha256()
    for text in _stamped_texts():
        h.update(text.encode())
    return h.hexdigest()


def test_the_stamps_are_the_ones_their_mode_and_tag_name():
    key = (compiler_hook.MODE_PREFIX, _native.device_timer.device_timer_layout()["align_tag"])
    assert key in PROTOCOLS, (f"the stamps' mode and tag {key} have no recorded digest: record "
                              f"{_digest()!r} for them")
    assert PROTOCOLS[key] == _digest(), (
        "the stamps' text changed under the same compiler mode and tag: kernels cached with the old "
        "stamps would be read as the new ones. Give the stamps a new mode prefix (compiler_hook.py) "
        "and tag (timer_ring.h, retiring the old one), then record the new digest here.")


def test_only_the_current_protocol_s_tag_is_unretired():
    layout = _native.device_timer.device_timer_layout()
    current = (compiler_hook.MODE_PREFIX, layout["align_tag"])
    assert layout["align_tag"] not in layout["retired_align_tags"]
    assert all(tag in layout["retired_align_tags"] for mode, tag in PROTOCOLS if (mode, tag) != current)
