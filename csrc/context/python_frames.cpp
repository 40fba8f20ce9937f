#include "context/python_frames.h"

#include <Python.h>
#include <frameobject.h>

#ifdef Py_LIMITED_API
#include <dlfcn.h>
#endif

#include <mutex>
#include <string>
#include <unordered_map>

#include "core/strings.h"

namespace ftp {
namespace {

constexpr uint32_t kSkipFrame = UINT32_MAX;

struct FrameKey {
  PyCodeObject* code;
  int offset;  // instruction offset (3.11+) or line: both identify the call site within code
  bool operator==(const FrameKey& o) const { return code == o.code && offset == o.offset; }
};
struct FrameKeyHash {
  size_t operator()(const FrameKey& k) const {
    return reinterpret_cast<size_t>(k.code) * 31 + static_cast<size_t>(k.offset);
  }
};

std::mutex tableMutex;
// Code objects in the table are kept alive (one reference each) so their addresses are never
// reused for other code while the key stands.
std::unordered_map<FrameKey, uint32_t, FrameKeyHash>* table =
    new std::unordered_map<FrameKey, uint32_t, FrameKeyHash>();

std::string utf8(PyObject* text) {
  if (!text || !PyUnicode_Check(text)) return "?";
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text, &size);
  if (!data) {
    PyErr_Clear();
    return "?";
  }
  return std::string(data, static_cast<size_t>(size));
}

std::vector<std::string>* extraInternal = new std::vector<std::string>();  // guarded by tableMutex

bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool isExtraInternal(const std::string& file) {
  std::lock_guard<std::mutex> lock(tableMutex);
  for (const auto& fragment : *extraInternal)
    if (file.find(fragment) != std::string::npos) return true;
  return false;
}

bool isInternalFile(const std::string& file) {
  // Launch machinery between the user's call and the driver (Triton's runtime and launchers,
  // this profiler's own hooks), and the launchers above a script run by flagtree-profiler
  // (runpy, the console-script stub).
  return file.find("/triton/runtime/") != std::string::npos ||
         file.find("/triton/backends/") != std::string::npos ||
         file.find("/flagtree/profiler/") != std::string::npos || file.rfind("<frozen ", 0) == 0 ||
         endsWith(file, "/bin/flagtree-profiler") || isExtraInternal(file);
}

#ifdef Py_LIMITED_API
// The limited API has no PyFrame_GetBack or PyFrame_GetLasti. Both are documented CPython
// functions (3.9 and 3.11), exported by every interpreter this module loads in, so they are
// looked up once; the frame attributes they stand for are the fallback (slower, always there).
using FrameFunction = void* (*)(PyFrameObject*);
void* lookUp(const char* symbol) { return dlsym(RTLD_DEFAULT, symbol); }

PyFrameObject* frameBack(PyFrameObject* frame) {  // new reference, or nullptr at the bottom
  static auto native = reinterpret_cast<FrameFunction>(lookUp("PyFrame_GetBack"));
  if (native) return static_cast<PyFrameObject*>(native(frame));
  PyObject* back = PyObject_GetAttrString(reinterpret_cast<PyObject*>(frame), "f_back");
  if (!back) PyErr_Clear();
  if (back == Py_None) Py_CLEAR(back);
  return reinterpret_cast<PyFrameObject*>(back);
}

int frameLasti(PyFrameObject* frame) {
  using Lasti = int (*)(PyFrameObject*);
  static auto native = reinterpret_cast<Lasti>(lookUp("PyFrame_GetLasti"));
  if (native) return native(frame);
  PyObject* lasti = PyObject_GetAttrString(reinterpret_cast<PyObject*>(frame), "f_lasti");
  long value = lasti ? PyLong_AsLong(lasti) : -1;
  Py_XDECREF(lasti);
  PyErr_Clear();
  return static_cast<int>(value);
}
#define PyFrame_GetBack frameBack
#define PyFrame_GetLasti frameLasti
// PyGILState_Ensure nests, so it is always called rather than asked about first.
#define PyGILState_Check() 0
#endif

uint32_t frameId(PyFrameObject* frame, PyCodeObject* code) {
#if PY_VERSION_HEX >= 0x030B0000
  int offset = PyFrame_GetLasti(frame);
#else
  int offset = PyFrame_GetLineNumber(frame);
#endif
  FrameKey key{code, offset};
  // A per-thread copy of the table keeps the launch path free of the lock; entries never
  // change once made, because the shared table holds a reference to every code object in it.
  static thread_local std::unordered_map<FrameKey, uint32_t, FrameKeyHash> local;
  auto hit = local.find(key);
  if (hit != local.end()) return hit->second;
  {
    std::lock_guard<std::mutex> lock(tableMutex);
    auto it = table->find(key);
    if (it != table->end()) return local[key] = it->second;
  }
  PyObject* file = PyObject_GetAttrString(reinterpret_cast<PyObject*>(code), "co_filename");
  PyObject* func = PyObject_GetAttrString(reinterpret_cast<PyObject*>(code), "co_name");
  std::string fileName = utf8(file);
  std::string funcName = utf8(func);
  Py_XDECREF(file);
  Py_XDECREF(func);
  PyErr_Clear();
  uint32_t id = kSkipFrame;
  if (!isInternalFile(fileName))
    id = intern(fileName + ":" + std::to_string(PyFrame_GetLineNumber(frame)) + "@" + funcName);
  std::lock_guard<std::mutex> lock(tableMutex);
  auto inserted = table->emplace(key, id);
  if (inserted.second) Py_INCREF(reinterpret_cast<PyObject*>(code));
  return local[key] = inserted.first->second;
}

}  // namespace

void setExtraInternalFiles(std::vector<std::string> fragments) {
  std::lock_guard<std::mutex> lock(tableMutex);
  *extraInternal = std::move(fragments);
}

void capturePythonFrames(std::vector<uint32_t>& out) {
  out.clear();
  if (!Py_IsInitialized()) return;
  bool ownGil = !PyGILState_Check();
  PyGILState_STATE gil{};
  if (ownGil) gil = PyGILState_Ensure();
  PyFrameObject* frame = PyThreadState_GetFrame(PyThreadState_Get());  // new reference
  while (frame) {
    PyCodeObject* code = PyFrame_GetCode(frame);  // new reference
    uint32_t id = frameId(frame, code);
    Py_DECREF(code);
    if (id != kSkipFrame) out.push_back(id);
    PyFrameObject* back = PyFrame_GetBack(frame);  // new reference
    Py_DECREF(frame);
    frame = back;
  }
  if (ownGil) PyGILState_Release(gil);
  // Collected innermost first; the tree wants outermost first.
  for (size_t i = 0, j = out.size(); i + 1 < j; ++i, --j) std::swap(out[i], out[j - 1]);
}

}  // namespace ftp
