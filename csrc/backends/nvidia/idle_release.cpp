#include "backends/nvidia/idle_release.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "backends/nvidia/cupti_tracer.h"
#include "core/singleton.h"

namespace ftp {

namespace {

using Clock = std::chrono::steady_clock;

// Never freed (the thread outlives interpreter teardown); a forked child gets a fresh one, where
// the watcher thread does not exist and the lock may have been held.
struct Watcher {
  std::mutex mutex;
  std::condition_variable changed;
  bool running = false;  // the thread was started (in this process)
  bool waiting = false;  // ... and has reached its loop
  bool armed = false;
  bool attachAhead = false;  // requestAttachAhead() asked, not done yet
  bool parkAhead = false;    // requestParkAhead() asked, not done yet: its library and sizes
  CuptiApi parkApi;
  size_t parkBufferBytes = 0;
  double parkIdleSeconds = 0;
  unsigned long cancels = 0;  // cancelIdleRelease() calls (each before a session's acquire)
  unsigned long parkCancels = 0;  // ... when the park was asked
  Clock::time_point deadline;
  unsigned long fired = 0;
};

Watcher& theWatcher() { return leakedPerProcess<Watcher>(); }

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// Attaches parked, then starts the idle clock. A session that began since the request makes it
// moot (it attached itself); one that begins during the attach waits for it and resumes, and the
// clock then finds the tracer held and leaves it be (idleRelease).
void parkAheadNow(Watcher* w, std::unique_lock<std::mutex>& lock) {
  w->parkAhead = false;
  if (w->cancels != w->parkCancels) return;
  const CuptiApi api = w->parkApi;
  const size_t bufferBytes = w->parkBufferBytes;
  const double idleSeconds = w->parkIdleSeconds;
  lock.unlock();
  const bool parked = CuptiTracer::instance().parkAhead(api, bufferBytes, DeviceType::CUDA);
  lock.lock();
  if (parked) {
    w->deadline = after(idleSeconds);
    w->armed = true;
  }
}

void watch(Watcher* w) {
  std::unique_lock<std::mutex> lock(w->mutex);
  w->waiting = true;
  w->changed.notify_all();
  for (;;) {
    if (w->attachAhead) {
      w->attachAhead = false;
      lock.unlock();
      CuptiTracer::instance().attachAhead();  // under the tracer's lock; arms the clock again
      lock.lock();
      continue;
    }
    if (w->parkAhead) {
      parkAheadNow(w, lock);
      continue;
    }
    if (!w->armed) {
      w->changed.wait(lock);
      continue;
    }
    if (w->changed.wait_until(lock, w->deadline) != std::cv_status::timeout || !w->armed) continue;
    if (Clock::now() < w->deadline) continue;  // re-armed meanwhile
    w->armed = false;
    ++w->fired;
    lock.unlock();
    // Detaches a parked tracer, suspends a quiet one; refused (under the tracer's lock) when a
    // session started or woke meanwhile.
    CuptiTracer::instance().idleRelease();
    lock.lock();
  }
}

// Wakes the thread (started on first use) to see what changed.
void tellWatcher(Watcher& w, std::unique_lock<std::mutex>& lock) {
  if (!w.running) {
    w.running = true;
    std::thread(watch, &w).detach();
    // Returns once the thread waits in its loop, past the allocations of its start-up: a fork
    // right after finalize() (a DataLoader's workers) then never copies an allocator lock that
    // the half-started thread holds (GCC 12's AddressSanitizer does not guard its own at fork).
    w.changed.wait(lock, [&] { return w.waiting; });
  }
  w.changed.notify_all();
}

}  // namespace

void armIdleRelease(double seconds) {
  Watcher& w = theWatcher();
  std::unique_lock<std::mutex> lock(w.mutex);
  w.deadline = after(seconds);
  w.armed = true;
  tellWatcher(w, lock);
}

void requestAttachAhead() {
  Watcher& w = theWatcher();
  std::unique_lock<std::mutex> lock(w.mutex);
  w.attachAhead = true;
  tellWatcher(w, lock);
}

void requestParkAhead(const CuptiApi& api, size_t bufferBytes, double idleSeconds) {
  Watcher& w = theWatcher();
  std::unique_lock<std::mutex> lock(w.mutex);
  w.parkAhead = true;
  w.parkApi = api;
  w.parkBufferBytes = bufferBytes;
  w.parkIdleSeconds = idleSeconds;
  w.parkCancels = w.cancels;
  tellWatcher(w, lock);
}

void cancelIdleRelease() {
  Watcher& w = theWatcher();
  std::lock_guard<std::mutex> lock(w.mutex);
  w.armed = false;
  ++w.cancels;
  w.changed.notify_all();
}

unsigned long idleReleasesFired() {
  Watcher& w = theWatcher();
  std::lock_guard<std::mutex> lock(w.mutex);
  return w.fired;
}

}  // namespace ftp
