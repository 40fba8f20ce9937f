// Protocol-buffer wire encoding by hand (no protobuf library), enough for Perfetto's trace
// format. Two levels: free functions that encode into raw memory the caller has sized (the
// per-event hot path writes straight into the file's buffer), and ProtoMessage, a reusable
// buffer for the rarer messages (descriptors, interned data) built first and appended with
// their length.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>

namespace ftp {
namespace wire {

constexpr uint32_t kVarint = 0, kFixed64 = 1, kLength = 2;
constexpr size_t kMaxVarint = 10;

#define FTP_INLINE inline __attribute__((always_inline))

FTP_INLINE size_t varintSize(uint64_t v) { return v < 0x80 ? 1 : size_t(70 - __builtin_clzll(v)) / 7; }
FTP_INLINE char* putVarint(char* p, uint64_t v) {
  if (v < 0x80) {  // iids, uuids, enum values: most varints are one byte
    *p = static_cast<char>(v);
    return p + 1;
  }
  do {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  } while (v >= 0x80);
  *p++ = static_cast<char>(v);
  return p;
}
inline constexpr uint64_t tag(uint32_t field, uint32_t type) { return uint64_t(field) << 3 | type; }
FTP_INLINE char* putTag(char* p, uint32_t field, uint32_t type) { return putVarint(p, tag(field, type)); }
// A field's key known at compile time: one or two constant bytes.
template <uint32_t Field, uint32_t Type>
FTP_INLINE char* putTag(char* p) {
  constexpr uint64_t key = tag(Field, Type);
  static_assert(key < 0x4000, "field numbers up to 2047");
  if constexpr (key < 0x80) {
    *p = static_cast<char>(key);
    return p + 1;
  } else {
    p[0] = static_cast<char>(key | 0x80);
    p[1] = static_cast<char>(key >> 7);
    return p + 2;
  }
}
template <uint32_t Field>
FTP_INLINE char* putVarintField(char* p, uint64_t v) { return putVarint(putTag<Field, kVarint>(p), v); }
template <uint32_t Field>
FTP_INLINE char* putFixed64Field(char* p, uint64_t v) {
  p = putTag<Field, kFixed64>(p);
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));  // little-endian on the wire
  return p + 8;
}
FTP_INLINE char* putBytes(char* p, const void* data, size_t n) {
  std::memcpy(p, data, n);
  return p + n;
}
template <uint32_t Field>
FTP_INLINE char* putBytesField(char* p, std::string_view bytes) {
  p = putVarint(putTag<Field, kLength>(p), bytes.size());
  return putBytes(p, bytes.data(), bytes.size());
}
// The same with the field number known only at run time (the rarer messages).
inline char* putVarintField(char* p, uint32_t field, uint64_t v) { return putVarint(putTag(p, field, kVarint), v); }
inline char* putFixed64Field(char* p, uint32_t field, uint64_t v) {
  p = putTag(p, field, kFixed64);
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
  return p + 8;
}
inline char* putBytesField(char* p, uint32_t field, std::string_view bytes) {
  p = putVarint(putTag(p, field, kLength), bytes.size());
  return putBytes(p, bytes.data(), bytes.size());
}

}  // namespace wire

class ProtoMessage {
 public:
  void clear() { size_ = 0; }
  std::string_view bytes() const { return {data_.get(), size_}; }

  void varintField(uint32_t field, uint64_t value) { end(wire::putVarintField(room(2 * wire::kMaxVarint), field, value)); }
  void sintField(uint32_t field, int64_t value) { varintField(field, static_cast<uint64_t>(value)); }  // int64 (not zigzag)
  void fixed64Field(uint32_t field, uint64_t value) { end(wire::putFixed64Field(room(wire::kMaxVarint + 8), field, value)); }
  void doubleField(uint32_t field, double value) {
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    fixed64Field(field, bits);
  }
  void bytesField(uint32_t field, std::string_view value) {
    end(wire::putBytesField(room(2 * wire::kMaxVarint + value.size()), field, value));
  }
  void messageField(uint32_t field, const ProtoMessage& nested) { bytesField(field, nested.bytes()); }
  void append(std::string_view encoded) { end(wire::putBytes(room(encoded.size()), encoded.data(), encoded.size())); }

  // Raw encoding in place: at least `n` bytes of room at the end, handed back with end().
  char* room(size_t n) {
    if (size_ + n > capacity_) grow(size_ + n);
    return data_.get() + size_;
  }
  void end(char* p) { size_ = static_cast<size_t>(p - data_.get()); }

 private:
  void grow(size_t needed) {
    size_t capacity = capacity_ ? capacity_ : 256;
    while (capacity < needed) capacity *= 2;
    std::unique_ptr<char[]> data(new char[capacity]);
    if (size_) std::memcpy(data.get(), data_.get(), size_);
    data_ = std::move(data);
    capacity_ = capacity;
  }

  std::unique_ptr<char[]> data_;  // a plain buffer: std::string's append was a third of the writer's time
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace ftp
