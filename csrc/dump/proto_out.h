// Protocol-buffer wire encoding by hand (no protobuf library), enough for Perfetto's trace
// format: a message is built in a reusable buffer, nested messages are built first and then
// appended with their length.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>

namespace ftp {

class ProtoMessage {
 public:
  void clear() { size_ = 0; }
  std::string_view bytes() const { return {data_.get(), size_}; }

  void varintField(uint32_t field, uint64_t value) {
    tag(field, 0);
    varint(value);
  }
  void sintField(uint32_t field, int64_t value) { varintField(field, static_cast<uint64_t>(value)); }  // int64 (not zigzag)
  void fixed64Field(uint32_t field, uint64_t value) {
    tag(field, 1);
    char* out = room(8);
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(value >> (8 * i));
    size_ += 8;
  }
  void doubleField(uint32_t field, double value) {
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    fixed64Field(field, bits);
  }
  void bytesField(uint32_t field, std::string_view value) {
    tag(field, 2);
    varint(value.size());
    std::memcpy(room(value.size()), value.data(), value.size());
    size_ += value.size();
  }
  void messageField(uint32_t field, const ProtoMessage& nested) { bytesField(field, nested.bytes()); }
  void append(std::string_view encoded) {  // fields encoded elsewhere
    std::memcpy(room(encoded.size()), encoded.data(), encoded.size());
    size_ += encoded.size();
  }
  // The head of a length-delimited field whose `size` bytes the caller writes after it.
  void lengthField(uint32_t field, size_t size) {
    tag(field, 2);
    varint(size);
  }

 private:
  void tag(uint32_t field, uint32_t wireType) { varint(uint64_t(field) << 3 | wireType); }
  void varint(uint64_t value) {
    char* out = room(10);
    size_t n = 0;
    do {
      out[n++] = static_cast<char>((value & 0x7F) | (value > 0x7F ? 0x80 : 0));
      value >>= 7;
    } while (value);
    size_ += n;
  }
  // Space for `n` more bytes at the end (a plain buffer: std::string's append was a third of
  // the writer's time).
  char* room(size_t n) {
    if (size_ + n > capacity_) grow(size_ + n);
    return data_.get() + size_;
  }
  void grow(size_t needed) {
    size_t capacity = capacity_ ? capacity_ : 256;
    while (capacity < needed) capacity *= 2;
    std::unique_ptr<char[]> data(new char[capacity]);
    if (size_) std::memcpy(data.get(), data_.get(), size_);
    data_ = std::move(data);
    capacity_ = capacity;
  }

  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace ftp
