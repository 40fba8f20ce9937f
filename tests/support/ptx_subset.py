"""Runs a device-timer stamp block (ptx_stamps.py's PTX text) for one thread on the CPU: the
subset of PTX the stamps use, with registers, predicates, branches and global memory at real host
addresses (the ring's host stand-in keeps its slots and graph descriptors in host memory), so that
what the stamps write can be read back by the native decoders exactly as the GPU's writes are.

Every memory access must fall inside one of the ranges given, else MemoryError: a wrong address
fails the test instead of writing somewhere. An instruction outside the subset raises
NotImplementedError, so a stamp that grows a new kind of instruction is noticed here."""
import ctypes
import re

# Top-level commas, outside brackets and braces: the LLVM IR stamper's parameter splitter.
from flagtree.profiler.backends.device_timer.llir_stamps import _split_params as _operands

_INSTRUCTION = re.compile(r"^(?:(@!?%\w+)\s+)?([\w.]+)\s*(.*?);$")
_ADDRESS = re.compile(r"^\[([%\w$.]+)(?:\+(-?\d+))?\]$")


class Memory:
    def __init__(self, ranges):
        self.ranges = list(ranges)  # [(first address, end address)]

    def _check(self, address, size):
        if not any(lo <= address and address + size <= hi for lo, hi in self.ranges):
            raise MemoryError(f"access of {size} bytes at {address:#x} outside {[(hex(a), hex(b)) for a, b in self.ranges]}")
        if address % size:
            raise MemoryError(f"misaligned access of {size} bytes at {address:#x}")

    def load(self, address, size=8):
        self._check(address, size)
        kind = ctypes.c_uint64 if size == 8 else ctypes.c_uint32
        return kind.from_address(address).value

    def store(self, address, value, size=8):
        self._check(address, size)
        kind = ctypes.c_uint64 if size == 8 else ctypes.c_uint32
        kind.from_address(address).value = value & ((1 << (8 * size)) - 1)


_ARITHMETIC = {
    "and": lambda a, b, bits: a & b,
    "or": lambda a, b, bits: a | b,
    "add": lambda a, b, bits: a + b,
    "sub": lambda a, b, bits: a - b,
    "mul": lambda a, b, bits: a * b,  # .lo: the low half, by the caller's mask
    "shl": lambda a, b, bits: a << b if b < bits else 0,
    "shr": lambda a, b, bits: a >> b,
    "div": lambda a, b, bits: a // b if b else (1 << bits) - 1,  # PTX leaves /0 unspecified
}


def _width(opcode):
    return 32 if opcode.endswith(("32", ".pred")) else 64


def run(block, params, special, memory, regs=None):
    """Runs `block` (one stamp block's text) as one thread: `params` {name: value},
    `special` {"%tid.x": ..., "%globaltimer": ...}; `regs`, the thread's registers, carries
    what one block leaves for the next (the entry stamp's for the exit's)."""
    lines = []
    for raw in block.splitlines():
        line = raw.split("//")[0].strip()
        if not line or line in ("{", "}") or line.startswith(".reg"):
            continue
        lines.append(line)
    labels = {line[:-1]: i for i, line in enumerate(lines) if line.endswith(":")}
    regs = {} if regs is None else regs

    def value(operand, bits):
        if operand in special:
            return special[operand] & ((1 << bits) - 1)
        if operand.startswith("%"):
            return regs[operand]
        return int(operand, 0) & ((1 << bits) - 1)

    def address(operand):
        match = _ADDRESS.match(operand)
        if not match:
            raise NotImplementedError(f"address {operand!r}")
        return regs[match.group(1)] + int(match.group(2) or 0)

    pc = 0
    while pc < len(lines):
        line = lines[pc]
        pc += 1
        if line.endswith(":"):
            continue
        match = _INSTRUCTION.match(line)
        if not match:
            raise NotImplementedError(line)
        guard, opcode, rest = match.groups()
        if guard and regs[guard.lstrip("@!")] == guard.startswith("@!"):
            continue
        ops = _operands(rest)
        bits = _width(opcode)
        mask = (1 << bits) - 1
        name = opcode.split(".")[0]
        if name == "bra":
            pc = labels[ops[0]]
        elif opcode == "ld.param.u64":
            regs[ops[0]] = params[ops[1].strip("[]")]
        elif opcode == "atom.global.add.u64":
            where = address(ops[1])
            regs[ops[0]] = old = memory.load(where)
            memory.store(where, old + value(ops[2], 64))
        elif opcode == "red.global.max.u64":
            where = address(ops[0])
            memory.store(where, max(memory.load(where), value(ops[1], 64)))
        elif opcode == "red.global.add.u64":
            where = address(ops[0])
            memory.store(where, memory.load(where) + value(ops[1], 64))
        elif opcode in ("st.global.v4.u32", "st.global.v2.u64"):
            size = 4 if opcode.endswith("u32") else 8
            for i, item in enumerate(ops[1].strip("{}").split(",")):
                memory.store(address(ops[0]) + i * size, value(item.strip(), 8 * size), size)
        elif name == "setp":
            a, b = value(ops[1], bits), value(ops[2], bits)
            regs[ops[0]] = {"eq": a == b, "ne": a != b}[opcode.split(".")[1]]
        elif opcode == "mul.wide.u32":
            regs[ops[0]] = value(ops[1], 32) * value(ops[2], 32)
        elif opcode == "cvt.u64.u32":
            regs[ops[0]] = value(ops[1], 32)
        elif opcode == "cvt.u32.u64":
            regs[ops[0]] = value(ops[1], 64) & 0xFFFFFFFF
        elif name in ("mov", "not"):
            regs[ops[0]] = value(ops[1], bits) if name == "mov" else ~value(ops[1], bits) & mask
        elif name in ("and", "or", "add", "sub", "mul", "shl", "shr", "div"):
            regs[ops[0]] = _ARITHMETIC[name](value(ops[1], bits), value(ops[2], bits), bits) & mask
        else:
            raise NotImplementedError(line)
