// Kernel names as vendor records carry them (often mangled C++) turned into interned display
// names, demangled once per distinct name and cached; shared by every backend.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "data/records.h"

namespace ftp {

class KernelNames {
 public:
  // Sets out.name (demangled where possible) and out.mangled (the raw name, 0 when it is
  // already what is shown). `fallback` names records that carry no name.
  void assign(const char* raw, DeviceRecord& out, const char* fallback = "<unnamed kernel>");

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>> names_;  // raw -> (shown, mangled)
};

}  // namespace ftp
