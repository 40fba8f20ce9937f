// Context sources: where a launch's context comes from. A session names one (ContextKind) and
// the launch path asks it for the tree node of the launching thread's current context:
//   shadow: the scopes the program entered (flagtree.profiler.scope), ThreadState::scopes;
//   python: the Python call stack at the launch (python_frames.h).
// Both cache per (thread, session slot) what they resolved, so that a launch from an unchanged
// context costs no tree lookup and takes no lock.
#pragma once
#include <cstdint>

#include "context/thread_state.h"
#include "session/session.h"

namespace ftp {

class ContextSource {
 public:
  virtual ~ContextSource() = default;
  // The node of `session`'s tree for the current context of the thread owning `ts`. Called on
  // the launching thread; takes the session's tree lock only when the context changed.
  virtual uint32_t resolve(ThreadState& ts, Session& session) const = 0;
};

class ShadowContext final : public ContextSource {
 public:
  uint32_t resolve(ThreadState& ts, Session& session) const override;
};

// Captures the Python frames once per launch (ThreadState::launchSerial), however many python
// sessions ask.
class PythonContext final : public ContextSource {
 public:
  uint32_t resolve(ThreadState& ts, Session& session) const override;
};

// The source of a session's context kind.
const ContextSource& contextSource(ContextKind kind);

}  // namespace ftp
