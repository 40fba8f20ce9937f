"""Where Triton keeps its launch hooks on each version, and putting a hook there next to what
is already installed. Used by hook="triton" (hooks/triton.py) and the instrumentation backend.

Triton >= 3.4 keeps them in ``triton.knobs.runtime`` (``launch_enter_hook`` / ``launch_exit_hook``);
where the knob is a hook chain (an object with ``add``/``remove``, Triton 3.6 and later) our hook is
added to it, otherwise (3.4/3.5, or a plain callable put there by someone else) our hook replaces
the value and calls the previous one first. Triton 3.1-3.3 keep them as
``triton.compiler.CompiledKernel`` class attributes, handled the same way (3.1 is what FlagTree
ships its iluvatar and mthreads backends on: its launchers call both hooks). The undo function
restores exactly what was installed before."""
import re

_MINIMUM_TRITON = (3, 1)


def _version_tuple(text):
    parts = re.findall(r"\d+", text or "")[:2]
    return tuple(int(p) for p in parts) if len(parts) == 2 else None


def _launch_hook_owner():
    """The object holding Triton's launch_enter_hook/launch_exit_hook on this Triton version."""
    try:
        import triton  # deferred: triton is heavy and optional
    except ImportError as error:
        raise RuntimeError(f"hook='triton' needs Triton, which cannot be imported here: {error}") from None
    version = getattr(triton, "__version__", "unknown")
    parsed = _version_tuple(version)
    if parsed is not None and parsed < _MINIMUM_TRITON:
        raise RuntimeError(f"hook='triton' needs Triton >= 3.1 for launch hooks; this is Triton {version}")
    try:
        from triton import knobs  # deferred: triton is heavy and optional

        runtime = knobs.runtime
        if hasattr(runtime, "launch_enter_hook") and hasattr(runtime, "launch_exit_hook"):
            return runtime  # Triton >= 3.4
    except Exception:
        pass
    try:
        from triton.compiler import CompiledKernel  # deferred: triton is heavy and optional

        if hasattr(CompiledKernel, "launch_enter_hook") and hasattr(CompiledKernel, "launch_exit_hook"):
            return CompiledKernel  # Triton 3.1 - 3.3
    except Exception:
        pass
    raise RuntimeError(f"hook='triton' found no launch hooks in Triton {version} (neither "
                       f"triton.knobs.runtime.launch_enter_hook nor CompiledKernel.launch_enter_hook); "
                       f"it needs Triton >= 3.1")


def _is_chain(value):
    return value is not None and callable(getattr(value, "add", None)) and callable(getattr(value, "remove", None))


def _attach(owner, attribute, hook, order=None):
    """Puts `hook` into owner.attribute, keeping what is there; returns the undo function.

    `order`: "first" runs `hook` before the hooks already there, "last" after them, whatever
    the direction of Triton's chain (its exit chain runs in reverse order of addition). A backend
    that records a launch in its exit hook goes first; hook="triton"'s exit, which drops the
    launch's metadata, goes last, so the recording sees the metadata in either install order."""
    current = getattr(owner, attribute)
    if _is_chain(current):
        calls = getattr(current, "calls", None)
        runs_first_at_front = not getattr(current, "reversed", False)
        at_front = order == ("first" if runs_first_at_front else "last")
        if order and at_front and isinstance(calls, list):
            if hook not in calls:
                calls.insert(0, hook)
        else:
            current.add(hook)

        def undo():
            current.remove(hook)

        return undo

    previous = current
    own = attribute in getattr(owner, "__dict__", {})
    state = {"active": True}

    first = order == "first"

    def chained(metadata):
        if first and state["active"]:
            hook(metadata)
        if previous is not None:
            previous(metadata)
        if not first and state["active"]:
            hook(metadata)

    chained.__wrapped__ = hook
    chained.flagtree_previous = previous
    setattr(owner, attribute, chained)

    def undo():
        state["active"] = False
        if getattr(owner, attribute, None) is chained:
            if own:
                setattr(owner, attribute, previous)
            else:
                try:
                    delattr(owner, attribute)
                except AttributeError:
                    setattr(owner, attribute, previous)
                if getattr(owner, attribute, None) is not previous:
                    setattr(owner, attribute, previous)
        # else: someone replaced our hook since; theirs stays, ours now only forwards.

    return undo
