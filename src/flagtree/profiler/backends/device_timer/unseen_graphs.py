"""Replays of CUDA graphs captured before the device timer's ring started: counted by kernel name,
never silently absent.

Such a graph (torch.compile's ``mode="reduce-overhead"`` warmed up and captured before the first
session, as in most serving and training jobs) replays kernels that got no ring slot and no graph
descriptor at capture: nothing the ring reads back. graph_replays.py's ``replay`` wrapper hands
every replay of a graph it did not see captured (no label) to ``UnseenGraphs.replay``:

- once per graph (kept on the graph object; a new capture drops it): its kernel nodes, listed
  through the CUDA driver from torch's ``CUDAGraph.raw_cuda_graph()`` (csrc/backends/device_timer/
  graph_walk.h). torch keeps that graph only with ``keep_graph=True`` (torch 2.8 and later); its
  default, and inductor's, instantiates and destroys it at ``capture_end``: such a graph's kernels
  cannot be listed, and its replays are counted as replays, with the reason;
- each replay: its graph's replay count goes up (names x nodes are summed for the metadata) and,
  while launches that cannot be stamped are timed by events, the replay as a whole is timed by
  two CUDA events on its stream: one record named ``<cuda graph replay>`` under the context
  ``replay()`` ran in (event_timed.py).

The kernels counted by name are Triton's: names of the Triton kernels alive in the process
(``CompiledKernel``s, inductor's statically launched kernels). Other kernel nodes (torch's own,
cuBLAS) are counted apart, as the device timer does not see them elsewhere either.
"""
import threading
from dataclasses import dataclass, field

from ...native_core import native as _native_module
from ...triton_glue import kernels as triton_kernels

ATTR = "_flagtree_profiler_unseen_graph"  # a graph's UnseenGraph, on the CUDAGraph instance
REASON = "replayed from a CUDA graph captured before the device timer's ring started (no stamps): not timed"
REPLAY_NAME = "<cuda graph replay>"
REPLAY_TIMED = ("a replay of a CUDA graph captured before the device timer's ring started, timed as a whole "
                "(its kernels are not timed one by one)")
NO_RAW_GRAPH = "torch's CUDAGraph has no raw_cuda_graph() (torch 2.8 and later have it)"


@dataclass
class UnseenGraph:
    """What one graph replays, and how often it was replayed through ``replay()``."""
    kernels: dict = field(default_factory=dict)  # Triton kernel name -> nodes of that name
    others: int = 0  # kernel nodes of other kernels (not counted by name)
    unlisted: str = ""  # why its kernel nodes could not be listed ("" when they were)
    replays: int = 0
    timed: object = None  # the event-timed replay, for `timed_by`
    timed_by: object = None  # the EventTimed it was made by


