"""Does CUPTI cost a program's launches once collection has been on and is switched off, short
of cuptiFinalize, and what does each way of letting go leave in device memory? (The let-go
between windows finalizes: it costs ~0.6 MB of device memory each time; staying subscribed and
quiet costs every launch 5-27%.) libcupti driven directly through ctypes, no profiler;
bench/serving_loop.py's model, blocks of --steps steps, each state's block between two blocks with
CUPTI finalized ("none"), over --rounds rounds. Each state is reached from a finalized CUPTI:

  active    subscribed (no callback enabled), kernel activity on: what CUPTI's records cost;
  fresh     subscribed, no kind and no callback ever on since the initialization;
  quiet     active for a few steps, then kernel activity off, still subscribed;
  unsub     active for a few steps, then kernel activity off and unsubscribed, not finalized;
  callbacks subscribed with the driver API's callbacks on for a few steps, then off; no kind;
  activity  not subscribed, kernel activity on (the activity API needs no subscriber);
  ours      the profiler's quiet state: subscribed with its resource callbacks on, active for a
            few steps with the driver API's callbacks and kernel, memcpy and memset activity on,
            then those off.

Then the time each state took to reach, and device memory (cudaMemGetInfo) over --cycles
let-go's each way: activity on, a step, then activity off (kinds), activity off and unsubscribe
(unsubscribe), or those and cuptiFinalize (finalize).

    python3 dev/probe_cupti_unsubscribe.py [--rounds 4] [--steps 400] [--cycles 60]"""
import argparse
import ctypes
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serving_blocks  # noqa: E402

serving_loop, torch = serving_blocks.serving_loop, serving_blocks.serving_loop.torch
KERNEL_KIND = 10  # CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
DRIVER_DOMAIN, RESOURCE_DOMAIN = 1, 3  # CUPTI_CB_DOMAIN_*
# CUPTI_CBID_RESOURCE_*: graph node created and cloned, module loaded and unloading, context
# created and being destroyed, which the profiler keeps on while quiet.
RESOURCE_CALLBACKS = (13, 20, 6, 7, 1, 2)
TRANSFER_KINDS = (1, 2)  # CUPTI_ACTIVITY_KIND_MEMCPY, _MEMSET
WARM_STEPS = 5  # steps run in the state a quiet, unsub, callbacks or ours state is reached from
STATES = ("active", "fresh", "quiet", "unsub", "callbacks", "activity", "ours")
BUFFER = 8 << 20

CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p)
REQUESTED = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                             ctypes.POINTER(ctypes.c_size_t))
COMPLETED = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)


