"""Context inheritance for threads and autograd, installed while any session is open
(reference counted): threading.Thread.start (hooks/threads.py) and PyTorch's backward entry
(hooks/autograd.py). The rule itself is in README, "Threads and autograd"."""
import threading

from .. import _env
from . import autograd, threads

_lock = threading.Lock()
_users = [0]


def install():
    """One more open session; the first one installs the hooks. Never raises for a missing torch;
    a bad FLAGTREE_PROFILER_BACKWARD_SCOPES is a ValueError before anything is installed."""
    _env.backward_scopes()
    with _lock:
        _users[0] += 1
        if _users[0] == 1:
            threads.install()
            autograd.install()


def uninstall():
    with _lock:
        if _users[0] == 0:
            return
        _users[0] -= 1
        if _users[0] == 0:
            autograd.uninstall()
            threads.uninstall()
