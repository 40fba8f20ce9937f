"""What one open session holds: its identity, options, backend state, output paths and the
handles finalize() releases (session.py creates and closes it; the writers read it)."""
from .backends.base import mode_text


class Session:
    """One profiling session. ``id`` is its one identity (what start() returns); ``slot`` is
    only its handle in the native core, passed to native calls and keyed on by nothing else."""

    def __init__(self, session_id, name, context, data, backend, options, hook, paths):
        self.id = session_id
        self.name = name
        self.context = context
        self.data = data
        self.backend = backend
        self.options = options  # what backend.check_mode() parsed from the mode, once
        self.mode = mode_text(options)  # its normalised text, for the metadata
        self.state = backend.SessionState() if backend.SessionState else None  # the backend's, per session
        self.hook = hook
        self.paths = paths
        self.slot = None
        self.extra_stats = {}  # what the backend adds to the metadata at finalize
        self.hook_handle = None
        self.inheritance = False  # holds a reference on hooks/inheritance.py's installation
        self.start_realtime_ns = None
        self.stop_realtime_ns = None
        self.start_monotonic_ns = None
        self.dropped_at_start = 0
        self.nvtx = False
        self.parts = []  # paths of the parts written so far
        self.part_steps = []  # per part: its step numbers (schedule.py), None when unscheduled
        self.part_jobs = []  # per part handed over or written: part_writer.PartJob (times, errors)
        self.earlier_parts = 0  # parts of the run written by earlier sessions (a trigger's windows), first in parts
        self.stepping = None  # schedule.py's Stepping of a session started with schedule=
        # One window of an armed trigger (trigger.py): what its metadata adds; it is written as a part.
        self.window = None
        self.written = []  # what finalize wrote, in order (a write cut short says what is there)
        self.timer_stop = None  # threading.Event of the periodic-part thread, if any
        self.run_id = None  # written into every file of the run (run_id.py)
        self.companions = []  # sessions of the other data kinds of one run (run_group.py)
        self.metadata_owner = None  # a companion: the session whose metadata describes it

    @property
    def output_path(self):
        return self.paths.output

    @property
    def metadata_path(self):
        return self.paths.metadata

    def part_path(self, k):
        return self.paths.part(k)

    def data_files(self):
        """The profile files finalize wrote: the parts if there were any, else the whole-run file."""
        return list(self.parts) if self.parts else [self.output_path]
