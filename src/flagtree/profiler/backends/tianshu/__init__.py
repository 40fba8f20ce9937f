"""backend="tianshu" (Iluvatar CoreX): the backend (backend.py), CoreX detection (corex.py, which
backend selection and the device timer's stamper ask), the ``--ixkn`` extension of
`flagtree-profiler` (ixkn_cli.py) and the ixKN vendor import (ixkn_csv.py, ixkn_import.py).

Only the detection is imported here: selecting a backend on a CUDA target asks it, and must
not load the backend.
"""
from .corex import corex_detected, is_corex

__all__ = ["corex_detected", "is_corex"]
