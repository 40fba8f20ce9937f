#include "core/library.h"

namespace ftp {

void* openVendorLibrary(const std::string& path, std::string& error) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  if (!lib) lib = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    const char* why = dlerror();
    error = "cannot load " + path + ": " + (why ? why : "unknown error");
  }
  return lib;
}

}  // namespace ftp
