// The idle release of the CUPTI subscription kept between sessions (backends/cupti_attach.py has
// the rule): after the last session parks the tracer, a native thread detaches it once it has been
// idle for FLAGTREE_PROFILER_CUPTI_IDLE_S seconds. The same clock suspends a tracer quiet that
// long while sessions hold it (DialectTracer::suspended): the two states never overlap.
//
// Native rather than a threading.Timer: starting a Python thread at every finalize is a cost of
// its own (it must take the GIL to run; docs/performance.md). One thread per process, started on first
// use, sleeps on a condition variable between deadlines; a forked child starts its own.
#pragma once
#include <cstddef>

#include "backends/nvidia/cupti_api.h"

namespace ftp {

// (Re)starts the idle clock: the tracer is detached (or suspended) `seconds` from now unless
// cancelled first.
void armIdleRelease(double seconds);
// Stops the clock (a session is about to start or wakes, or the tracer is being released now).
void cancelIdleRelease();
// Asks the same thread to attach a suspended tracer again, quiet, before a window wakes it
// (DialectTracer::attachAhead): the subscription's cost off the program's thread.
void requestAttachAhead();
// Asks the same thread to attach the tracer parked when no session holds it, a session being
// near (DialectTracer::parkAhead), then to detach it after `idleSeconds` should none come.
void requestParkAhead(const CuptiApi& api, size_t bufferBytes, double idleSeconds);
// Deadlines reached so far, each one ending in a detach or suspend attempt (tests).
unsigned long idleReleasesFired();

}  // namespace ftp
