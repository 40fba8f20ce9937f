"""Kernel-side scopes (``flagtree.profiler.language``), shared by the backends that compile them
in: backend="instrumentation" (kernel nodes from CUPTI) and backend="device_timer" (kernel nodes
from the scoped kernels' own buffer headers). Neither backend imports the other; both use this.

* options.py: the scopes' compile options and the instrumentation_mode string that carries them;
* compiler_hook.py: Triton's proton passes at the compiler's instrumentation point
  (through triton_glue);
* scopes.py: KernelScopes, the installed whole (hooks, pool, collector, delivery to sessions);
* pool.py, collector.py, layout.py, device_reduce.py, kernel_info.py, warp_specialized.py: the
  profile buffers, reading them back, decoding the records, the compiled kernel's facts.
"""
