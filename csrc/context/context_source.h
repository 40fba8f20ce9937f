// Context sources: where a launch's context comes from. A session names one (ContextKind) and
// the launch path asks it for the tree node of the launching thread's current context:
//   shadow: the scopes the program entered (flagtree.profiler.scope), ThreadState::scopes;
//   python: the Python call stack at the launch (python_frames.h).
// Both cache per (thread, session slot) what they resolved, so that a launch from an unchanged
// context costs no tree lookup and takes no lock.
#pragma once
#include <cstdint>

#include "context/thread_state.h"
#include "data/tree.h"

namespace ftp {

enum class ContextKind : uint8_t { Shadow = 0, Python = 1 };

// What a context resolves into: a session's context tree, with the session's slot and uid that
// key the per-thread caches. The context layer sees trees, not sessions (session/ sits above it).
struct ContextTree {
  int slot;
  uint32_t uid;
  Tree& tree;
};

class ContextSource {
 public:
  virtual ~ContextSource() = default;
  // The node of `target`'s tree for the current context of the thread owning `ts`. Called on
  // the launching thread; takes the tree's lock only when the context changed.
  virtual uint32_t resolve(ThreadState& ts, const ContextTree& target) const = 0;
};

class ShadowContext final : public ContextSource {
 public:
  uint32_t resolve(ThreadState& ts, const ContextTree& target) const override;
};

// Captures the Python frames once per launch (ThreadState::launchSerial), however many python
// sessions ask.
class PythonContext final : public ContextSource {
 public:
  uint32_t resolve(ThreadState& ts, const ContextTree& target) const override;
};

// The source of a session's context kind.
const ContextSource& contextSource(ContextKind kind);

}  // namespace ftp
