"""Proton's keywords on activate(), deactivate() and finalize(): ``session=`` beside our
``session_id=``, and finalize's ``output_format=``. Proton's users call them by its names; ours
stay (positional calls are the same in both).

output_format: Proton writes a session's data in the format named; we write what a session
collected and do not convert between data kinds (a tree has no timeline, a trace no merged
nodes), so a format is accepted only where it names what the session writes, and finalize
raises before writing anything otherwise: a run whose files the caller did not expect is worse
than an error that says what the session writes."""
from .run_group import members


class _NotGiven:
    """The default of `session_id` and `session`: tells "not given" from an explicit None, so that
    giving both is an error even when one of them is None. It stands for None (every session),
    hence its repr in help()."""

    __slots__ = ()

    def __repr__(self):
        return "None"


NOT_GIVEN = _NotGiven()

# Proton's output_format names of the data kinds it has; perfetto is ours and has none.
FORMATS = {"tree": "hatchet", "trace": "chrome_trace"}


def session_of(call, session_id, session):
    """The id `call` was given as `session_id` or as Proton's `session` (None when neither)."""
    if session is NOT_GIVEN:
        return None if session_id is NOT_GIVEN else session_id
    if session_id is not NOT_GIVEN:
        raise TypeError(f"{call}() got both session_id={session_id!r} and session={session!r}: "
                        f"they name the same argument (session is Proton's name for it), give one")
    return session


def writes(session):
    """What a session's run writes, in Proton's words where it has them."""
    return ", ".join(f"{FORMATS[m.data]!r} (data={m.data!r})" if m.data in FORMATS
                     else f"{m.data} (no output_format names it)" for m in members(session))


def check_output_format(output_format, sessions):
    """Raises ValueError unless `output_format` names what each of `sessions` writes: "" or None
    (what it was started to write), "hatchet" for a tree, "chrome_trace" for a trace."""
    if output_format is None or output_format == "":
        return
    known = output_format in FORMATS.values() if isinstance(output_format, str) else False
    if not known and not sessions:  # a misspelt name fails even where nothing is left to write
        raise ValueError(f"finalize(output_format={output_format!r}): unknown output format; '' or None (what "
                         f"a session was started to write), 'hatchet' (data='tree') or 'chrome_trace' (data='trace')")
    for s in sessions:
        if not known or output_format not in {FORMATS.get(m.data) for m in members(s)}:
            raise ValueError(f"finalize(output_format={output_format!r}): session {s.id} writes {writes(s)}; "
                             f"output_format must be '' or None (what the session was started to write) or the "
                             f"name of what it writes: the profiler does not convert between data kinds "
                             f"(start(data=...) chooses them)")
