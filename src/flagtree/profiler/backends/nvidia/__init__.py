"""NVIDIA backends: nvidia (CUPTI activity, backend.py), cupti and cupti_pcsampling (cupti.py),
hardware counters (counters.py) and CUPTI kept attached between sessions (cupti_attach.py).

Nothing is imported here: the registry (backends/__init__.py) imports a backend's module when it
is asked for, and `import flagtree.profiler` reaches counters.py and cupti_attach.py alone.
"""
