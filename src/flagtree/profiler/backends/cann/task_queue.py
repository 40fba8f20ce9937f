"""How the cann backend's Triton launch hooks join a launch to its kernel, by the way triton-ascend
launches it.

triton-ascend's launcher puts the runtime's launch on torch_npu's task queue unless
TRITON_ENABLE_TASKQUEUE is false (its default is true; it is read when a kernel's launcher is
generated): the launch hooks run on the Python thread, the rtKernelLaunch later on the queue's
thread. A window pushed around the hooks would bracket only the enqueue, and MSPTI, which takes
the external id from its one process-wide stack when the runtime reports the launch, would hand
that id to whatever the queue thread launches meanwhile. So a queued launch pushes nothing: it is
registered with its kernel name and its kernel record joins it by name in queue order
(csrc/backends/cann/queued_join.h). Without the task queue the launch runs inside the hooks and
gets a window of its own (csrc/backends/cann/external_join.h)."""
import os

TASK_QUEUE_ENV = "TRITON_ENABLE_TASKQUEUE"


def task_queue_on(environ=None):
    """True when triton-ascend puts launches on the task queue (its reading of the variable)."""
    value = (os.environ if environ is None else environ).get(TASK_QUEUE_ENV, "true")
    return value.lower() in ("true", "1")


def name_and_stream(metadata):
    """The kernel's name and stream handle from what Triton hands its launch hooks (a LazyDict,
    or a plain dict); ("", 0) where it says nothing."""
    data = getattr(metadata, "data", metadata)
    try:
        name, stream = data.get("name", ""), data.get("stream", 0)
    except AttributeError:
        return "", 0
    return str(name or ""), stream if isinstance(stream, int) and 0 <= stream < 2 ** 64 else 0


def launch_hooks(cann, queued):
    """(enter, exit) hooks for Triton's launch hook chain; `cann`: the native module's cann part."""
    if queued:
        def enter(metadata):
            cann.mspti_launch_queued(*name_and_stream(metadata))

        def exit(metadata):
            pass  # nothing was pushed
        return enter, exit

    def enter(metadata):
        cann.mspti_launch_enter()

    def exit(metadata):
        cann.mspti_launch_exit()
    return enter, exit


def describe(queued):
    """The metadata's words for the join chosen."""
    if queued:
        return (f"queue order by kernel name ({TASK_QUEUE_ENV} is on: the runtime launches on the task queue's "
                f"thread, outside Triton's launch hooks)")
    return f"external correlation id pushed around the launch ({TASK_QUEUE_ENV} is off)"
