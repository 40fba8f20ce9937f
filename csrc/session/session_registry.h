// The session slots: which sessions exist, which take launches (active) and which are closing
// (finalizing: no more launches, still their records). Slots are reused by later sessions, a
// session's uid never is, so per-slot caches compare uids to tell the sessions of one slot apart.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>

#include "context/thread_state.h"
#include "session/session.h"

namespace ftp {

class SessionRegistry {
 public:
  // Returns the slot; throws std::runtime_error when all are taken.
  // `active`: whether it takes launches at once (a scheduled session starts inactive: session.py).
  int create(ContextKind context, DataKind data, TimeSource source = TimeSource::Tracer, bool active = true);
  void setActive(int slot, bool active);
  // Moves the session to another time source (a backend that picks its source while starting).
  void setSource(int slot, TimeSource source);
  void beginClose(int slot);
  bool isActive(int slot) const { return slot >= 0 && slot < kMaxSessions && (activeMask() >> slot & 1u); }
  Session* at(int slot) const {
    return (slot >= 0 && slot < kMaxSessions) ? slots_[slot].load(std::memory_order_acquire) : nullptr;
  }

  // Frees the slot and returns its session (nullptr for an empty slot); the Session object stays
  // valid. `forget()` runs under the registry's lock once the slot takes no more launches and
  // before any later session can take the slot: the place to drop what refers to the slot.
  template <typename F>
  Session* remove(int slot, F&& forget);

  uint32_t activeMask() const { return activeMask_.load(std::memory_order_acquire); }
  uint32_t existsMask() const { return existsMask_.load(std::memory_order_acquire); }
  uint32_t closingMask() const { return closingMask_.load(std::memory_order_acquire); }
  // The sessions whose kernel times come from `source`.
  uint32_t sourceMask(TimeSource source) const {
    return sourceMask_[int(source)].load(std::memory_order_acquire);
  }

  // Calls f(slot, session) for each session in `mask`, in slot order.
  template <typename F>
  void forEach(uint32_t mask, F&& f) const {
    while (mask) {
      int slot = __builtin_ctz(mask);
      mask &= mask - 1;
      if (Session* s = slots_[slot].load(std::memory_order_acquire)) f(slot, *s);
    }
  }

 private:
  void clearBits(int slot);

  std::atomic<Session*> slots_[kMaxSessions] = {};
  std::atomic<uint32_t> activeMask_{0};
  std::atomic<uint32_t> existsMask_{0};   // slots holding a session
  std::atomic<uint32_t> closingMask_{0};  // sessions being finalized
  std::atomic<uint32_t> sourceMask_[kTimeSources] = {};
  std::atomic<uint32_t> nextUid_{1};
  std::mutex mutex_;  // create and remove
};

template <typename F>
Session* SessionRegistry::remove(int slot, F&& forget) {
  std::lock_guard<std::mutex> lock(mutex_);
  Session* s = at(slot);
  if (!s) return nullptr;
  setActive(slot, false);
  forget();
  clearBits(slot);
  slots_[slot].store(nullptr, std::memory_order_release);
  return s;
}

}  // namespace ftp
