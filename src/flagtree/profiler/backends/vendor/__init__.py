"""Backends on other vendors' devices: cann (Huawei Ascend, MSPTI), mthreads (Moore Threads,
MUPTI) and tianshu (Iluvatar CoreX). cann and mthreads are one dialect tracer (dialect.py) with a
different symbol table; mode_options.py is the vendor mode grammar they and tianshu share.

Nothing is imported here, so a session on one backend does not import the others.
"""
