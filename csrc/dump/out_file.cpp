#include "dump/out_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <stdexcept>

namespace ftp {
namespace {

std::string folderOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string baseOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::atomic<uint64_t> tempCounter{0};
std::atomic<bool> syncEachOutput{false};

// Puts `tmp` at `path` when a file (or a link) is there, by exchanging the two names and removing
// the old file, now under the temporary name; false when it did not (nothing there, a folder,
// a kernel or file system without RENAME_EXCHANGE): then a plain rename does. A rename over a
// file makes ext4 start writing the new file back before it returns (auto_da_alloc), which costs
// each output about a tenth of a millisecond and guards only against a power loss, as the fsync
// would (docs/reference/outputs.md). Either way the name holds the old file or the new one.
bool exchangeInto(const std::string& tmp, const std::string& path) {
#ifdef SYS_renameat2
  constexpr unsigned kRenameExchange = 1u << 1;  // linux/fs.h's RENAME_EXCHANGE
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))) return false;
  if (::syscall(SYS_renameat2, AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), kRenameExchange) != 0) return false;
  if (::unlink(tmp.c_str()) == 0) return true;
  // The old entry stays under the temporary name: a folder that took the file's place since the
  // lstat (EISDIR), or a file the disk would not remove (EIO). Put it back, and let the plain
  // rename replace the file, which leaves nothing behind, or fail on the folder. Only a file
  // whose exchange back fails too stays there, beside the new one in place.
  const int error = errno;
  const bool putBack = ::syscall(SYS_renameat2, AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), kRenameExchange) == 0;
  return !putBack && error != EISDIR;
#else
  (void)tmp;
  (void)path;
#endif
  return false;
}

}  // namespace

void setSyncOutputs(bool on) { syncEachOutput.store(on, std::memory_order_relaxed); }
bool syncOutputs() { return syncEachOutput.load(std::memory_order_relaxed); }

AtomicOutFile::AtomicOutFile(const std::string& path) : path_(path), buffer_(new char[kBuffer]) {
  const std::string stem = folderOf(path) + "/." + baseOf(path);
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    tmp_ = stem + "." + std::to_string(getpid()) + "." + std::to_string(tempCounter.fetch_add(1)) + ".tmp";
    // O_EXCL: never write through something already there (a planted link included).
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) {
    const int error = errno;
    tmp_.clear();
    fail("cannot create a temporary file for", error);
  }
}

AtomicOutFile::~AtomicOutFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicOutFile::fail(const char* what, int error) {
  throw std::runtime_error(std::string(what) + " " + path_ + ": " + std::strerror(error));
}

void AtomicOutFile::writeThrough(const char* data, size_t n) {
  while (n && !error_) {
    const ssize_t done = ::write(fd_, data, n);
    if (done < 0) {
      if (errno != EINTR) error_ = errno;
      continue;
    }
    data += done;
    n -= static_cast<size_t>(done);
    written_ += static_cast<uint64_t>(done);
  }
}

void AtomicOutFile::drain() {
  const uint64_t from = written_;
  writeThrough(buffer_.get(), used_);
  // Start writing this chunk back now, without waiting: the fsync at commit() then has little
  // left to do, the disk having worked while the rest was formatted.
  if (!error_ && used_ && syncOutputs())
    ::sync_file_range(fd_, static_cast<off_t>(from), static_cast<off_t>(used_), SYNC_FILE_RANGE_WRITE);
  used_ = 0;
}

void AtomicOutFile::flush() {
  drain();
  if (error_) fail("cannot write", error_);
}

void AtomicOutFile::commit() {
  flush();
  // The rename alone is atomic against anything that stops this process; the fsync makes the
  // data reach the disk before the name does, which matters only after a power loss.
  if (syncOutputs() && ::fsync(fd_) != 0) fail("cannot sync", errno);
  const int closed = ::close(fd_);
  fd_ = -1;
  if (closed != 0) fail("cannot write", errno);
  if (!exchangeInto(tmp_, path_) && ::rename(tmp_.c_str(), path_.c_str()) != 0) fail("cannot replace", errno);
  tmp_.clear();
  // No fsync of the folder: after a power loss the name holds the old file or the new one,
  // both whole, which is all this promises; a folder fsync would slow every output.
}

void JsonOut::micros(int64_t ns) {
  char* p = file_.space(32);
  if (ns < 0) {
    *p++ = '-';
    ns = -ns;
  }
  p = std::to_chars(p, p + 24, ns / 1000).ptr;
  const int frac = static_cast<int>(ns % 1000);
  p[0] = '.';
  p[1] = char('0' + frac / 100);
  p[2] = char('0' + frac / 10 % 10);
  p[3] = char('0' + frac % 10);
  file_.advance(p + 4);
}

void JsonOut::number(double value, bool pointZero) {
  if (!std::isfinite(value)) return raw("null");
  char* start = file_.space(40);
  char* end = std::to_chars(start, start + 32, value).ptr;
  bool integral = pointZero;
  for (char* c = start; c < end; ++c)
    if (*c == '.' || *c == 'e') integral = false;
  if (integral) {
    *end++ = '.';
    *end++ = '0';
  }
  file_.advance(end);
}

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one.
size_t utf8Length(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t min;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) n = 2, min = 0x80;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, min = 0x10000;
  else return 0;
  if (i + n > s.size()) return 0;
  uint32_t cp = c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    const unsigned char cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (cc & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

void appendJsonEscaped(std::string_view text, std::string& out) {
  static const char* hex = "0123456789abcdef";
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
      ++i;
    } else if (c < 0x20) {
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
    } else if (c < 0x80) {
      out += char(c);
      ++i;
    } else if (size_t n = utf8Length(text, i)) {
      out.append(text.data() + i, n);
      i += n;
    } else {
      out += "\\ufffd";
      ++i;
    }
  }
}

}  // namespace ftp

#include "core/strings.h"

namespace ftp {

const std::string& EscapedNames::operator[](uint32_t id) {
  if (id >= known_.size()) {
    known_.resize(size_t(id) + 1, 0);
    escaped_.resize(size_t(id) + 1);
  }
  if (!known_[id]) {
    appendJsonEscaped(nameOf(id), escaped_[id]);
    known_[id] = 1;
  }
  return escaped_[id];
}

}  // namespace ftp
