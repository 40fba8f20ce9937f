// Process-wide objects that vendor threads call into (tracers, the profiler, the string table).
#pragma once
#include <pthread.h>

#include <mutex>

namespace ftp {

// The one T of the process, made on first use and never destroyed: a vendor's worker thread may
// still deliver records or callbacks while static destructors run at exit, so destroying it
// would race with them. A class with a private constructor befriends leaked<T>().
template <typename T>
T& leaked() {
  static T* instance = new T();
  return *instance;
}

}  // namespace ftp

namespace ftp {

// Like leaked<T>(), but a forked child gets a new T on its first use after the fork: for objects
// that belong to a thread of ours (which does not exist in the child) and whose lock that thread
// may have held at the fork. The parent's T is left as it is (leaked) in the child.
template <typename T>
T& leakedPerProcess() {
  static T* instance = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    instance = new T();
    pthread_atfork(nullptr, nullptr, [] { instance = new T(); });
  });
  return *instance;
}

}  // namespace ftp
