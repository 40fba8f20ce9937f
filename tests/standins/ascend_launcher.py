"""A kernel launcher as triton-ascend generates it (third_party/ascend/backend/driver.py), over
the stand-in libmspti.so's runtime: Triton's launch hooks run on the calling thread; with the task
queue on (TRITON_ENABLE_TASKQUEUE, default true, read when the launcher is generated) the
rtKernelLaunch is a task on torch_npu's queue, run later on the queue's own thread, first in,
first out; with it off the launch runs inside the hooks and is followed by a stream
synchronisation.

The queue's thread runs concurrently with the Python thread. To make that deterministic, it runs
the tasks queued so far while the next launch is between its hooks (the moment a window pushed by
the hooks would be open), and everything at synchronize(). torch_npu's operators are tasks on the
same queue (aclrtLaunchKernel, seen by MSPTI's callbacks when preloaded)."""
import os
import threading

from flagtree.profiler.triton_glue.launch_hooks import launch_hook_owner

LAUNCH = 10  # MSPTI_CBID_RUNTIME_LAUNCH


class LaunchMetadata:
    """What Triton hands its launch hooks (the lazy dict's .data)."""

    def __init__(self, name, stream):
        self.data = {"name": name, "stream": stream}


class AscendLauncher:
    def __init__(self, lib):
        self.lib = lib
        self.queued = os.environ.get("TRITON_ENABLE_TASKQUEUE", "true").lower() in ("true", "1")
        self._tasks = []
        self._lock = threading.Lock()
        self._go = threading.Semaphore(0)
        self._done = threading.Semaphore(0)
        self._thread = threading.Thread(target=self._queue_thread, daemon=True)
        self._thread.start()
        self.queue_thread_ids = set()

    def launch(self, kernel, stream=3, ns=1000):
        hooks = launch_hook_owner()  # where this Triton keeps the hooks the profiler installs, read at each launch
        meta = LaunchMetadata(kernel, stream)
        hooks.launch_enter_hook(meta)
        task = lambda: self.lib.standin_rt_launch(kernel.encode(), stream, ns)  # noqa: E731
        if self.queued:
            self._run_queue()  # the queue thread works while this launch is between its hooks
            self._enqueue(task)
        else:
            task()
            self.lib.aclrtSynchronizeDevice()  # rtStreamSynchronize after each launch
        hooks.launch_exit_hook(meta)

    def operator(self, name, stream=3, ns=1000):
        """A torch_npu operator: an aclrtLaunchKernel task on the same queue."""
        self._enqueue(lambda: self.lib.standin_launch(name.encode(), LAUNCH, stream, ns))

    def synchronize(self):
        self._run_queue()

    def close(self):
        self._enqueue(None)
        self._go.release()
        self._thread.join()

    def _enqueue(self, task):
        with self._lock:
            self._tasks.append(task)

    def _run_queue(self):
        self._go.release()
        self._done.acquire()

    def _queue_thread(self):
        self.queue_thread_ids = {threading.get_ident()}
        while True:
            self._go.acquire()
            with self._lock:
                tasks, self._tasks = self._tasks, []
            for task in tasks:
                if task is None:
                    return
                task()
            self._done.release()