class Cupti:
    """libcupti's state as this probe drives it: initialized (buffer callbacks registered),
    subscribed, kernel activity on."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.subscriber = ctypes.c_void_p()
        self.initialized = self.subscribed = self.kind_on = False
        self.buffers = [ctypes.create_string_buffer(BUFFER + 8) for _ in range(4)]
        self.free = list(self.buffers)
        self.lent = {}  # aligned address -> the buffer CUPTI has
        self.records = 0
        self.on_api = CALLBACK(lambda *_: None)  # never enabled: subscribed with every callback off
        self.on_requested = REQUESTED(self._requested)
        self.on_completed = COMPLETED(self._completed)

    def call(self, name, *args):
        rc = getattr(self.lib, name)(*args)
        if rc:
            raise RuntimeError(f"{name} returned {rc}")

    def _requested(self, buffer, size, most):
        raw = self.free.pop() if self.free else ctypes.create_string_buffer(BUFFER + 8)
        address = (ctypes.addressof(raw) + 7) & ~7
        self.lent[address] = raw
        buffer[0], size[0], most[0] = address, BUFFER, 0

    def _completed(self, context, stream, buffer, size, valid):
        self.records += valid
        raw = self.lent.pop(buffer, None)
        if raw is not None:
            self.free.append(raw)

    def reach(self, state, model=None):
        """Drives libcupti into `state` (from the state it is in: --cycles' let-go's; a block's
        state from none), running `model` in the state a quiet, unsub, callbacks or ours state
        is reached from; seconds it took, those steps excluded."""
        if state in ("quiet", "unsub", "callbacks", "ours"):
            self._warm(state, model)
        began = time.perf_counter()
        if state == "none":
            self.set_state(subscribed=False, kind=False)
            if self.initialized:
                self.call("cuptiFinalize")
                self.initialized = False
        else:
            self.set_state(subscribed=state in ("active", "fresh", "quiet", "callbacks", "ours"),
                      kind=state in ("active", "activity"))
        return time.perf_counter() - began

    def _warm(self, state, model):
        """The state a quiet, unsub, callbacks or ours state is reached from, for WARM_STEPS steps."""
        self.set_state(subscribed=True, kind=state != "callbacks")
        if state == "ours":
            for cbid in RESOURCE_CALLBACKS:
                self.call("cuptiEnableCallback", 1, self.subscriber, RESOURCE_DOMAIN, cbid)
            for kind in TRANSFER_KINDS:
                self.call("cuptiActivityEnable", kind)
        if state in ("callbacks", "ours"):
            self.call("cuptiEnableDomain", 1, self.subscriber, DRIVER_DOMAIN)
        for _ in range(WARM_STEPS):
            model()
        torch.cuda.synchronize()
        if state in ("callbacks", "ours"):
            self.call("cuptiEnableDomain", 0, self.subscriber, DRIVER_DOMAIN)
        if state == "ours":
            for kind in TRANSFER_KINDS:
                self.call("cuptiActivityDisable", kind)

    def set_state(self, subscribed, kind):
        """Subscribed or not, kernel activity on or off; initialized first when it is not."""
        if not self.initialized:
            self.call("cuptiActivityRegisterCallbacks", self.on_requested, self.on_completed)
            self.initialized = True
        if not kind:
            self._kind(False)
        self._subscribe(subscribed)
        if kind:
            self._kind(True)

    def _kind(self, on):
        if on and not self.kind_on:
            self.call("cuptiActivityEnable", KERNEL_KIND)
        elif not on and self.kind_on:
            self.call("cuptiActivityDisable", KERNEL_KIND)
            self.call("cuptiActivityFlushAll", 0)
        self.kind_on = on

    def _subscribe(self, on):
        if on and not self.subscribed:
            self.call("cuptiSubscribe", ctypes.byref(self.subscriber), self.on_api, None)
        elif not on and self.subscribed:
            self.call("cuptiUnsubscribe", self.subscriber)
        self.subscribed = on


def blocks(cupti, model, rounds, steps):
    rows, reach = [], {s: [] for s in ("none",) + STATES}
    cupti.reach("none")
    rows.append(("none", serving_blocks.plain_block(model, steps), 0))
    for _ in range(rounds):
        for state in STATES:
            reach[state].append(cupti.reach(state, model))
            rows.append((state, serving_blocks.plain_block(model, steps), cupti.records))
            torch.cuda.synchronize()
            reach["none"].append(cupti.reach("none"))
            rows.append(("none", serving_blocks.plain_block(model, steps), 0))
    serving_blocks.report(rows, STATES, "records so far")
    for state, took in reach.items():
        print(f"reaching {state:9s} median {statistics.median(took) * 1e3:8.2f} ms  (max {max(took) * 1e3:.2f})")


def let_go_memory(cupti, model, cycles, how):
    cupti.reach("none")
    torch.cuda.synchronize()
    before = serving_blocks.used_mb()
    for _ in range(cycles):
        cupti.reach("active")
        model()
        torch.cuda.synchronize()
        cupti.set_state(subscribed=how == "kinds", kind=False)
        if how == "finalize":
            cupti.reach("none")
    torch.cuda.synchronize()
    grown = serving_blocks.used_mb() - before
    print(f"let go by {how:11s} {cycles} times: device used +{grown:.1f} MB ({grown * 1024 / cycles:.0f} KB each)",
          flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--cycles", type=int, default=60)
    args = parser.parse_args()
    model = serving_loop.Model(8, 4096, 256)
    with tempfile.TemporaryDirectory() as folder:
        serving_blocks.first_nvidia_session(model, folder)  # compiles, picks the libcupti, lets it go
    cupti = Cupti(serving_loop._native.nvidia.cupti_library())
    blocks(cupti, model, args.rounds, args.steps)
    for how in ("kinds", "unsubscribe", "finalize", "kinds", "unsubscribe"):
        let_go_memory(cupti, model, args.cycles, how)
    cupti.reach("none")


if __name__ == "__main__":
    main()
