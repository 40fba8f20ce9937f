"""A kernel stamped by ptx_stamps.py, its stamps run on the CPU (ptx_subset.py) warp by warp:
lane 0 of every warp runs the entry stamp as it starts and the exit stamp as it ends, keeping its
registers in between (the entry leaves a graph replay's ticket and start for the exit), as the
GPU runs them. Other lanes branch past both stamps at their first test; `all_lanes` runs them too.
"""
from flagtree.profiler import _native
from flagtree.profiler.backends.device_timer.ptx_stamps import kernel_entry, stamp_ptx
from support.ptx_subset import Memory, run

# A kernel whose slot parameter is its last, as Triton's are.
PTX = """
.version 8.4
.target sm_90a
.address_size 64
.visible .entry k(
	.param .u64 .ptr .global .align 1 k_param_0,
	.param .u32 k_param_1,
	.param .u64 .ptr .global .align 1 k_param_2,
	.param .u64 .ptr .global .align 1 k_param_3
)
.reqntid 128
{
	.reg .b32 	%r<3>;
	mov.u32 	%r1, %tid.x;
	// begin inline asm
	{ .reg .pred %x; }
	// end inline asm
	ret;

}
"""


def _layout():
    return _native.device_timer.device_timer_layout()


def descriptor_memory(tagged, records):
    """Memory the stamps may touch through a graph descriptor (its tagged pointer)."""
    base = tagged & ~15
    layout = _layout()
    return Memory([(base, base + layout["graph_header_bytes"] + records * layout["graph_record_bytes"])])


def slot_memory(slot):
    """Memory the stamps may touch through a ring slot (its marked pointer): its planes."""
    base = slot & ~1
    return Memory([(base, base + (_layout()["lanes"] + 1) * _native.device_timer.device_timer_plane_bytes())])


class StampedKernel:
    """`fixed_block`: the kernel's PTX fixes its block size (``.reqntid``, as Triton's do), so the
    stamps take the warps per block as a constant; else they read it from %ntid."""

    def __init__(self, name, records, fixed_block=True):
        self.kid = _native.device_timer.device_timer_name_kernel(name)
        self.records, self.fixed_block = records, fixed_block
        _, self.param, _, _ = kernel_entry(PTX)
        self._stamps = {}

    def stamps(self, block):
        """(entry, exit) stamp texts of the kernel built for blocks of `block` threads."""
        if block not in self._stamps:
            ptx = PTX.replace(".reqntid 128", f".reqntid {block}" if self.fixed_block else "")
            out = stamp_ptx(ptx, self.kid, _native.device_timer.device_timer_plane_bytes(), _layout()["lanes"], self.records)
            entry = out[out.index("entry stamp"):out.index("$ftp_entry_done:") + len("$ftp_entry_done:")]
            exit_ = out[out.index("exit stamp"):out.index("$ftp_exit_done1:") + len("$ftp_exit_done1:")]
            self._stamps[block] = entry.split("\n", 1)[1], exit_.split("\n", 1)[1]
        return self._stamps[block]

    def warps(self, pointer, memory, grid, block, all_lanes=False):
        """The launch's warps, block by block (x fastest), not yet started."""
        blocks = grid[0] * grid[1] * grid[2]
        per_block = (block + 31) // 32
        lanes = range(32) if all_lanes else (0,)
        return [Warp(self, pointer, memory, grid, block, b, w, lane)
                for b in range(blocks) for w in range(per_block) for lane in lanes if w * 32 + lane < block]

    def launch(self, pointer, memory, grid, block, start, end):
        """One launch (or replay): every warp starts (block leaders a little after the first),
        then every warp ends, the last at `end`."""
        warps = self.warps(pointer, memory, grid, block)
        for w in warps:
            w.enter(start + 3 * w.block_index)
        for i, w in enumerate(warps):
            w.leave(end - (len(warps) - 1 - i))
        return warps


class Warp:
    """One thread of a launch: lane `lane` of warp `warp` of block `block_index`."""

    def __init__(self, kernel, pointer, memory, grid, block, block_index, warp, lane=0):
        self.kernel, self.pointer, self.memory = kernel, pointer, memory
        self.entry, self.exit = kernel.stamps(block)
        self.block_index, self.regs = block_index, {}
        x, rest = block_index % grid[0], block_index // grid[0]
        self.special = {"%tid.x": warp * 32 + lane, "%tid.y": 0, "%tid.z": 0, "%laneid": lane,
                        "%smid": block_index % 7}
        self.special.update({f"%ctaid.{a}": v for a, v in zip("xyz", (x, rest % grid[1], rest // grid[1]))})
        self.special.update({f"%nctaid.{a}": v for a, v in zip("xyz", grid)})
        self.special.update({"%ntid.x": block, "%ntid.y": 1, "%ntid.z": 1})

    def _run(self, text, time):
        run(text, {self.kernel.param: self.pointer}, dict(self.special, **{"%globaltimer": time}), self.memory, self.regs)

    def enter(self, time):
        self._run(self.entry, time)

    def leave(self, time):
        self._run(self.exit, time)
