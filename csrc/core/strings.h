// Process-wide string interning: names travel through the hot path as 32-bit ids.
#pragma once
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/singleton.h"

namespace ftp {

class StringTable {
 public:
  static StringTable& instance();

  // Id 0 is the empty string, used as "none".
  uint32_t intern(std::string_view text);
  std::string str(uint32_t id) const;

 private:
  friend StringTable& leaked<StringTable>();
  StringTable();
  mutable std::mutex mutex_;
  std::deque<std::string> strings_;  // deque: element addresses stay valid as it grows
  std::unordered_map<std::string_view, uint32_t> ids_;
};

inline uint32_t intern(std::string_view text) { return StringTable::instance().intern(text); }
inline std::string nameOf(uint32_t id) { return StringTable::instance().str(id); }

}  // namespace ftp
