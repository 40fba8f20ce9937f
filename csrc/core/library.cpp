#include "core/library.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>

#include "core/errors.h"

namespace ftp {

void* openLibrary(const std::string& path) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  if (!lib) lib = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    const char* why = dlerror();
    throw LibraryNotFound("cannot load " + path + ": " + (why ? why : "unknown error"));
  }
  return lib;
}

void* loadedLibrary(const std::string& path) { return dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD); }

void* tryOpenLibrary(const std::string& path) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  return lib ? lib : dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
}

void* processScope() {
  static void* const program = dlopen(nullptr, RTLD_NOW);
  return program;
}

bool hasSymbol(void* library, const char* name) { return library && dlsym(library, name); }

std::string loadedLibraryPath(const std::string& filePrefix) {
  struct Search {
    const std::string& prefix;
    std::string found;
  } search{filePrefix, ""};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        const char* path = info->dlpi_name;
        if (!path || !*path) return 0;  // the executable itself
        const char* slash = std::strrchr(path, '/');
        const char* file = slash ? slash + 1 : path;
        if (std::strncmp(file, s->prefix.c_str(), s->prefix.size()) != 0) return 0;
        s->found = path;
        return 1;  // stops the walk
      },
      &search);
  return search.found;
}

void resolveSymbols(void* library, const std::string& path, const std::string& prefix,
                    std::initializer_list<Symbol> table, const std::string& purpose) {
  for (const Symbol& symbol : table) {
    const std::string name = prefix + symbol.name;
    void* address = dlsym(library, name.c_str());
    std::memcpy(symbol.field, &address, sizeof address);
    if (!address && symbol.need == Need::Required) throw LibraryNotFound(path + " lacks " + name + purpose);
  }
}

}  // namespace ftp
