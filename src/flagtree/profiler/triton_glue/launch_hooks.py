"""Triton's launch hooks and kernel-load hook on each version, and putting a hook there next to
what is already installed. Used by hook="triton" (hooks/triton.py) and every backend that sees
launches through Triton (tianshu, cann, device_timer, the kernel-side scopes).

Triton 3.4 to 3.9 keep the launch hooks in ``triton.knobs.runtime`` (``launch_enter_hook`` /
``launch_exit_hook``); where the knob is a hook chain (an object with ``add``/``remove``, Triton 3.6
and later) our hook is added to it, otherwise (3.4/3.5, or a plain callable put there by someone
else) our hook replaces the value and calls the previous one first. Triton 3.2/3.3 keep them as
``triton.compiler.CompiledKernel`` class attributes, handled the same way. The undo function
restores exactly what was installed before.

These hooks see launches of kernels Triton's launcher runs. Two kinds are not seen this way by
every route and are the next entry points here: kernels compiled before a session (whose
launcher a compile-time route never touched) and CompiledKernel objects held by libraries
(FlagGems' LibEntry, torch inductor's launchers), which call the kernel's launcher directly;
kernels.compiled_kernels() finds those objects, and redirecting a CompiledKernel's launcher (or
stamping it at first sight) belongs beside launch_hook_owner here."""
from .versions import MINIMUM_LAUNCH_HOOKS, import_triton, version_tuple


def launch_hook_owner():
    """The object holding Triton's launch_enter_hook/launch_exit_hook: ``triton.knobs.runtime`` on
    Triton 3.4-3.9, the ``CompiledKernel`` class on 3.2/3.3. RuntimeError saying why on a Triton
    that cannot be imported, is older than 3.2, or has neither."""
    try:
        triton = import_triton()
    except ImportError as error:
        raise RuntimeError(f"hook='triton' needs Triton, which cannot be imported here: {error}") from None
    version = getattr(triton, "__version__", "unknown")
    parsed = version_tuple(version)
    if parsed is not None and parsed < MINIMUM_LAUNCH_HOOKS:
        raise RuntimeError(f"hook='triton' needs Triton >= 3.2 for launch hooks; this is Triton {version}")
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
            return CompiledKernel  # Triton 3.2 / 3.3
    except Exception:
        pass
    raise RuntimeError(f"hook='triton' found no launch hooks in Triton {version} (neither "
                       f"triton.knobs.runtime.launch_enter_hook nor CompiledKernel.launch_enter_hook); "
                       f"it needs Triton >= 3.2")


def attach_kernel_load_hook(hook):
    """Puts `hook(module, function, name, metadata_group, hash)` into
    ``triton.knobs.runtime.kernel_load_end_hook`` beside what is there (Triton 3.5-3.9; check
    versions.has_kernel_load_hook first: AttributeError on older ones); returns the undo."""
    return attach(import_triton().knobs.runtime, "kernel_load_end_hook", hook)


def _is_chain(value):
    return value is not None and callable(getattr(value, "add", None)) and callable(getattr(value, "remove", None))


def attach(owner, attribute, hook, order=None):
    """Puts `hook` into owner.attribute (a hook of launch_hook_owner(), on every Triton version it
    supports), keeping what is there; returns the undo function.

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
