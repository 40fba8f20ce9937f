"""One run, several outputs: ``start(data="tree,trace")`` runs one session per data kind over
the same launches and writes them as one run: one run id in every file, one ``<name>.meta.json``
that lists every output. The first kind's session is the one start() returns and the others
are its companions: they open, pause, write parts and close with it (session.py), and are not
open sessions of their own.
"""
from .run_id import new_run_id

DATA_KINDS = ("tree", "trace", "perfetto")


def split_data(data):
    """The data kinds of `data` ("tree", "trace,tree", ...) in the order given, or ValueError."""
    kinds = [kind.strip() for kind in data.split(",")] if isinstance(data, str) else [data]
    for kind in kinds:
        if kind not in DATA_KINDS:
            raise ValueError(f"unknown data {kind!r}; supported: {', '.join(DATA_KINDS)}, or several "
                             f"joined by commas (one run writes each)")
    if len(set(kinds)) != len(kinds):
        raise ValueError(f"data {data!r} names a kind twice")
    return kinds


def members(session):
    """The session and its companions, the session first."""
    return [session, *session.companions]


def join(primary, companion):
    """Makes `companion` write as part of `primary`'s run."""
    companion.run_id = primary.run_id
    companion.metadata_owner = primary
    primary.companions.append(companion)


def start_run_id(session):
    session.run_id = new_run_id()


def run_facts(session):
    """What the run's one metadata says beyond one session's: its id, its kinds, its files."""
    kinds = members(session)
    return {"run_id": session.run_id, "data": ",".join(s.data for s in kinds),
            "outputs": [path for s in kinds for path in s.data_files()]}


def lost_launches(stats_of, session):
    """Launches without a record in any of the run's sessions (each counts them apart)."""
    return max(stats_of(s) for s in members(session))
