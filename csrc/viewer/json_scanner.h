// The JSON side of the viewer's fast reader (tree_reader.cpp): scanning, validating and
// skipping JSON values in a file's bytes, and numbers turned into Python's int or float as its
// json module reads them. It takes only the plain common case: anything the Python reader must
// decide (escapes or control characters in strings, NaN/Infinity, very long integers, deep
// nesting inside a skipped value, bad UTF-8, any syntax error) throws GiveUp. Header-only: the
// reader's hot loop inlines these calls.
#pragma once
#include <nanobind/nanobind.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace ftp::viewer {

namespace nb = nanobind;

struct GiveUp {};  // thrown anywhere the Python reader must decide

constexpr int kSkipDepth = 512;  // nesting inside a skipped value (Python's limit is higher)
constexpr long kDigitLimit = 4000;  // under Python's int_max_str_digits default (4300)

inline bool isBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// A cursor over [data, data + size): the bytes outlive it.
class JsonScanner {
 public:
  JsonScanner(const char* data, size_t size) : p_(data), end_(data + size) {}

  const char* pos() const { return p_; }
  void blank() { while (p_ < end_ && isBlank(*p_)) ++p_; }
  char peek() { blank(); if (p_ >= end_) throw GiveUp(); return *p_; }
  void expect(char c) { if (peek() != c) throw GiveUp(); ++p_; }

  // A string without escapes or control characters: [begin, end) of its bytes, p_ past it.
  std::pair<const char*, const char*> rawString();
  // Skips a string, still refusing what the Python reader refuses (bad UTF-8).
  void skipString();
  void skipNumber();
  // A JSON number as Python's json reads it: int when it has no fraction or exponent.
  nb::object number();
  // Validates one JSON value without building it. An object in it with a "frame" member gives
  // up too: the Python reader would take it for a node (and check it as one).
  void skipValue();

 protected:
  const char* p_;
  const char* end_;

 private:
  void objectKey(), literal();
};

inline std::pair<const char*, const char*> JsonScanner::rawString() {
  if (peek() != '"') throw GiveUp();
  const char* begin = ++p_;
  while (p_ < end_) {
    unsigned char c = static_cast<unsigned char>(*p_);
    if (c == '"') return {begin, p_++};
    if (c == '\\' || c < 0x20) throw GiveUp();
    ++p_;
  }
  throw GiveUp();
}

// A str of UTF-8 bytes; bad UTF-8 is left to the Python reader, which says where.
inline PyObject* decode(const char* begin, const char* stop) {
  PyObject* text = PyUnicode_DecodeUTF8(begin, stop - begin, "strict");
  if (!text) {
    PyErr_Clear();
    throw GiveUp();
  }
  return text;
}

inline void JsonScanner::skipNumber() {
  const char* q = p_;
  if (q < end_ && *q == '-') ++q;
  if (q >= end_ || !(*q >= '0' && *q <= '9')) throw GiveUp();
  const char* digits = q;
  if (*q == '0') ++q; else while (q < end_ && *q >= '0' && *q <= '9') ++q;
  if (q - digits > kDigitLimit) throw GiveUp();  // Python refuses long integers: it says so
  if (q < end_ && *q == '.') {
    ++q;
    if (q >= end_ || !(*q >= '0' && *q <= '9')) throw GiveUp();
    while (q < end_ && *q >= '0' && *q <= '9') ++q;
  }
  if (q < end_ && (*q == 'e' || *q == 'E')) {
    ++q;
    if (q < end_ && (*q == '+' || *q == '-')) ++q;
    if (q >= end_ || !(*q >= '0' && *q <= '9')) throw GiveUp();
    while (q < end_ && *q >= '0' && *q <= '9') ++q;
  }
  p_ = q;
}

inline nb::object JsonScanner::number() {
  const char* begin = p_;
  skipNumber();
  bool negative = *begin == '-';
  const char* digits = begin + negative;
  bool integral = true;
  for (const char* q = digits; q < p_; ++q) {
    if (*q < '0' || *q > '9') { integral = false; break; }
  }
  if (integral) {
    if (p_ - digits > 18) throw GiveUp();  // may not fit int64: Python keeps it exact
    long long value = 0;
    for (const char* q = digits; q < p_; ++q) value = value * 10 + (*q - '0');
    PyObject* made = PyLong_FromLongLong(negative ? -value : value);
    if (!made) throw nb::python_error();
    return nb::steal(made);
  }
  std::string token(begin, p_);
  double value = std::strtod(token.c_str(), nullptr);  // correctly rounded, like float()
  if (!std::isfinite(value)) throw GiveUp();
  return nb::steal(PyFloat_FromDouble(value));
}

inline void JsonScanner::skipString() {
  auto [begin, stop] = rawString();
  for (const char* q = begin; q < stop; ++q) {
    if (static_cast<unsigned char>(*q) >= 0x80) {
      Py_DECREF(decode(begin, stop));
      return;
    }
  }
}

// A member name inside a skipped object, and its ':'. An object with a "frame" member would
// be taken for a node by the Python reader (and checked as one): left to it.
inline void JsonScanner::objectKey() {
  const char* begin = p_;
  skipString();
  if (p_ - begin >= 7 && std::memcmp(p_ - 7 + 0, "\"frame\"", 7) == 0) throw GiveUp();
  expect(':');
}

inline void JsonScanner::literal() {
  for (const char* word : {"true", "false", "null"}) {
    size_t n = std::strlen(word);
    if (static_cast<size_t>(end_ - p_) >= n && std::memcmp(p_, word, n) == 0) {
      p_ += n;
      return;
    }
  }
  throw GiveUp();  // NaN, Infinity or bad JSON
}

inline void JsonScanner::skipValue() {
  char open[kSkipDepth];  // '{' or '[' per level entered
  int depth = 0;
  while (true) {
    char c = peek();  // a value starts here
    if (c == '{' || c == '[') {
      ++p_;
      if (depth >= kSkipDepth) throw GiveUp();
      if (peek() == (c == '{' ? '}' : ']')) {
        ++p_;  // empty: a whole value
      } else {
        open[depth++] = c;
        if (c == '{') objectKey();
        continue;
      }
    } else if (c == '"') {
      skipString();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      skipNumber();
    } else {
      literal();
    }
    while (true) {  // a value ended: close containers, or go on to the next element
      if (depth == 0) return;
      char next = peek();
      if (next == (open[depth - 1] == '{' ? '}' : ']')) {
        ++p_;
        --depth;
        continue;
      }
      if (next != ',') throw GiveUp();
      ++p_;
      if (open[depth - 1] == '{') objectKey();
      break;
    }
  }
}

}  // namespace ftp::viewer