class UnseenGraphs:
    """The graphs replayed without their capture having been seen, for the backend's lifetime."""

    def __init__(self, native=None, names=triton_kernels.triton_kernel_names):
        self.native = native or _native_module
        self.names = names  # () -> the names of the Triton kernels alive
        self.events = None  # event_timed.EventTimed while replays are timed by events
        self._graphs = []
        self._lock = threading.Lock()

    def replay(self, graph, replay, args, kwargs, stream_of):
        """One replay of `graph` (replay(graph, *args, **kwargs) launches it): counted, and timed as
        a whole by events where they run."""
        known = getattr(graph, ATTR, None)
        if known is None:
            known = self._learn(graph)
        known.replays += 1
        events = self.events
        if events is None:
            return replay(graph, *args, **kwargs)
        if known.timed_by is not events:
            known.timed, known.timed_by = self._timed(events, replay), events
        if known.timed is None:
            return replay(graph, *args, **kwargs)
        return known.timed(stream_of(graph), graph, args, kwargs)

    @staticmethod
    def _timed(events, replay):
        def launch(stream, graph, args, kwargs):
            return replay(graph, *args, **kwargs)

        return events.wrap(launch, REPLAY_NAME, REPLAY_TIMED, "graph-replay")

    def _learn(self, graph):
        known = UnseenGraph()
        names, known.unlisted = self._kernel_nodes(graph)
        if names:
            triton = self.names()
            for name in names:
                if name in triton:
                    known.kernels[name] = known.kernels.get(name, 0) + 1
                else:
                    known.others += 1
        try:
            setattr(graph, ATTR, known)
        except AttributeError:  # an instance without a __dict__: counted, listed again next time
            pass
        with self._lock:
            self._graphs.append(known)
        return known

    def _kernel_nodes(self, graph):
        """(kernel node names, "") or ([], why they could not be listed)."""
        raw = getattr(graph, "raw_cuda_graph", None)
        if raw is None:
            return [], NO_RAW_GRAPH
        try:
            handle = raw()
        except RuntimeError as error:  # keep_graph=False: torch destroyed it after instantiating
            return [], f"torch kept no cudaGraph_t of it (captured with keep_graph=False): {str(error)[:160]}"
        try:
            names, error = self.native.device_timer.device_timer_graph_kernel_names(int(handle))
        except Exception as error:  # no driver, or a driver without the graph calls
            return [], f"{type(error).__name__}: {str(error)[:200]}"
        return (list(names), "") if not error else ([], f"its nodes could not be listed: {error}")

    def counts(self):
        """{"kernels": {name: launches}, "replays", "unlisted": replays not listed, "others":
        launches of other kernel nodes, "reason": why the last unlisted graph was not listed}."""
        with self._lock:
            graphs = list(self._graphs)
        kernels, totals = {}, {"replays": 0, "unlisted": 0, "others": 0, "reason": ""}
        for graph in graphs:
            replays = graph.replays
            totals["replays"] += replays
            totals["others"] += graph.others * replays
            if graph.unlisted:
                totals["unlisted"] += replays
                totals["reason"] = graph.unlisted
            for name, nodes in graph.kernels.items():
                kernels[name] = kernels.get(name, 0) + nodes * replays
        return totals | {"kernels": kernels}


def session_stats(now, at_start):
    """The metadata's part from two counts(): the replays counted in a session, and their Triton
    kernels' launches by name (for device_timer_not_timed_kernels)."""
    before = at_start or {"kernels": {}}
    kernels = {}
    for name, launches in sorted(now["kernels"].items()):
        launches -= before["kernels"].get(name, 0)
        if launches:
            kernels[name] = {"launches": launches, "reason": REASON}
    stats = {"device_timer_graph_replays_unseen": now["replays"] - before.get("replays", 0),
             "device_timer_graph_replays_unlisted": now["unlisted"] - before.get("unlisted", 0),
             "device_timer_graph_other_kernels_unseen": now["others"] - before.get("others", 0)}
    if stats["device_timer_graph_replays_unlisted"]:
        stats["device_timer_graph_unlisted_reason"] = now["reason"]
    return stats, kernels


def warn_unlisted(stats, session, warn):
    """One warning a session: replays whose kernels could not be counted by name."""
    unlisted = stats.get("device_timer_graph_replays_unlisted", 0)
    if not unlisted:
        return
    timed = (stats.get("device_timer_event_timed_kernels") or {}).get(REPLAY_NAME, {}).get("launches", 0)
    how = (f"{timed} of them timed as a whole ('{REPLAY_NAME}' records)" if timed else
           "nor timed (event timing is off)")
    warn(f"flagtree.profiler: backend 'device_timer': {unlisted} replays of CUDA graphs captured before the "
         f"session's ring started were not counted by kernel ({stats.get('device_timer_graph_unlisted_reason')}), "
         f"{how}; open the session before the capture, or arm the route before it (arm_device_timer(), "
         f"FLAGTREE_PROFILER_DEVICE_TIMER_ARM), to time each kernel; counts in {session.metadata_path}")
