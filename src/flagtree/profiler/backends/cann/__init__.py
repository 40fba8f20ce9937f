"""backend="cann" (Huawei Ascend, MSPTI): the backend (backend.py, with the LD_PRELOAD restart of
`flagtree-profiler -b cann`), the vendor metrics run of aclprof/msprof (metrics.py) and the
msprof CSV it imports (msprof_csv.py).

Nothing is imported here, so a session on another backend does not import this one.
"""
