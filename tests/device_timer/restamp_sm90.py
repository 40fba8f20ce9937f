"""Compiles the example add kernel for sm_90 with Triton's real compiler and no stamps (a kernel
compiled before a session), then builds it again as the device_timer does at its first launch in
a session: its kept PTX stamped, the target's own binary stage (Triton's ptxas) run on it. Prints
what came out as JSON. Run as a subprocess without TRITON_INTERPRET (the CPU test session runs
with it on)."""
import json

from compile_stamped import compile_add

from flagtree.profiler import _native
from flagtree.profiler.backends.device_timer import stampers, untimed
from flagtree.profiler.triton_glue import restamp


def main():
    plain = compile_add(False)
    stamps = untimed.FirstSightStamps(_native, 1 << 20, 8, 64, stampers.PTX)
    edited = {}

    def edit(text, metadata):
        edited["ptx"] = stamps._edit(text, metadata)
        return edited["ptx"]

    binary, metadata = restamp.edited_binary(plain, "ptx", edit)
    print(json.dumps({
        "plain_scratch": plain.metadata.profile_scratch_size,
        "scratch": [metadata["profile_scratch_size"], metadata["profile_scratch_align"]],
        "align_tag": _native.device_timer.device_timer_layout()["align_tag"],
        "entry_stamps": edited["ptx"].count("device_timer: entry stamp"),
        "elf": binary[:4] == b"\x7fELF", "same_as_plain": binary == plain.kernel,
        "name": metadata["name"],
    }))


if __name__ == "__main__":
    main()
