"""The stateful API fuzz's kernel with a launch_metadata function (hook="triton"): what it returns
is the op's choice (api_fuzz_plan.META_RETURNS), "raise" raising in it. Its launch says which name
its kernel node must get."""
import triton
import triton.language as tl

_returned = {}


def _metadata(grid, kernel, args):
    if _returned.get("raise"):
        raise RuntimeError("launch_metadata of the API fuzz raises, as asked")
    return dict(_returned)


@triton.jit(launch_metadata=_metadata)
def meta_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)


def _renames(name):
    """Whether launch_metadata's "name" renames the node: a non-empty str that is UTF-8 text."""
    return isinstance(name, str) and bool(name) and not any(0xD800 <= ord(c) <= 0xDFFF for c in name)


def launch_meta(x, returned, hooked):
    """Launches meta_kernel with launch_metadata returning `returned`; the node name it must get
    (`hooked`: an interpreter session with hook="triton" is open, so launch_metadata runs)."""
    _returned.clear()
    _returned.update({"raise": True} if returned == "raise" else returned)
    meta_kernel[(1,)](x, 16, BLOCK=16)
    name = _returned.get("name") if hooked else None
    return name if _renames(name) else "meta_kernel"
