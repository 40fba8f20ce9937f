"""hook="triton": launch_metadata results attached to launches.

Every scenario runs in a fresh interpreter (`sys.executable`) with TRITON_INTERPRET=1 set before
Triton is imported, since another test module may already have imported Triton in this pytest
process. The scenarios launch real Triton kernels on tiny tensors through Triton's interpreter
(the profiler's interpreter backend), or drive the GPU launch hooks (triton.knobs) directly with
Triton's own lazy metadata object, and print what they saw as JSON for the assertions here.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from support.triton_needs import needs_interpreter_metadata, needs_knob_hooks

SCENARIOS = textwrap.dedent(r'''
    import os
    os.environ["TRITON_INTERPRET"] = "1"
    import json
    import sys
    import warnings

    import numpy as np
    import torch
    import triton
    import triton.language as tl

    import flagtree.profiler as profiler
    from flagtree.profiler import _native
    from flagtree.profiler.backends import get_backend
    from flagtree.profiler.hooks import triton as hook
    from flagtree.profiler.triton_glue import launch_hooks

    OUT = sys.argv[2]
    SEEN = []  # what launch_metadata functions were called with
    RESULT = {}


    def add_meta(grid, metadata, args):
        SEEN.append({"grid": list(grid), "num_warps": metadata.num_warps, "num_stages": metadata.num_stages,
                     "args": sorted(args), "n": args["n"], "BLOCK": args["BLOCK"]})
        n = args["n"]
        return {"flops32": n, "bytes": 12 * n}


    @triton.jit(launch_metadata=add_meta)
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x + y, mask=mask)


    def scale_meta(grid, metadata, args):
        return {"name": "scale_%d" % args["n"], "flops16": 2 * args["n"]}


    @triton.jit(launch_metadata=scale_meta)
    def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)


    def user_meta(grid, metadata, args):
        return {"my_metric": 3, "ratio": 0.25, "np_count": np.int64(5), "np_half": np.float32(0.5)}


    @triton.jit(launch_metadata=user_meta)
    def user_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1.0, mask=mask)


    def raising_meta(grid, metadata, args):
        SEEN.append("raising")
        raise ValueError("boom")


    @triton.jit(launch_metadata=raising_meta)
    def raising_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 3.0, mask=mask)


    def mixed_meta(grid, metadata, args):
        return {"bytes": 8, "note": "text", "flag": True, "nan": float("nan"), "shape": [1, 2]}


    @triton.jit(launch_metadata=mixed_meta)
    def mixed_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) - 1.0, mask=mask)


    def counting_meta(grid, metadata, args):
        SEEN.append(args["tag"])
        return {"bytes": 1}


    @triton.jit(launch_metadata=counting_meta)
    def add_skip_kernel(out_ptr, tag):
        tl.store(out_ptr, 1.0)


    @triton.jit(launch_metadata=counting_meta)
    def other_kernel(out_ptr, tag):
        tl.store(out_ptr, 2.0)


    @triton.jit
    def plain_kernel(out_ptr):
        tl.store(out_ptr, 5.0)


    def kernels(path):
        """{kernel node name: metrics} of a .hatchet profile (names are unique in these scenarios)."""
        with open(path) as f:
            root = json.load(f)[0]
        found = {}

        def walk(node):
            if node["frame"]["kind"] == "kernel":
                metrics = dict(node["metrics"])
                for volatile in ("time (ns)", "device_id", "device_type"):
                    metrics.pop(volatile, None)
                found[node["frame"]["name"]] = metrics
            for child in node["children"]:
                walk(child)

        walk(root)
        return found


    def add(n, block=32):
        x = torch.arange(n, dtype=torch.float32)
        y = torch.full((n,), 0.5)
        out = torch.zeros(n)
        add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n, BLOCK=block)
        return out, x + y


    def ours(message):
        return str(message).startswith("flagtree.profiler")


    def scenario_sums():
        profiler.start(os.path.join(OUT, "p"), hook="triton")
        ok = True
        for _ in range(5):
            out, want = add(100)
            ok = ok and torch.equal(out, want)
        for _ in range(3):
            out, want = add(50, block=16)
            ok = ok and torch.equal(out, want)
        x = torch.ones(10)
        add_kernel[(1,)](x, x, torch.zeros(10), 10, BLOCK=16, num_warps=2)
        profiler.finalize()
        RESULT.update(kernels=kernels(os.path.join(OUT, "p.hatchet")), outputs_ok=bool(ok), seen=SEEN)


    def scenario_rename():
        profiler.start(os.path.join(OUT, "p"), hook="triton")
        for n in (64, 64, 32):
            x = torch.ones(n)
            out = torch.zeros(n)
            scale_kernel[(triton.cdiv(n, 16),)](x, out, n, BLOCK=16)
        profiler.finalize()
        RESULT.update(kernels=kernels(os.path.join(OUT, "p.hatchet")))


    def scenario_user_metrics():
        profiler.start(os.path.join(OUT, "p"), hook="triton")
        for _ in range(4):
            x = torch.ones(8)
            user_kernel[(1,)](x, torch.zeros(8), 8, BLOCK=8)
        profiler.finalize()
        RESULT.update(kernels=kernels(os.path.join(OUT, "p.hatchet")))


    def scenario_raising():
        profiler.start(os.path.join(OUT, "p"), hook="triton")
        outputs = []
        for _ in range(3):
            x = torch.arange(20, dtype=torch.float32)
            out = torch.zeros(20)
            raising_kernel[(2,)](x, out, 20, BLOCK=16)
            outputs.append(out.tolist())
        out, want = add(40)  # a later kernel is unaffected
        profiler.finalize()
        RESULT.update(kernels=kernels(os.path.join(OUT, "p.hatchet")), outputs=outputs, calls=SEEN.count("raising"),
                      add_ok=bool(torch.equal(out, want)))


    def scenario_mixed():
        profiler.start(os.path.join(OUT, "p"), hook="triton")
        outputs = []
        for _ in range(3):
            x = torch.full((4,), 3.0)
            out = torch.zeros(4)
            mixed_kernel[(1,)](x, out, 4, BLOCK=4)
            outputs.append(out.tolist())
        profiler.finalize()
        RESULT.update(kernels=kernels(os.path.join(OUT, "p.hatchet")), outputs=outputs)


    def scenario_filters():
        profiler.start(os.path.join(OUT, "p"), hook="triton")
        out = torch.zeros(1)
        for tag in (1, 2):
            add(10)
            add_skip_kernel[(1,)](out, tag)
            other_kernel[(1,)](out, 100 + tag)
            plain_kernel[(1,)](out)
        profiler.finalize()
        RESULT.update(kernels=kernels(os.path.join(OUT, "p.hatchet")),
                      tags=[s for s in SEEN if isinstance(s, int)], adds=sum(isinstance(s, dict) for s in SEEN))


    def scenario_two_sessions():
        backend = get_backend("interpreter")
        first = profiler.start(os.path.join(OUT, "a"), hook="triton")
        installed_hook = backend.before_launch
        second = profiler.start(os.path.join(OUT, "b"), hook="triton")
        same = backend.before_launch is installed_hook
        counts = hook.installed()
        add(30)
        add(30)
        profiler.finalize(first)
        still = backend.before_launch is installed_hook
        add(30)
        profiler.finalize(second)
        RESULT.update(a=kernels(os.path.join(OUT, "a.hatchet")), b=kernels(os.path.join(OUT, "b.hatchet")),
                      same=same, still=still, counts=counts, after=backend.before_launch is None,
                      installed_after=hook.installed())


    def scenario_restore_interpreter():
        backend = get_backend("interpreter")
        calls = []

        def user_before_launch(interpreted, args, grid, kwargs):
            calls.append(interpreted.fn.__name__)

        backend.before_launch = user_before_launch
        profiler.start(os.path.join(OUT, "p"), hook="triton")
        during = backend.before_launch is not user_before_launch
        add(10)
        profiler.finalize()
        restored = backend.before_launch is user_before_launch
        profiler.start(os.path.join(OUT, "q"))  # no hook: the user's before_launch alone
        add(10)
        profiler.finalize()
        RESULT.update(kernels=kernels(os.path.join(OUT, "p.hatchet")), calls=calls, during=during,
                      restored=restored, plain=kernels(os.path.join(OUT, "q.hatchet")))


    class FakeGpuBackend:
        name = "nvidia"


    def lazy(name, fn=None, args=None):
        from triton.compiler.compiler import LazyDict

        metadata = LazyDict({"name": name, "function": 4096, "stream": 0})
        if fn is not None:
            metadata.add(fn, args)
        return metadata


    def gpu_launch(name, fn=None, args=None, record_as=None):
        """What Triton's launcher does around one launch, with the record the backend would make."""
        hooks = launch_hooks.launch_hook_owner()  # where this Triton keeps them

        metadata = lazy(name, fn, args)
        hooks.launch_enter_hook(metadata)
        _native.session.record_host_kernel(record_as or name, 100, 110, (1, 1, 1), (128, 1, 1))
        hooks.launch_exit_hook(metadata)


    def mm_meta(grid, metadata, args):
        m, n, k = args["M"], args["N"], args["K"]
        return {"name": "mm_%dx%dx%d" % (m, n, k), "flops16": 2 * m * n * k, "bytes": 2 * (m * k + k * n + m * n)}


    def scenario_gpu_chain():
        from triton import knobs

        enter_chain, exit_chain = knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook
        user_calls = []

        def user_enter(metadata):
            user_calls.append(("enter", metadata.get()["name"]))

        def user_exit(metadata):
            user_calls.append(("exit", metadata.data["name"]))

        enter_chain.add(user_enter)
        exit_chain.add(user_exit)
        enter_before, exit_before = list(enter_chain.calls), list(exit_chain.calls)
        profiler.start(os.path.join(OUT, "p"), backend="interpreter")  # takes the host records
        first = hook.install(FakeGpuBackend())
        second = hook.install(FakeGpuBackend())  # a second session: installed once
        RESULT["enter_during"] = len(enter_chain.calls)
        RESULT["exit_during"] = len(exit_chain.calls)
        RESULT["counts"] = hook.installed()
        for _ in range(4):
            gpu_launch("mm_kernel", mm_meta, ((1, 1), None, {"M": 16, "N": 32, "K": 8}))
        gpu_launch("mm_kernel", mm_meta, ((1, 1), None, {"M": 4, "N": 4, "K": 4}))
        gpu_launch("plain_gpu")  # no launch_metadata: no metrics, its own name
        first.remove()
        first.remove()  # idempotent
        RESULT["enter_after_one"] = len(enter_chain.calls)
        gpu_launch("mm_kernel", mm_meta, ((1, 1), None, {"M": 16, "N": 32, "K": 8}))
        second.remove()
        RESULT["restored"] = list(enter_chain.calls) == enter_before and list(exit_chain.calls) == exit_before
        RESULT["same_objects"] = (knobs.runtime.launch_enter_hook is enter_chain
                                  and knobs.runtime.launch_exit_hook is exit_chain)
        gpu_launch("mm_kernel", mm_meta, ((1, 1), None, {"M": 2, "N": 2, "K": 2}))  # no hook: no metadata
        profiler.finalize()
        enter_chain.remove(user_enter)
        exit_chain.remove(user_exit)
        RESULT.update(kernels=kernels(os.path.join(OUT, "p.hatchet")), user_calls=len(user_calls),
                      user_last=user_calls[-2:])


    def scenario_gpu_plain_and_errors():
        from triton import knobs

        chain = knobs.runtime.launch_enter_hook
        user_calls = []

        def user_enter(metadata):
            user_calls.append(metadata.data["name"])

        knobs.runtime.launch_enter_hook = user_enter  # a plain callable, as on Triton 3.4/3.5
        profiler.start(os.path.join(OUT, "p"), backend="interpreter")
        handle = hook.install(FakeGpuBackend())
        RESULT["wrapped"] = knobs.runtime.launch_enter_hook is not user_enter
        gpu_launch("mm_kernel", mm_meta, ((1, 1), None, {"M": 8, "N": 8, "K": 8}))

        def raising(grid, metadata, args):
            raise KeyError("missing")

        for _ in range(3):
            gpu_launch("bad_kernel", raising, ((1,), None, {}))
        gpu_launch("odd_kernel", lambda g, m, a: {"bytes": 64, "text": "x"}, ((1,), None, {}))
        gpu_launch("odd_kernel", lambda g, m, a: {"bytes": 64, "text": "y"}, ((1,), None, {}))
        handle.remove()
        RESULT["restored_plain"] = knobs.runtime.launch_enter_hook is user_enter
        del knobs.runtime.launch_enter_hook
        RESULT["chain_back"] = knobs.runtime.launch_enter_hook is chain
        profiler.finalize()
        RESULT.update(kernels=kernels(os.path.join(OUT, "p.hatchet")), user_calls=user_calls)


    def scenario_gpu_class_attributes():
        # Triton 3.1-3.3 keep the launch hooks as CompiledKernel class attributes.
        class CompiledKernel:
            launch_enter_hook = None
            launch_exit_hook = None

        launch_hooks.launch_hook_owner = lambda: CompiledKernel  # the owner Triton 3.2/3.3 have
        profiler.start(os.path.join(OUT, "p"), backend="interpreter")
        handle = hook.install(FakeGpuBackend())
        installed_enter = CompiledKernel.launch_enter_hook is not None
        metadata = lazy("mm_kernel", mm_meta, ((1, 1), None, {"M": 2, "N": 4, "K": 8}))
        CompiledKernel.launch_enter_hook(metadata)
        _native.session.record_host_kernel("mm_kernel", 100, 110, (1, 1, 1), (128, 1, 1))
        CompiledKernel.launch_exit_hook(metadata)
        handle.remove()
        profiler.finalize()
        RESULT.update(kernels=kernels(os.path.join(OUT, "p.hatchet")), installed_enter=installed_enter,
                      restored=CompiledKernel.__dict__["launch_enter_hook"] is None
                      and CompiledKernel.__dict__["launch_exit_hook"] is None)


    def scenario_old_triton():
        triton.__version__ = "3.0.0"
        try:
            hook.install(FakeGpuBackend())
        except RuntimeError as error:
            RESULT["error"] = str(error)
        RESULT["installed"] = hook.installed()


    def scenario_leftover():
        # A launch that fails after its enter hook leaves metadata behind; the next launch of a
        # kernel without launch_metadata must not inherit it.
        profiler.start(os.path.join(OUT, "p"), backend="interpreter")
        handle = hook.install(FakeGpuBackend())
        enter = launch_hooks.launch_hook_owner().launch_enter_hook  # where this Triton keeps it
        enter(lazy("mm_kernel", mm_meta, ((1,), None, {"M": 1, "N": 1, "K": 1})))
        gpu_launch("plain_gpu")
        handle.remove()
        profiler.finalize()
        RESULT.update(kernels=kernels(os.path.join(OUT, "p.hatchet")))


    def counting_meta(grid, metadata, args):
        # launch_metadata doing GPU work of its own, as a bytes count from tensor.sum() would
        helper = torch.zeros(8)
        add_kernel[(1,)](torch.ones(8), torch.ones(8), helper, 8, BLOCK=8)
        return {"bytes": float(helper.sum())}


    @triton.jit(launch_metadata=counting_meta)
    def counted_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)


    def kernel_paths(path):
        with open(path) as f:
            root = json.load(f)[0]
        found = {}

        def walk(node, trail):
            if node["frame"]["kind"] == "kernel":
                found["/".join(trail)] = node["metrics"].get("bytes", 0)
            for child in node["children"]:
                walk(child, trail + [child["frame"]["name"]])

        walk(root, [])
        return found


    def scenario_metadata_launches():
        for context in ("shadow", "python"):
            profiler.start(os.path.join(OUT, context), hook="triton", context=context)
            with profiler.scope("user"):
                with profiler.state("mine"):
                    for _ in range(2):
                        counted_kernel[(1,)](torch.ones(8), 8, BLOCK=8)
            profiler.finalize()
            RESULT[context] = kernel_paths(os.path.join(OUT, context + ".hatchet"))


    def scenario_invalid_filter():
        try:
            hook.install(get_backend("interpreter"))
        except Exception as error:
            RESULT["error"] = "%s: %s" % (type(error).__name__, error)
        RESULT["installed"] = hook.installed()


    if __name__ == "__main__":
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            globals()["scenario_" + sys.argv[1]]()
        RESULT["warnings"] = [str(w.message) for w in caught if ours(w.message)]
        print("RESULT=" + json.dumps(RESULT, default=str))
