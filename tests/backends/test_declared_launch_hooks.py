"""Launch hooks a backend declares (``launch_hooks = LaunchHooks(...)``, backends/base.py) go into
Triton's launch hooks with the backend's first open session and come out after its last, with no
wiring in the backend. The toy (toy_backend.py) declares them; the scenario runs in a fresh
interpreter with TRITON_INTERPRET=1 set before Triton is imported (another test module may have
imported Triton already), launches a real Triton kernel on the CPU through the interpreter, and
drives Triton's hook chains directly with a launch's metadata, as the hooks' own tests do.
"""
import json
import os
import subprocess
import sys
import textwrap

from vendor_outputs import kernels, load_tree

SCENARIO = textwrap.dedent(r'''
    import os
    os.environ["TRITON_INTERPRET"] = "1"
    import json
    import sys

    import torch
    import triton
    import triton.language as tl

    import flagtree.profiler as profiler
    from flagtree.profiler.backends import get_backend
    from flagtree.profiler.triton_glue.launch_hooks import launch_hook_owner
    import toy_backend


    @triton.jit
    def add_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)


    def hooked(attribute, hook):
        """Whether `hook` is in Triton's `attribute` (a HookChain, or our chained functions)."""
        value = getattr(launch_hook_owner(), attribute)
        if hasattr(value, "calls"):
            return hook in value.calls
        while value is not None:
            if getattr(value, "__wrapped__", None) == hook:
                return True
            value = getattr(value, "flagtree_previous", None)
        return False


    toy_backend.register()
    toy = get_backend("toy")
    out = sys.argv[1]
    seen = {}

    def look(when):
        seen[when] = [hooked("launch_enter_hook", toy.launch_enter), hooked("launch_exit_hook", toy.launch_exit)]

    look("before")
    first = profiler.start(os.path.join(out, "first"), backend="toy", mode="label=k_")
    look("first_open")
    second = profiler.start(os.path.join(out, "second"), backend="toy", mode="label=k_")
    look("both_open")
    x = torch.arange(8, dtype=torch.float32)
    y = torch.empty_like(x)
    add_kernel[(1,)](x, y, 8, BLOCK=8)  # a real kernel through the interpreter
    seen["kernel_ok"] = y.tolist() == (x + 1).tolist()
    runtime = launch_hook_owner()
    runtime.launch_enter_hook({"name": "driven"})  # a launch as the GPU path reports it
    runtime.launch_exit_hook({"name": "driven"})
    profiler.finalize(first)
    look("first_closed")
    profiler.finalize(second)
    look("both_closed")
    seen["missing"] = toy.launch_hooks_missing
    print("RESULT=" + json.dumps(seen))
''')


def test_declared_launch_hooks_go_in_with_the_first_session_and_out_after_the_last(tmp_path):
    script = tmp_path / "scenario.py"
    script.write_text(SCENARIO)
    here = os.path.dirname(os.path.abspath(__file__))
    environ = {k: v for k, v in os.environ.items() if not k.startswith("FLAGTREE_PROFILER_")}
    environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, environ.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], env=environ, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT=")]
    assert lines, f"{done.stdout}\n{done.stderr}"
    seen = json.loads(lines[-1][len("RESULT="):])
    assert seen["before"] == [False, False]
    assert seen["first_open"] == [True, True] and seen["both_open"] == [True, True]
    assert seen["first_closed"] == [True, True]  # the second session still uses them
    assert seen["both_closed"] == [False, False]
    assert seen["kernel_ok"] is True and seen["missing"] == ""
    # the driven launch, recorded by the declared exit hook in both sessions
    assert [path for path, _ in kernels(load_tree(tmp_path / "first")[0])] == [("k_driven",)]
    assert [path for path, _ in kernels(load_tree(tmp_path / "second")[0])] == [("k_driven",)]
