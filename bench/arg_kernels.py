"""One-block Triton kernels of 1, 5 and 20 arguments, for the per-launch cost's dependence on a
kernel's signature (bench/device_timer.py's launch_a1, launch_a5, launch_a20). Imports only Triton.

The 5-argument kernel has the shape users write most (three tensors, an int, a constexpr); the
20-argument one ten tensors, nine ints and a constexpr; ints that are not multiples of 16, so
that Triton's launch specializes nothing on them."""
import triton
import triton.language as tl


@triton.jit
def one_arg(out_ptr):
    tl.store(out_ptr + tl.program_id(0), 1.0)


@triton.jit
def five_args(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0 + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


@triton.jit
def twenty_args(p0, p1, p2, p3, p4, p5, p6, p7, p8, out_ptr, n, a1, a2, a3, a4, a5, a6, a7, a8, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    total = tl.load(p0 + offsets, mask=mask) + tl.load(p1 + offsets, mask=mask) + tl.load(p2 + offsets, mask=mask)
    total += tl.load(p3 + offsets, mask=mask) + tl.load(p4 + offsets, mask=mask) + tl.load(p5 + offsets, mask=mask)
    total += tl.load(p6 + offsets, mask=mask) + tl.load(p7 + offsets, mask=mask) + tl.load(p8 + offsets, mask=mask)
    total += (a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8).to(tl.float32)
    tl.store(out_ptr + offsets, total, mask=mask)


def launcher(arguments, torch):
    """A function launching the kernel of `arguments` (1, 5 or 20) once, on CUDA tensors."""
    n = 1000
    tensors = [torch.rand(1024, device="cuda") for _ in range(10)]
    if arguments == 1:
        return lambda: one_arg[(1,)](tensors[0])
    if arguments == 5:
        return lambda: five_args[(1,)](tensors[0], tensors[1], tensors[2], n, BLOCK=1024)
    ints = [3, 5, 7, 9, 11, 13, 17, 19]
    return lambda: twenty_args[(1,)](*tensors[:9], tensors[9], n, *ints, BLOCK=1024)
