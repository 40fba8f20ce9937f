// The native errors Python tells apart by type. Each is registered with nanobind as a Python
// exception class of the same name (flagtree.profiler._native.LibraryNotFound, ...), a subclass
// of RuntimeError, so that Python decides what to do by the type, never by the message text.
#pragma once
#include <stdexcept>

namespace ftp {

// No usable vendor library at a path: it cannot be loaded, or it lacks a function the profiler
// needs (an older release). Python tries the next candidate path.
struct LibraryNotFound : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The vendor's single profiling subscriber (CUPTI's subscriber, roctracer's default activity
// pool) is held by another tool or another copy of the library.
struct SubscriberTaken : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What was asked for is not available on this machine (device, driver or library version).
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The vendor library answered that it is not initialised (CUPTI after cuptiFinalize, until a
// client subscribes again): the caller may initialise it and retry.
struct NotInitialized : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace ftp
