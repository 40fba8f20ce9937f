"""The analysis API: profiles as Python objects for notebooks and scripts.

    import flagtree.profiler as profiler
    prof = profiler.read("run.hatchet")          # several paths merge, as in the viewer
    prof.top(5)                                  # the top kernels (pandas DataFrame)
    df = prof.to_dataframe()                     # one row per node
    gf = prof.to_graphframe()                    # llnl-hatchet, built without recursion

Same numbers as ``flagtree-profiler-viewer``: the viewer's reader, merging, filters and metric
code compute them. See docs/reference/analysis.md.
"""

from ..viewer.errors import ViewerError
from .node import NodeView
from .profile import DEFAULT_METRICS, Profile, read

__all__ = ["read", "parse", "Profile", "NodeView", "ViewerError", "DEFAULT_METRICS"]


def parse(metrics, filename, include=None, exclude=None):
    """Proton's ``proton.viewer.parse(metrics, filename, include, exclude)`` shape:
    ``(GraphFrame, metric column names)``, the derived columns named as the viewer names them."""
    profile = read(filename, metrics=metrics, include=include, exclude=exclude)
    return profile.to_graphframe(), list(profile.metrics)
