"""Which context a thread's launches get (README, "Threads and autograd"), with real threads:
threads started through threading.Thread inherit their starter's context at start(); other
threads (autograd's engine threads; here a _thread stand-in) inherit the context of a thread
waiting in backward()/autograd.grad. Real torch CPU autograd drives the backward passes."""
import os
import threading

import pytest
import torch

import flagtree.profiler as profiler
from support.kernels import launch_add, launch_copy, tensors
from support.profiles import kernel_counts, load_tree, walk
from support.threads import ForeignThread, run_threads

# Triton's interpreter is not thread-safe: launches from several threads take turns.
interpreter_lock = threading.Lock()


def launch(kind="add"):
    x, y, out = tensors()
    with interpreter_lock:
        launch_add(x, y, out) if kind == "add" else launch_copy(x, out)


@pytest.fixture(autouse=True)
def no_open_sessions():
    yield
    profiler.finalize()


@pytest.fixture
def foreign():
    thread = ForeignThread()
    yield thread
    thread.stop()


def tree(tmp_path, name):
    return load_tree(tmp_path / f"{name}.hatchet")[0]


def test_thread_inherits_its_starters_stack_frozen_at_start(tmp_path):
    profiler.start(str(tmp_path / "t"))
    go = threading.Event()

    def worker():
        go.wait(timeout=30)
        launch("add")  # empty own stack: the starter's stack at start()
        with profiler.scope("inner"):  # own scopes nest under it
            launch("copy")

    with profiler.scope("outer"):
        with profiler.state("st"):
            thread = threading.Thread(target=worker)
            thread.start()
    with profiler.scope("later"):  # entered after start(): not seen by the thread
        go.set()
        thread.join()
    profiler.finalize()
    assert kernel_counts(tree(tmp_path, "t")) == {("outer", "st", "add_kernel"): 1,
                                                  ("outer", "inner", "st", "copy_kernel"): 1}


def test_eight_threads_each_under_their_own_starter(tmp_path):
    profiler.start(str(tmp_path / "t8"))
    threads = []

    def worker(i):
        with profiler.scope(f"w{i}"):
            for _ in range(i + 1):
                launch("add")

    for i in range(8):
        with profiler.scope(f"p{i}"):
            threads.append(threading.Thread(target=worker, args=(i,)))
            threads[-1].start()
    for t in threads:
        t.join()
    profiler.finalize()
    assert kernel_counts(tree(tmp_path, "t8")) == {(f"p{i}", f"w{i}", "add_kernel"): i + 1 for i in range(8)}


class HandOff(torch.autograd.Function):
    """y = 2x whose backward launches a kernel on another thread and waits for it, as autograd's
    CUDA engine thread launches while the calling thread waits in backward()."""

    thread = None

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        HandOff.thread.call(lambda: launch("copy"))
        return grad * 2


@pytest.mark.parametrize("entry", ["tensor.backward", "autograd.backward", "autograd.grad"])
def test_engine_thread_launches_under_the_thread_waiting_in_backward(tmp_path, foreign, entry):
    HandOff.thread = foreign
    profiler.start(str(tmp_path / "b"))
    x = torch.ones(4, requires_grad=True)
    with profiler.scope("step"):
        loss = HandOff.apply(x).sum()
        with profiler.scope("backward"):
            if entry == "tensor.backward":
                loss.backward()
            elif entry == "autograd.backward":
                torch.autograd.backward([loss])
            else:
                (grad,) = torch.autograd.grad(loss, x)
                assert grad.tolist() == [2.0] * 4
    foreign.call(lambda: launch("add"))  # nobody waits in backward now: ROOT
    profiler.finalize()
    assert kernel_counts(tree(tmp_path, "b")) == {("step", "backward", "copy_kernel"): 1, ("add_kernel",): 1}


