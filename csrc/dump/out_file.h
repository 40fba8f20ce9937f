// The one way native writers put a file on disk: into a temporary file beside the target, then
// rename over it. A reader (or a later run) sees the previous file or the whole new one, never a
// truncated one, whatever interrupts the write (a signal, SIGKILL, a full disk); a symlink
// planted at the target is replaced, not followed (rename replaces the entry). The fsync before
// the rename, which guards only against a power loss, is made while setSyncOutputs(true) holds
// (FLAGTREE_PROFILER_FSYNC=1, set from Python: docs/reference/outputs.md).
#pragma once
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ftp {

// Whether commit() fsyncs each file before its rename (off unless Python turns it on).
void setSyncOutputs(bool on);
bool syncOutputs();

class AtomicOutFile {
 public:
  // Creates ".<name>.<pid>.<n>.tmp" in the target's folder; throws std::runtime_error.
  explicit AtomicOutFile(const std::string& path);
  ~AtomicOutFile();  // removes the temporary file unless committed
  AtomicOutFile(const AtomicOutFile&) = delete;
  AtomicOutFile& operator=(const AtomicOutFile&) = delete;

  void write(const char* data, size_t n) {
    if (used_ + n > kBuffer) {
      drain();
      if (n > kBuffer) return writeThrough(data, n);
    }
    std::memcpy(buffer_.get() + used_, data, n);
    used_ += n;
  }
  void write(std::string_view text) { write(text.data(), text.size()); }
  void put(char c) {
    if (used_ == kBuffer) drain();
    buffer_[used_++] = c;
  }
  // Room for `n` bytes written in place (number formatting); hand back the end with advance().
  char* space(size_t n) {
    if (used_ + n > kBuffer) drain();
    return buffer_.get() + used_;
  }
  void advance(char* end) { used_ = static_cast<size_t>(end - buffer_.get()); }

  // Hands the buffered text to the file; throws on the first write error (a full disk).
  void flush();
  // Flushes, fsyncs (while syncOutputs()) and renames over the target. Throws on any failure,
  // leaving the target as it was.
  void commit();

 private:
  static constexpr size_t kBuffer = 1 << 20;
  void drain();
  void writeThrough(const char* data, size_t n);
  [[noreturn]] void fail(const char* what, int error);

  std::string path_;
  std::string tmp_;
  int fd_ = -1;
  int error_ = 0;  // first write errno; writes after it are dropped, commit() reports it
  std::unique_ptr<char[]> buffer_;
  size_t used_ = 0;
  uint64_t written_ = 0;  // bytes handed to the file so far
};

// JSON text on an AtomicOutFile: strict numbers (NaN and infinities as null); strings go in
// escaped beforehand (appendJsonEscaped, EscapedNames).
class JsonOut {
 public:
  explicit JsonOut(AtomicOutFile& file) : file_(file) {}
  template <size_t N>
  void raw(const char (&literal)[N]) {  // sized at compile time: no strlen per call
    file_.write(literal, N - 1);
  }
  void raw(const std::string& text) { file_.write(text.data(), text.size()); }
  void raw(const char* text) { file_.write(text, std::strlen(text)); }
  void raw(char c) { file_.put(c); }
  template <typename Int>
  void integer(Int value) {
    char* p = file_.space(24);
    file_.advance(std::to_chars(p, p + 24, value).ptr);
  }
  // `ns` nanoseconds as microseconds with three decimals (what %.3f of ns/1000 prints).
  void micros(int64_t ns);
  // Shortest round-trip form, null for NaN and infinities; with `pointZero`, ".0" on integral
  // values (as Python writes floats: the tree's metrics), else without (the trace's arguments).
  void number(double value, bool pointZero = true);
  AtomicOutFile& file() { return file_; }

 private:
  AtomicOutFile& file_;
};

// Appends `text` escaped for a JSON string (no quotes): quote, backslash and control
// characters escaped, bytes that are not valid UTF-8 replaced by U+FFFD.
void appendJsonEscaped(std::string_view text, std::string& out);

}  // namespace ftp

namespace ftp {

// Interned names escaped for JSON once each, looked up by id while writing.
class EscapedNames {
 public:
  // The reference stays valid while the table lives: writers hold a name across the look-ups
  // of others (a kernel's name over its launch's metric names).
  const std::string& operator[](uint32_t id);

 private:
  std::deque<std::string> escaped_;  // a deque: growing it at the end moves no element
  std::vector<uint8_t> known_;
};

}  // namespace ftp
