"""Hand-over between CUPTI clients in one process, on the GPU: can another CUPTI client attach
after ours, and ours after it? Each order runs in a fresh subprocess (run_order); a step "worked"
when its tool recorded the kernels it ran (ours: kernel_records in the metadata; Proton: the kernel
in its tree; torch.profiler: a CUDA kernel event).

Orders: ours -> release -> Proton; ours (no release, still attached) -> Proton (Proton's start
releases ours first); Proton -> ours; ours -> release -> torch.profiler -> ours (the
last start may be refused, SubscriberTaken naming torch.profiler, if Kineto keeps CUPTI).
Used by tests/gpu/test_handover_gpu.py and by dev/probe_handover.py (every order, with the default
libcupti, Triton's bundled copy, the one Proton loads, with each file of that copy, and with the
libcupti wheel's copy, the one torch maps at import)."""
import os
import re
import subprocess
import sys
import tempfile


ORDERS = {
    "ours>release>proton": ["ours", "release", "proton"],
    "ours>proton(no release)": ["ours", "proton"],
    "proton>ours": ["proton", "ours"],
    # torch.profiler (Kineto) may keep CUPTI for the rest of the process: the last start of ours
    # then passes if it works or if it is refused with SubscriberTaken naming torch.profiler.
    "ours>release>torch>ours": ["ours", "release", "torch", "ours_or_taken"],
}

CHILD = r'''
import json, os, sys
steps, folder = sys.argv[1].split(","), sys.argv[2]
import torch, triton, triton.language as tl

@triton.jit
def handover_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)

x = torch.zeros(128, device="cuda")
def work():
    for _ in range(5):
        handover_kernel[(1,)](x, BLOCK=128)
    torch.cuda.synchronize()
work()  # compile outside every tool

def ours(i):
    import flagtree.profiler as profiler
    base = os.path.join(folder, f"ours{i}")
    profiler.start(base, backend="nvidia")
    work()
    profiler.finalize()
    with open(base + ".meta.json") as f:
        meta = json.load(f)
    records = meta.get("kernel_records", meta.get("stats", {}).get("kernel_records", 0))
    assert records >= 5, f"ours recorded {records} kernels, expected 5"
    return "libcupti " + str(meta.get("cupti_library"))

def ours_or_taken(i):
    from flagtree.profiler import _native
    try:
        ours(i)
    except _native.SubscriberTaken as error:
        assert "torch.profiler" in str(error), f"refused without naming torch.profiler: {error}"
        return "refused, slot held (SubscriberTaken names torch.profiler)"
    return "started"

def release(i):
    import flagtree.profiler as profiler
    assert profiler.release(), "release() found nothing to release"

def proton(i):
    import triton.profiler as proton
    base = os.path.join(folder, f"proton{i}")
    proton.start(base)
    work()
    proton.finalize()
    with open(base + ".hatchet") as f:
        text = f.read()
    assert "handover_kernel" in text, "Proton's profile has no handover_kernel"

def torch_profiler(i):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
        work()
    names = [e.key for e in p.key_averages()]
    assert any("handover_kernel" in n for n in names), f"torch.profiler saw no handover_kernel: {names[:5]}"

for i, step in enumerate(steps):
    print(f"STEP {i} {step} begins", flush=True)  # names the step should the process die in it
    try:
        outcome = {"ours": ours, "ours_or_taken": ours_or_taken, "release": release, "proton": proton,
                   "torch": torch_profiler}[step](i)
    except BaseException as error:
        print(f"STEP {i} {step} FAILED: {type(error).__name__}: {error}".replace("\n", " | "), flush=True)
        sys.exit(3)
    print(f"STEP {i} {step} ok" + (f" ({outcome})" if outcome else ""), flush=True)
print("MAPPED", sorted({l.split()[-1] for l in open("/proc/self/maps") if "libcupti" in l}), flush=True)
'''


def triton_cupties():
    """The libcupti files Triton bundles (Proton loads one of them): libcupti.so.12 and
    libcupti.so are separate copies of one file there, so each is a variant of its own."""
    try:
        import triton
    except ImportError:
        return []
    folder = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "lib", "cupti")
    return [p for p in (os.path.join(folder, n) for n in ("libcupti.so.12", "libcupti.so")) if os.path.exists(p)]


def triton_cupti():
    """The bundled copy the GPU tests point FLAGTREE_PROFILER_CUPTI_PATH at, or None."""
    found = triton_cupties()
    return found[0] if found else None


def run_order(steps, cupti_path=None, timeout=300):
    """(worked, text) for one order in a fresh process; text is the failing step's error."""
    env = dict(os.environ)  # the installed package (dev/gpu_round.sh installs it), as users run it
    env.pop("FLAGTREE_PROFILER_CUPTI_PATH", None)
    if cupti_path:
        env["FLAGTREE_PROFILER_CUPTI_PATH"] = cupti_path
    with tempfile.TemporaryDirectory(prefix="handover_") as folder:
        try:
            child = os.path.join(folder, "handover_child.py")  # @triton.jit needs a real source file
            with open(child, "w") as f:
                f.write(CHILD)
            out = subprocess.run([sys.executable, child, ",".join(steps), folder], capture_output=True,
                                 text=True, env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            return False, f"timed out after {timeout} s"
    lines = out.stdout.strip().splitlines()
    failed = [line for line in lines if "FAILED" in line]
    mapped = " ".join(line for line in lines if line.startswith("MAPPED"))
    done = [line for line in lines if re.match(r"STEP \d+ \S+ ok", line)]
    if out.returncode == 0 and len(done) == len(steps):
        notes = "; ".join(line.split(" ok ", 1)[1] for line in done if " ok (" in line)
        return True, "worked " + (notes + " " if notes else "") + mapped
    if failed:
        return False, failed[0]
    begun = [line for line in lines if line.endswith(" begins")]
    tail = (out.stderr.strip().splitlines() or ["(no output)"])[-3:]
    where = begun[-1][: -len(" begins")] + " died, " if begun else ""
    return False, f"{where}exit {out.returncode}: " + " | ".join(tail)


def wheel_cupti():
    """The nvidia-cuda-cupti wheel's libcupti (the copy torch maps at import), or None."""
    import glob
    import sys

    for entry in sys.path:
        found = sorted(glob.glob(os.path.join(entry, "nvidia", "cu[0-9]*", "lib", "libcupti.so.*")))
        if found:
            return found[-1]
    return None


def variants():
    for name, steps in ORDERS.items():
        yield f"{name} [default libcupti]", steps, None
        for bundled in triton_cupties():
            yield f"{name} [CUPTI_PATH=Triton's {os.path.basename(bundled)}]", steps, bundled
        if wheel_cupti():
            yield f"{name} [CUPTI_PATH=the wheel's {os.path.basename(wheel_cupti())}]", steps, wheel_cupti()

