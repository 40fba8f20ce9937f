#include "core/strings.h"

namespace ftp {

// Leaked (core/singleton.h): CUPTI's worker thread may still intern names during interpreter shutdown.
StringTable& StringTable::instance() { return leaked<StringTable>(); }

StringTable::StringTable() { intern(""); }

uint32_t StringTable::intern(std::string_view text) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = ids_.find(text);
  if (it != ids_.end()) return it->second;
  strings_.emplace_back(text);
  uint32_t id = static_cast<uint32_t>(strings_.size() - 1);
  ids_.emplace(std::string_view(strings_.back()), id);
  return id;
}

std::string StringTable::str(uint32_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return id < strings_.size() ? strings_[id] : std::string();
}

}  // namespace ftp
