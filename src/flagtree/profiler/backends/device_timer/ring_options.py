"""backend="device_timer"'s mode: the ring's size and readback batch, graph replay records,
kernel-side scopes and event-timed launches (``mode="slots=...:events=on"``)."""
from dataclasses import dataclass

from ..mode import ModeGrammar, Option

DEFAULT_SLOTS = 1 << 14
DEFAULT_GRAPH_REPLAYS = 256
# ring size in launches; launches per readback (0: a sixteenth of the ring, so that
# a finalize finds at most that many records left to read back and deliver); replay records each
# launch captured into a CUDA graph has (a power of two); whether kernel-side scopes are compiled in;
# whether launches that cannot be stamped are timed by events (off by default: an event pair also
# times the host's launch when the device waits for it; named in the canonical text only when on)
MODE_GRAMMAR = ModeGrammar((Option("slots", "int", default=DEFAULT_SLOTS, low=2, high=1 << 24),
                            Option("batch", "int", default=0, low=0),
                            Option("graph_replays", "int", default=DEFAULT_GRAPH_REPLAYS, low=2, high=1 << 16),
                            Option("scopes", "switch", default=True),
                            Option("events", "switch", default=False, shown="given")))


@dataclass(frozen=True)
class RingOptions:
    slots: int = DEFAULT_SLOTS
    batch: int = 0  # 0: a sixteenth of the ring
    graph_replays: int = DEFAULT_GRAPH_REPLAYS  # records per captured launch (R - 1 replays fit)
    scopes: bool = True  # kernel-side scopes compiled in (scopes.py)
    events: bool = False  # launches that cannot be stamped timed by events (event_timed.py)

    def batch_slots(self):
        return self.batch or max(1, self.slots // 16)

    def canonical(self):
        return MODE_GRAMMAR.canonical({"slots": self.slots, "batch": self.batch_slots(),
                                       "graph_replays": self.graph_replays, "scopes": self.scopes,
                                       "events": self.events}, ("events",) if self.events else ())


def ring_options(parsed):
    """RingOptions from MODE_GRAMMAR's ParsedMode; the checks across options."""
    options = RingOptions(**parsed.values)
    if options.batch_slots() > options.slots:
        raise MODE_GRAMMAR.error("device_timer", parsed.text, "batch must be at most slots")
    replays = options.graph_replays
    if replays & (replays - 1):
        raise MODE_GRAMMAR.error("device_timer", parsed.text, "graph_replays must be a power of two")
    return options


def parse_mode(mode):
    """RingOptions from None or "slots=<n>[:batch=<n>][:graph_replays=<n>][:scopes=on|off][:events=on|off]"."""
    return ring_options(MODE_GRAMMAR.parse(mode, "device_timer"))
