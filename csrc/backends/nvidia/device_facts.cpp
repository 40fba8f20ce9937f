#include "backends/nvidia/device_facts.h"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "core/singleton.h"

namespace ftp {

namespace {

std::vector<CudaDeviceInfo> queryCudaDevices() {
  CudaDriver& driver = CudaDriver::instance();
  driver.load();  // throws where there is no driver
  return driver.devices();
}

// One query in flight or answered and not yet taken. Never freed: the thread may still be writing
// it at interpreter exit; a forked child gets a fresh one (the thread does not exist there, and
// may have held the mutex at the fork).
struct Slot {
  std::mutex mutex;
  std::condition_variable done;
  bool started = false;
  bool answered = false;
  std::vector<CudaDeviceInfo> devices;
  std::exception_ptr error;
};

Slot& theSlot() { return leakedPerProcess<Slot>(); }

}  // namespace

void prefetchCudaDevices() {
  Slot& s = theSlot();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.started) return;
  s.started = true;
  s.answered = false;
  Slot* target = &s;
  std::thread([target] {
    std::vector<CudaDeviceInfo> devices;
    std::exception_ptr error;
    try {
      devices = queryCudaDevices();
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(target->mutex);
    target->devices = std::move(devices);
    target->error = error;
    target->answered = true;
    target->done.notify_all();
  }).detach();
}

std::vector<CudaDeviceInfo> takeCudaDevices() {
  Slot& s = theSlot();
  std::unique_lock<std::mutex> lock(s.mutex);
  if (!s.started) {
    lock.unlock();
    return queryCudaDevices();
  }
  s.done.wait(lock, [&] { return s.answered; });
  s.started = s.answered = false;
  std::exception_ptr error = s.error;
  s.error = nullptr;
  if (error) std::rethrow_exception(error);
  return std::move(s.devices);
}

}  // namespace ftp
