#include "data/kernel_names.h"

#include <cxxabi.h>

#include <cstdlib>

#include "core/strings.h"

namespace ftp {

void KernelNames::assign(const char* raw, DeviceRecord& out, const char* fallback) {
  std::string key = raw && *raw ? raw : fallback;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = names_.find(key);
  if (it == names_.end()) {
    int status = 0;
    char* demangled = abi::__cxa_demangle(key.c_str(), nullptr, nullptr, &status);
    bool ok = status == 0 && demangled;
    uint32_t shown = intern(ok ? demangled : key);
    uint32_t mangled = ok ? intern(key) : 0;
    std::free(demangled);
    it = names_.emplace(key, std::make_pair(shown, mangled)).first;
  }
  out.name = it->second.first;
  out.mangled = it->second.second;
}

}  // namespace ftp
