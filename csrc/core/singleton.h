// Process-wide objects that vendor threads call into (tracers, the profiler, the string table).
#pragma once

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
