"""Why an inductor kernel compiled before a device_timer session is not stamped at its first
launch: runs bench/third_party_workloads.py's torch.compile step before and in a session and prints
the metadata's event-timed and not-timed kernels with their reasons."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import flagtree.profiler as profiler  # noqa: E402
from third_party_workloads import BUILDERS  # noqa: E402

step = BUILDERS["compile"]()
step()
step()
name = os.path.join(tempfile.mkdtemp(), "p")
sid = profiler.start(name, backend="device_timer")
step()
profiler.finalize(sid)
meta = json.load(open(name + ".meta.json"))
for key in ("device_timer_event_timed_kernels", "device_timer_not_timed_kernels", "device_timer_kernels_stamped_at_first_launch"):
    value = meta.get(key)
    print(key, json.dumps(dict(list(value.items())[:2]) if isinstance(value, dict) else value)[:700])
# The static launchers inductor holds, and the attributes the stamped runner needs of them.
import gc  # noqa: E402

statics = [o for o in gc.get_objects() if type(o).__name__ == "StaticallyLaunchedCudaKernel"]
print("static kernels", len(statics))
for static in statics[:1]:
    print("attributes", sorted(a for a in vars(static) if not a.startswith("__")))
    print("has_profile_scratch", getattr(static, "has_profile_scratch", "<absent>"),
          "has_global_scratch", getattr(static, "has_global_scratch", "<absent>"),
          "arg_tys", getattr(static, "arg_tys", "<absent>"), "cubin_path", getattr(static, "cubin_path", "<absent>"))
