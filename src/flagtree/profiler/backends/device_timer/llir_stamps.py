"""The device_timer stamps inserted into a kernel's LLVM IR (text in, text out), for targets
whose binary stage compiles NVVM-flavoured LLVM IR and has no PTX stage (Iluvatar CoreX:
FlagTree's CoreX backend lowers through the NVVM dialect, prints the kernel as
``define iluvatar_kernel void @name(...)`` and compiles that text to its binary).

The same slot protocol as the PTX stamps (ptx_stamps.py): the kernel's last parameter is its
profile scratch pointer, which our allocator points at the launch's ring slot (plane 0); lane
planes follow at ``plane_bytes`` strides. Two helper functions are added to the module and
called, so no block of the kernel is split (its value numbering and phi edges stay as they are):

* ``@__flagtree_dt_entry`` at the top of the entry block: thread 0 of every block takes the
  maximum of ~timer into its lane's word 0 (the earliest start) and block (0,0,0) stores
  {kernel id, grid x, grid y | grid z << 16, block x} into plane 0;
* ``@__flagtree_dt_exit`` before every ``ret void``: lane 0 of every warp takes the maximum of
  the timer into its lane's word 1 (per warp, no barrier: warps leaving early cannot deadlock).

Both skip a pointer without the ring's mark (bit 0, as in ptx_stamps.py): the same binary
launched without our allocator, or given another tool's scratch, runs as if unstamped. The lane
is the block index modulo ``lanes`` (CoreX exposes no SM id). The timer is read with the inline
assembly ``timer_asm`` (default: what CoreX's own
``triton.language.extra.corex.globaltimer`` emits); whether a CoreX toolchain accepts it is not
verified on hardware: the compiler hook compiles the kernel unstamped when a later stage rejects
the stamped text.
"""
import re

from .ptx_stamps import SLOT_MARK, NotStampable

GLOBALTIMER_ASM = "mov.u64 $0, %globaltimer;"
ENTRY_HELPER = "__flagtree_dt_entry"
EXIT_HELPER = "__flagtree_dt_exit"

_KERNEL = re.compile(r"^define\b[^@\n]*?\b(\w+_kernel)\b[^@\n]*@(\"[^\"]+\"|[\w.$]+)\(", re.MULTILINE)
_RET_VOID = re.compile(r"^(\s*)ret void\b", re.MULTILINE)
_LABEL = re.compile(r"^\s*(?:[\w.$-]+|\"[^\"]+\"):")
_SREG = ("tid.x", "ctaid.x", "ctaid.y", "ctaid.z", "nctaid.x", "nctaid.y", "nctaid.z", "ntid.x")


def _sreg(reg):
    return f"@llvm.nvvm.read.ptx.sreg.{reg}"


def _closing_paren(text, open_at):
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise NotStampable("unbalanced parentheses in the kernel's parameter list")


def _split_params(text):
    params, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        elif c == "," and depth == 0:
            params.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        params.append(text[start:].strip())
    return params


def kernel_entry(llir):
    """(name, slot parameter's type, its name, where the parameter's text starts and ends,
    where the kernel's body starts and ends) of the one kernel in `llir`."""
    kernels = list(_KERNEL.finditer(llir))
    if len(kernels) != 1:
        raise NotStampable(f"expected one kernel definition, found {len(kernels)}")
    kernel = kernels[0]
    open_at = kernel.end() - 1
    close = _closing_paren(llir, open_at)
    params = _split_params(llir[open_at + 1:close])
    if not params:
        raise NotStampable("the kernel has no parameters (no profile scratch pointer)")
    last = params[-1]
    match = re.fullmatch(r"(ptr(?:\s+addrspace\(\d+\))?)(?=\s).*?(%[\w.$]+|%\"[^\"]+\")", last, re.DOTALL)
    if match is None:
        raise NotStampable(f"the last parameter is not a named pointer: {last!r}")
    param_start = llir.rindex(last, open_at, close + 1)
    body = llir.find("{", close)
    end = llir.find("\n}", body)
    if body < 0 or end < 0:
        raise NotStampable("no body after the kernel's definition")
    return (kernel.group(2).strip('"'), match.group(1), match.group(2),
            (param_start, param_start + len(last)), (body + 1, end + 1))


def _timer(reg, timer_asm):
    asm = timer_asm.replace("\\", "\\5C").replace('"', "\\22")
    return f'  {reg} = call i64 asm sideeffect "{asm}", "=l"()\n'


def _lane_word(slot, plane_bytes, lanes, word_offset, tag):
    return (f"  %{tag}bx = call i32 {_sreg('ctaid.x')}()\n"
            f"  %{tag}lane = and i32 %{tag}bx, {lanes - 1}\n"
            f"  %{tag}plane = add i32 %{tag}lane, 1\n"
            f"  %{tag}plane64 = zext i32 %{tag}plane to i64\n"
            f"  %{tag}off0 = mul i64 %{tag}plane64, {plane_bytes}\n"
            f"  %{tag}off = add i64 %{tag}off0, {word_offset}\n"
            f"  %{tag}word = getelementptr i8, {slot}, i64 %{tag}off\n")


def _marked(slot):
    """`%some`: the pointer carries the ring's mark (bit 0); `%base`: the slot it marks."""
    return (f"  %bits = ptrtoint {slot} to i64\n"
            f"  %mark = and i64 %bits, {SLOT_MARK}\n"
            "  %some = icmp ne i64 %mark, 0\n")


def _unmarked(slot):
    return f"  %base = getelementptr i8, {slot}, i64 -{SLOT_MARK}\n"


