"""CUDA graphs launched through torch, for backend="device_timer".

The device timer sees a graph's replays on the device (each captured Triton launch keeps a
descriptor whose tickets number its replays), never the graph launches. torch.cuda.CUDAGraph
(which torch.compile's cudagraph trees and vLLM replay) is wrapped so that the native side
learns both ends (csrc/backends/device_timer/graph_replays.h):

- ``capture_begin`` .. ``capture_end`` label the capture on the calling thread: the launches it
  captures get descriptors of that label (one graph);
- ``replay`` notes the graph's next replay before launching it: the stream it goes to, and, while
  a device-timer session is active, the context it ran in.

Record r of each descriptor is then filed under replay r's context -> ``<captured_at>`` ->
capture path, on replay r's stream. A graph not captured through the wrapper, or also launched
another way (a raw ``cudaGraphLaunch``), keeps the capture context only. A replay of a graph whose
capture the wrapper did not see (captured before the ring started), or whose capture took no
descriptor (captured between sessions, its kernels without stamps), goes to unseen_graphs.py,
which counts its kernels by name (their launches carry no usable stamps).

The wrapper stays in place while the ring does (from the first session to ``free()``), across
sessions: a replay between two sessions must still be counted, or the ordinals of the later
replays would no longer pair with their records. A replay costs one native call and a look-up
of the current stream.
"""
import functools
import sys
import threading

from .unseen_graphs import ATTR as UNSEEN

LABEL = "_flagtree_profiler_graph_label"  # the capture's label, on the CUDAGraph instance
_WRAPPED = ("capture_begin", "capture_end", "replay")
_lock = threading.Lock()
_installed = {}  # class -> {method name: what the class itself held (None: inherited)}
_unseen = [None]  # the UnseenGraphs replays of unlabelled graphs go to (None: launched as they are)
_on_capture = [None]  # told when a capture begins (True) and ends (False): compile_pause.py


def graph_class():
    """torch.cuda.CUDAGraph where torch is already imported (a program without torch replays no
    torch graphs), else None."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None) if torch is not None else None
    cls = getattr(cuda, "CUDAGraph", None)
    return cls if isinstance(cls, type) else None


def install(native, cls=None, stream_of=None, unseen=None):
    """Wraps ``cls`` (default: torch.cuda.CUDAGraph; ``stream_of(graph)``: the stream a replay
    goes to, default torch's current stream) once; True when it is wrapped now. ``unseen`` (an
    unseen_graphs.UnseenGraphs, or None) takes the replays of graphs captured unseen from now on."""
    _unseen[0] = unseen
    cls = cls if cls is not None else graph_class()
    if cls is None:
        return False
    with _lock:
        if cls in _installed:
            return True
        own = {name: cls.__dict__.get(name) for name in _WRAPPED}
        originals = {name: getattr(cls, name) for name in _WRAPPED}
        for name, wrapper in _wrappers(native.device_timer, originals, stream_of or _stream_of).items():
            setattr(cls, name, wrapper)
        _installed[cls] = own
    return True


def on_capture(tell):
    """`tell(begins)` hears of every capture through the wrapper from now on (None: nobody)."""
    _on_capture[0] = tell


def _tell_capture(begins):
    tell = _on_capture[0]
    if tell is not None:
        tell(begins)


def installed():
    with _lock:
        return list(_installed)


def uninstall():
    """Puts every wrapped class's methods back (where they are still ours)."""
    with _lock:
        for cls, own in _installed.items():
            for name, held in own.items():
                if not hasattr(cls.__dict__.get(name), "__flagtree_wraps__"):
                    continue  # replaced by someone else since: theirs stays
                if held is None:
                    delattr(cls, name)
                else:
                    setattr(cls, name, held)
        _installed.clear()
        _unseen[0] = None


def _stream_of(graph):
    """The stream replay() launches the graph into: the current one (what CUDAGraph.replay uses)."""
    import torch  # deferred: only reached with torch imported (graph_class found it)

    return torch.cuda.current_stream().cuda_stream


def _wrappers(device_timer, originals, stream_of):
    begin, end, replay = (originals[name] for name in _WRAPPED)

    @functools.wraps(begin)
    def capture_begin(self, *args, **kwargs):
        _tell_capture(True)
        label = device_timer.device_timer_graph_capture_begin()
        try:
            setattr(self, LABEL, label)
            self.__dict__.pop(UNSEEN, None)  # a graph captured again is seen now
        except AttributeError:  # an instance without a __dict__: its replays stay unlabelled
            pass
        try:
            return begin(self, *args, **kwargs)
        except BaseException:
            device_timer.device_timer_graph_capture_end()
            _tell_capture(False)
            raise

    @functools.wraps(end)
    def capture_end(self, *args, **kwargs):
        try:
            return end(self, *args, **kwargs)
        finally:
            device_timer.device_timer_graph_capture_end()
            _tell_capture(False)
            label = getattr(self, LABEL, 0)
            if label and not device_timer.device_timer_graph_nodes(label):
                # No launch it captured took a descriptor (captured between sessions, its kernels
                # without stamps): its replays would time nothing, so they are counted as unseen.
                setattr(self, LABEL, 0)

    @functools.wraps(replay)
    def replay_(self, *args, **kwargs):
        label = getattr(self, LABEL, 0)
        if label:
            device_timer.device_timer_graph_replay(label, stream_of(self))
        elif _unseen[0] is not None:  # captured before the ring: counted by kernel name
            return _unseen[0].replay(self, replay, args, kwargs, stream_of)
        return replay(self, *args, **kwargs)

    wrappers = {"capture_begin": capture_begin, "capture_end": capture_end, "replay": replay_}
    for name, wrapper in wrappers.items():
        wrapper.__flagtree_wraps__ = originals[name]
    return wrappers
