// Opening vendor libraries with dlopen and resolving their C functions into a table: every
// vendor API (CUPTI, roctracer, the CUDA driver, and MUPTI/MSPTI, which mirror CUPTI's names
// under another prefix) is loaded at run time, never linked. A table is described once as a
// list of (field, symbol name, required or optional) and resolved in one loop, so every vendor
// fails the same way: LibraryNotFound with one sentence naming the library and the missing
// function.
#pragma once
#include <initializer_list>
#include <string>
#include <type_traits>

namespace ftp {

enum class Need : bool { Optional, Required };

// One entry of a function table: the field the address goes into, and the symbol's name after
// the table's prefix ("Subscribe" in a table of prefix "cupti").
struct Symbol {
  template <typename Fn>
  Symbol(Fn& field, const char* name, Need need) : field(&field), name(name), need(need) {
    static_assert(std::is_pointer_v<Fn> && std::is_function_v<std::remove_pointer_t<Fn>>,
                  "a table field is a function pointer");
    static_assert(sizeof(Fn) == sizeof(void*), "function pointers are stored as dlsym's void*");
  }
  void* field;
  const char* name;
  Need need;
};

// Opens `path`, preferring a copy the process already holds (RTLD_NOLOAD first): a vendor
// tracing library allows one subscriber, so a second copy could not attach. Throws
// LibraryNotFound("cannot load <path>: <why>").
void* openLibrary(const std::string& path);

// The copy of `path` the process already holds, or nullptr; never loads one (for calls about a
// context someone else made: without their library there is no such context).
void* loadedLibrary(const std::string& path);

// openLibrary for a library that may be absent: nullptr instead of throwing.
void* tryOpenLibrary(const std::string& path);

// A handle that finds what the process has loaded globally: the program, the libraries it started
// with and those opened RTLD_GLOBAL (dlopen(NULL)). dlsym's RTLD_DEFAULT looks in the same places
// but is a null pointer on glibc, so code that reads null as "no such library" would skip it; this
// handle is never null.
void* processScope();

// Whether `library` (a handle from above) or a library it depends on defines `name`.
bool hasSymbol(void* library, const char* name);

// The path of the first object the dynamic loader holds whose file name starts with
// `filePrefix` (e.g. "libcupti.so"), or "" when none does. Asks the loader's own list
// (dl_iterate_phdr): reading /proc/self/maps for it, thousands of mappings in a process with
// torch, would lengthen the first session (docs/performance.md).
std::string loadedLibraryPath(const std::string& filePrefix);

// Resolves `prefix + name` of every entry into its field; absent optional ones become nullptr.
// A missing required one throws LibraryNotFound("<path> lacks <prefix><name><purpose>"), where
// `purpose` says what the table is for (e.g. " (PC sampling needs CUPTI from CUDA 12 or later)").
// Fields resolved before the failure keep their address: load into a scratch table.
void resolveSymbols(void* library, const std::string& path, const std::string& prefix,
                    std::initializer_list<Symbol> table, const std::string& purpose = "");

// "<the library's text for result> (error N)", or "error N" when the library has no text for it
// (or no GetResultString): how every CUPTI-dialect table words a failed call.
template <typename Result, typename GetResultString>
std::string describeResult(GetResultString getResultString, Result result, Result success) {
  const char* text = nullptr;
  const std::string code = "error " + std::to_string(static_cast<long long>(result));
  if (getResultString && getResultString(result, &text) == success && text) return std::string(text) + " (" + code + ")";
  return code;
}

}  // namespace ftp
