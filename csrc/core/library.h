// Opening vendor libraries with dlopen and resolving their C functions: every vendor API is
// loaded at run time, never linked.
#pragma once
#include <dlfcn.h>

#include <string>
#include <type_traits>

namespace ftp {

// Opens `path`, preferring a copy the process already holds (RTLD_NOLOAD first): a vendor
// tracing library allows one subscriber, so a second copy could not attach. Returns nullptr
// and sets `error` ("cannot load <path>: <why>") on failure.
void* openVendorLibrary(const std::string& path, std::string& error);

// Resolves `name` in `library` into the function pointer `fn`; false when absent.
template <typename Fn>
bool resolveSymbol(void* library, const std::string& name, Fn& fn) {
  fn = reinterpret_cast<std::decay_t<Fn>>(dlsym(library, name.c_str()));
  return fn != nullptr;
}

}  // namespace ftp
