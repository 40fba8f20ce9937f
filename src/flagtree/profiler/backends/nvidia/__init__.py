"""NVIDIA backends: nvidia (CUPTI activity, backend.py), cupti and cupti_pcsampling (cupti.py),
hardware counters (counters.py), CUPTI kept attached between sessions (cupti_attach.py) and the
``--list-metrics`` extension of `flagtree-profiler` (metrics_cli.py).

Nothing is imported here: the registry (backends/__init__.py) imports a backend's module when it
is asked for, and `flagtree.profiler.list_metrics()` and `release()` import theirs when called.
"""