''')


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    path = tmp_path_factory.mktemp("triton_hook") / "scenarios.py"
    path.write_text(SCENARIOS)
    return path


@pytest.fixture
def run(script, tmp_path):
    def run_scenario(name, **env):
        environ = {k: v for k, v in os.environ.items()
                   if not k.startswith("FLAGTREE_PROFILER_") and k != "TRITON_INTERPRET"}
        environ.update(env)
        done = subprocess.run([sys.executable, str(script), name, str(tmp_path)], env=environ,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"scenario {name} failed:\n{done.stdout}\n{done.stderr}"
        lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT=")]
        assert lines, f"scenario {name} printed no result:\n{done.stdout}\n{done.stderr}"
        return json.loads(lines[-1][len("RESULT="):])

    return run_scenario


@needs_interpreter_metadata
def test_flops_and_bytes_summed_per_node(run):
    result = run("sums")
    assert result["outputs_ok"] is True
    # 5 launches with n=100, 3 with n=50, one with n=10
    assert result["kernels"] == {"add_kernel": {"count": 9, "flops32": 660.0, "bytes": 7920.0}}
    assert result["warnings"] == []


@needs_interpreter_metadata
def test_launch_metadata_called_like_triton_on_gpu(run):
    seen = run("sums")["seen"]
    assert len(seen) == 9
    assert seen[0] == {"grid": [4], "num_warps": 4, "num_stages": 3,
                       "args": ["BLOCK", "n", "out_ptr", "x_ptr", "y_ptr"], "n": 100, "BLOCK": 32}
    assert seen[5]["grid"] == [4] and seen[5]["BLOCK"] == 16 and seen[5]["n"] == 50
    assert seen[8] == {"grid": [1], "num_warps": 2, "num_stages": 3,
                       "args": ["BLOCK", "n", "out_ptr", "x_ptr", "y_ptr"], "n": 10, "BLOCK": 16}


@needs_interpreter_metadata
def test_name_overrides_kernel_node(run):
    result = run("rename")
    assert result["kernels"] == {"scale_64": {"count": 2, "flops16": 256.0},
                                 "scale_32": {"count": 1, "flops16": 64.0}}


@needs_interpreter_metadata
def test_unknown_numeric_keys_kept_as_user_metrics(run):
    result = run("user_metrics")
    assert result["kernels"] == {"user_kernel": {"count": 4, "my_metric": 12.0, "ratio": 1.0, "np_count": 20.0,
                                                 "np_half": 2.0}}
    assert result["warnings"] == []


@needs_interpreter_metadata
def test_raising_launch_metadata_still_launches_and_warns_once(run):
    result = run("raising")
    want = [float(i) + 3.0 for i in range(20)]
    assert result["outputs"] == [want, want, want]
    assert result["calls"] == 3
    assert result["kernels"]["raising_kernel"] == {"count": 3}
    assert result["add_ok"] is True
    assert result["kernels"]["add_kernel"] == {"count": 1, "flops32": 40.0, "bytes": 480.0}
    assert len(result["warnings"]) == 1
    assert "'raising_kernel'" in result["warnings"][0]
    assert "ValueError: boom" in result["warnings"][0]


@needs_interpreter_metadata
def test_non_numeric_values_dropped_with_one_warning(run):
    result = run("mixed")
    assert result["outputs"] == [[2.0] * 4] * 3
    assert result["kernels"] == {"mixed_kernel": {"count": 3, "bytes": 24.0}}
    assert len(result["warnings"]) == 1
    message = result["warnings"][0]
    assert "'mixed_kernel'" in message
    for key in ("'note'", "'flag'", "'nan'", "'shape'"):
        assert key in message
    assert "'bytes'" not in message


@needs_interpreter_metadata
def test_include_and_exclude_filters(run):
    result = run("filters", FLAGTREE_PROFILER_HOOK_INCLUDE="^add", FLAGTREE_PROFILER_HOOK_EXCLUDE="skip")
    assert result["kernels"] == {"add_kernel": {"count": 2, "flops32": 20.0, "bytes": 240.0},
                                 "add_skip_kernel": {"count": 2}, "other_kernel": {"count": 2},
                                 "plain_kernel": {"count": 2}}
    assert result["tags"] == []  # filtered kernels never have launch_metadata evaluated
    assert result["adds"] == 2


@needs_interpreter_metadata
def test_exclude_filter_alone(run):
    result = run("filters", FLAGTREE_PROFILER_HOOK_EXCLUDE="^other")
    assert result["kernels"]["other_kernel"] == {"count": 2}
    assert result["kernels"]["add_skip_kernel"] == {"count": 2, "bytes": 2.0}
    assert result["tags"] == [1, 2]


def test_invalid_filter_is_a_clear_error(run):
    result = run("invalid_filter", FLAGTREE_PROFILER_HOOK_INCLUDE="(unclosed")
    assert result["error"].startswith("ValueError: FLAGTREE_PROFILER_HOOK_INCLUDE is not a valid regular expression")
    assert result["installed"] == {}


@needs_interpreter_metadata
def test_two_sessions_install_once(run):
    result = run("two_sessions")
    assert result["same"] is True and result["still"] is True
    assert result["counts"] == {"interpreter": 2}
    assert result["a"] == {"add_kernel": {"count": 2, "flops32": 60.0, "bytes": 720.0}}
    assert result["b"] == {"add_kernel": {"count": 3, "flops32": 90.0, "bytes": 1080.0}}
    assert result["after"] is True
    assert result["installed_after"] == {}


@needs_interpreter_metadata
def test_previous_interpreter_hook_chained_and_restored(run):
    result = run("restore_interpreter")
    assert result["during"] is True
    assert result["restored"] is True
    assert result["calls"] == ["add_kernel", "add_kernel"]  # during the session and after it
    assert result["kernels"] == {"add_kernel": {"count": 1, "flops32": 10.0, "bytes": 120.0}}
    assert result["plain"] == {"add_kernel": {"count": 1}}


@needs_knob_hooks
def test_gpu_hook_chain_install_chaining_and_remove(run):
    result = run("gpu_chain")
    assert result["counts"] == {"triton": 2}
    assert result["enter_during"] == 2 and result["exit_during"] == 2  # the user's hook and ours, once
    assert result["enter_after_one"] == 2  # one session still open
    assert result["restored"] is True and result["same_objects"] is True
    assert result["kernels"] == {
        "mm_16x32x8": {"count": 5, "flops16": 5 * 2 * 16 * 32 * 8, "bytes": 5 * 2 * (16 * 8 + 8 * 32 + 16 * 32)},
        "mm_4x4x4": {"count": 1, "flops16": 128.0, "bytes": 96.0},
        "plain_gpu": {"count": 1},
        "mm_kernel": {"count": 1},  # launched after remove(): no metadata, its own name
    }
    assert result["user_calls"] == 16  # the user's enter and exit hooks ran for all 8 launches
    assert result["warnings"] == []


@needs_knob_hooks
def test_gpu_plain_callable_hook_chained_restored_and_errors(run):
    result = run("gpu_plain_and_errors")
    assert result["wrapped"] is True
    assert result["restored_plain"] is True and result["chain_back"] is True
    assert result["user_calls"] == ["mm_kernel", "bad_kernel", "bad_kernel", "bad_kernel", "odd_kernel",
                                    "odd_kernel"]
    assert result["kernels"] == {"mm_8x8x8": {"count": 1, "flops16": 1024.0, "bytes": 384.0},
                                 "bad_kernel": {"count": 3}, "odd_kernel": {"count": 2, "bytes": 128.0}}
    assert len(result["warnings"]) == 2
    raised = [w for w in result["warnings"] if "'bad_kernel'" in w]
    odd = [w for w in result["warnings"] if "'odd_kernel'" in w]
    assert len(raised) == 1 and "KeyError" in raised[0]
    assert len(odd) == 1 and "'text'" in odd[0]


def test_gpu_class_attribute_hooks_of_triton_3_2(run):
    result = run("gpu_class_attributes")
    assert result["installed_enter"] is True
    assert result["restored"] is True
    assert result["kernels"] == {"mm_2x4x8": {"count": 1, "flops16": 128.0, "bytes": 2.0 * (16 + 32 + 8)}}


def test_too_old_triton_is_a_clear_error(run):
    result = run("old_triton")
    assert "3.0.0" in result["error"] and "3.1" in result["error"]
    assert result["installed"] == {}


def test_leftover_metadata_not_inherited(run):
    result = run("leftover")
    assert result["kernels"] == {"plain_gpu": {"count": 1}}


@needs_interpreter_metadata
def test_kernels_launched_by_launch_metadata_go_under_their_own_state(run, tmp_path, capsys):
    result = run("metadata_launches")
    # shadow: beside the kernel, under the same scopes; the user's state stays on the user's kernel
    # (bytes: 2 launches x 16 counted by helper.sum(); the helper add_kernel's own 2 x 12 x 8)
    assert result["shadow"] == {"user/mine/counted_kernel": 32.0, "user/__launch_metadata/add_kernel": 192.0}
    python = result["python"]
    assert len(python) == 2
    (own,) = [p for p in python if p.endswith("/mine/counted_kernel")]
    (inner,) = [p for p in python if p.endswith("/__launch_metadata/add_kernel")]
    assert "@counting_meta" in inner and "@counting_meta" not in own
    # the viewer hides them unless asked
    from flagtree.profiler.viewer.cli import main

    capsys.readouterr()
    assert main(["--no-color", "-m", "count", str(tmp_path / "shadow.hatchet")]) == 0
    hidden = capsys.readouterr().out
    assert main(["--no-color", "-m", "count", "--launch-metadata", str(tmp_path / "shadow.hatchet")]) == 0
    shown = capsys.readouterr().out
    assert "counted_kernel" in hidden and "__launch_metadata" not in hidden and "__launch_metadata" in shown