def entry_helper(slot_type, kernel_id, plane_bytes, lanes, timer_asm):
    kid = kernel_id - (1 << 32) if kernel_id >= (1 << 31) else kernel_id  # an i32 literal
    slot, base = f"{slot_type} %slot", f"{slot_type} %base"
    return (f"\n; flagtree.profiler device_timer: entry stamp (thread 0 of each block)\n"
            f"define internal void @{ENTRY_HELPER}({slot}) nounwind {{\n"
            f"  %tid = call i32 {_sreg('tid.x')}()\n"
            "  %leader = icmp eq i32 %tid, 0\n"
            + _marked(slot) +
            "  %go = and i1 %leader, %some\n"
            "  br i1 %go, label %stamp, label %done\n"
            "stamp:\n"
            + _unmarked(slot) + _timer("%now", timer_asm) +
            "  %early = xor i64 %now, -1\n"
            + _lane_word(base, plane_bytes, lanes, 0, "") +
            f"  %old = atomicrmw umax {slot_type} %word, i64 %early monotonic, align 8\n"
            f"  %by = call i32 {_sreg('ctaid.y')}()\n"
            f"  %bz = call i32 {_sreg('ctaid.z')}()\n"
            "  %bxy = or i32 %bx, %by\n  %bxyz = or i32 %bxy, %bz\n"
            "  %first = icmp eq i32 %bxyz, 0\n"
            "  br i1 %first, label %meta, label %done\n"
            "meta:\n"
            f"  %gx = call i32 {_sreg('nctaid.x')}()\n"
            f"  %gy = call i32 {_sreg('nctaid.y')}()\n"
            f"  %gz = call i32 {_sreg('nctaid.z')}()\n"
            f"  %nt = call i32 {_sreg('ntid.x')}()\n"
            "  %gz16 = shl i32 %gz, 16\n  %gyz = or i32 %gy, %gz16\n"
            f"  %m0 = insertelement <4 x i32> poison, i32 {kid}, i32 0\n"
            "  %m1 = insertelement <4 x i32> %m0, i32 %gx, i32 1\n"
            "  %m2 = insertelement <4 x i32> %m1, i32 %gyz, i32 2\n"
            "  %m3 = insertelement <4 x i32> %m2, i32 %nt, i32 3\n"
            f"  store <4 x i32> %m3, {base}, align 16\n"
            "  br label %done\n"
            "done:\n  ret void\n}\n")


def exit_helper(slot_type, plane_bytes, lanes, warp_size, timer_asm):
    slot, base = f"{slot_type} %slot", f"{slot_type} %base"
    return (f"\n; flagtree.profiler device_timer: exit stamp (lane 0 of each warp)\n"
            f"define internal void @{EXIT_HELPER}({slot}) nounwind {{\n"
            f"  %tid = call i32 {_sreg('tid.x')}()\n"
            f"  %inwarp = and i32 %tid, {warp_size - 1}\n"
            "  %leader = icmp eq i32 %inwarp, 0\n"
            + _marked(slot) +
            "  %go = and i1 %leader, %some\n"
            "  br i1 %go, label %stamp, label %done\n"
            "stamp:\n"
            + _unmarked(slot) + _lane_word(base, plane_bytes, lanes, 8, "") + _timer("%now", timer_asm) +
            f"  %old = atomicrmw umax {slot_type} %word, i64 %now monotonic, align 8\n"
            "  br label %done\n"
            "done:\n  ret void\n}\n")


def _declarations(llir):
    """Declarations of the special-register intrinsics the helpers read that `llir` lacks (a
    second declaration of one it has would not parse)."""
    return "".join(f"declare i32 {_sreg(reg)}()\n" for reg in _SREG
                   if not re.search(rf"^declare\b[^\n]*{re.escape(_sreg(reg))}\(", llir, re.MULTILINE))


def stamp_llir(llir, kernel_id, plane_bytes, lanes, warp_size=64, timer_asm=GLOBALTIMER_ASM):
    """`llir` with the entry and exit stamps; NotStampable when its shape is not handled."""
    if lanes & (lanes - 1) or warp_size & (warp_size - 1):
        raise ValueError("lanes and warp_size must be powers of two")
    if f"@{ENTRY_HELPER}(" in llir or f"@{EXIT_HELPER}(" in llir:
        raise NotStampable("the kernel is already stamped")
    _, slot_type, slot, (param_start, param_end), (body_start, body_end) = kernel_entry(llir)
    body = llir[body_start:body_end]
    exits = 0

    def stamp_exit(match):
        nonlocal exits
        exits += 1
        return f"{match.group(1)}call void @{EXIT_HELPER}({slot_type} {slot})\n{match.group(0)}"

    body = _RET_VOID.sub(stamp_exit, body)
    if not exits:
        raise NotStampable("no 'ret void' in the kernel body")
    lines = body.split("\n")
    first = 1 if len(lines) > 1 and _LABEL.match(lines[1]) else 0  # after the entry block's label
    lines.insert(first + 1, f"  call void @{ENTRY_HELPER}({slot_type} {slot})")
    body = "\n".join(lines)
    # The slot parameter loses the attributes that promised the kernel never touches it.
    rest = llir[body_end:]
    close = rest.find("\n") + 1 or len(rest)  # after the kernel's closing brace
    helpers = (entry_helper(slot_type, kernel_id, plane_bytes, lanes, timer_asm)
               + exit_helper(slot_type, plane_bytes, lanes, warp_size, timer_asm) + _declarations(llir))
    return (llir[:param_start] + f"{slot_type} {slot}" + llir[param_end:body_start] + body
            + rest[:close] + helpers + rest[close:])
