"""backend="cann" (Huawei Ascend, MSPTI): the backend (backend.py, with the LD_PRELOAD restart of
`flagtree-profiler`, preload.py, and the join of triton-ascend's queued launches, task_queue.py),
the vendor metrics run of aclprof/msprof (metrics.py) and the msprof CSV it imports (msprof_csv.py).

Only the machine check is here (the registry's ``likely``, asked by the command before its target
starts); nothing is imported, so a session on another backend does not import this one.
"""
import importlib.util
import os


def ascend_installed():
    """Whether cann would likely be chosen here (triton-ascend's backend or torch_npu installed: an
    Ascend machine). The choice itself is made later, from Triton's active target; this is asked
    without importing Triton."""
    if importlib.util.find_spec("torch_npu") is not None:
        return True
    spec = importlib.util.find_spec("triton")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if os.path.isdir(os.path.join(folder, "backends", "ascend")):
            return True
    return False