def test_started_thread_keeps_its_starter_while_another_drives_backward(tmp_path, foreign):
    # A thread started through threading.Thread never takes a driving thread's stack.
    profiler.start(str(tmp_path / "k"))
    inside = threading.Event()
    done = threading.Event()

    class Block(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            inside.set()
            assert done.wait(timeout=30)
            return grad

    def worker():
        assert inside.wait(timeout=30)
        launch("add")
        done.set()

    thread = threading.Thread(target=worker)  # started outside any scope
    thread.start()
    with profiler.scope("backward"):
        Block.apply(torch.ones(2, requires_grad=True)).sum().backward()
    thread.join()
    profiler.finalize()
    assert kernel_counts(tree(tmp_path, "k")) == {("add_kernel",): 1}


def test_python_context_engine_kernels_under_the_backward_call_site(tmp_path, foreign):
    HandOff.thread = foreign
    profiler.start(str(tmp_path / "py"), context="python")
    x = torch.ones(4, requires_grad=True)
    HandOff.apply(x).sum().backward()
    profiler.finalize()
    (path,) = [p for p, n in walk(tree(tmp_path, "py")) if n["frame"].get("kind") == "kernel"]
    here = [i for i, frame in enumerate(path) if "test_threads.py" in frame and
            "@test_python_context_engine_kernels_under_the_backward_call_site" in frame]
    own = [i for i, frame in enumerate(path) if "test_threads.py" in frame and "@<lambda>" in frame]
    # The driving thread's call site first, then the engine thread's own frames, then the kernel.
    assert here and own and here[0] < own[0] < len(path) - 1, path


def test_thread_start_and_backward_entry_are_restored_at_finalize(tmp_path):
    start, run_backward = threading.Thread.start, torch.autograd._engine_run_backward
    profiler.start(str(tmp_path / "r"))
    assert threading.Thread.start is not start
    assert torch.autograd._engine_run_backward.__wrapped__ is run_backward
    profiler.finalize()
    assert threading.Thread.start is start and torch.autograd._engine_run_backward is run_backward


def test_inheritance_is_per_thread_under_concurrent_workers(tmp_path):
    # Workers hold their own scopes at once; each sees only its starter's stack.
    profiler.start(str(tmp_path / "c"))
    barrier = threading.Barrier(4)

    def worker(i):
        with profiler.scope(f"own{i}"):
            barrier.wait(timeout=30)
            launch("add")

    with profiler.scope("parent"):
        run_threads(worker, range(4))
    profiler.finalize()
    assert kernel_counts(tree(tmp_path, "c")) == {("parent", f"own{i}", "add_kernel"): 1 for i in range(4)}


def test_interpreter_grid_is_each_launchs_own_under_eight_threads(tmp_path):
    # Eight threads launch at once, each with its own grid. The interpreter cannot run two
    # kernels at once, so only its run takes turns (a lock below the backend's wrapper); the
    # backend's own work around each launch overlaps the other threads', with frequent switches.
    import sys

    import triton

    from flagtree.profiler.triton_glue.interpreter import install_launch
    from support.kernels import add_kernel

    def in_turn(original):
        def run_in_turn(*args, **kwargs):
            with interpreter_lock:
                return original(*args, **kwargs)
        return run_in_turn

    undo_turns = install_launch(in_turn)  # beneath the backend's, on every Triton's interpreter
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    profiler.start(str(tmp_path / "g"))
    barrier = threading.Barrier(8)

    def worker(i):
        n = 16 * (i + 1)
        x, y, out = tensors(n)
        with profiler.scope(f"t{i}"):
            barrier.wait(timeout=30)
            for _ in range(3):
                add_kernel[lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)](x, y, out, n, BLOCK=16)

    try:
        run_threads(worker, range(8))
    finally:
        sys.setswitchinterval(previous)
        profiler.finalize()
        undo_turns()
    grids = {p[0]: n["metadata"]["grid"] for p, n in walk(tree(tmp_path, "g")) if n["frame"].get("kind") == "kernel"}
    assert grids == {f"t{i}": [i + 1, 1, 1] for i in range(8)}


def test_torch_imported_after_the_session_opened_is_wrapped(tmp_path):
    # flagtree-profiler opens its session before the script imports torch
    script = tmp_path / "late_torch.py"
    script.write_text(
        "import os, sys, threading, _thread\n"
        "os.environ['TRITON_INTERPRET'] = '1'\n"
        "import flagtree.profiler as profiler\n"
        "profiler.start(sys.argv[1])\n"
        "assert 'torch' not in sys.modules\n"
        "import torch\n"
        "assert hasattr(torch.autograd._engine_run_backward, '__wrapped__')\n"
        "from flagtree.profiler import _native\n"
        "seen = []\n"
        "class F(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x): return x * 2\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        done = threading.Event()\n"
        "        _thread.start_new_thread(lambda: (seen.append(_native.context.context_inherited()), done.set()), ())\n"
        "        done.wait(30)\n"
        "        return g * 2\n"
        "with profiler.scope('late'):\n"
        "    F.apply(torch.ones(2, requires_grad=True)).sum().backward()\n"
        "profiler.finalize()\n"
        "assert seen == [['late']], seen\n"
        "assert not hasattr(torch.autograd._engine_run_backward, '__wrapped__')\n"
        "print('ok')\n")
    import subprocess
    import sys

    env = dict(os.environ)
    env.pop("FLAGTREE_PROFILER_DISABLE", None)
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "late")], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-2000:]
