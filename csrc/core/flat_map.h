// A small open-addressing hash map from uint32 keys to trivially copyable values.
// The launch path inserts into it once per kernel: no allocation per insert, unlike
// std::unordered_map, and erase uses backward shifting so no tombstones pile up.
#pragma once
#include <cstdint>
#include <vector>

namespace ftp {

template <typename V>
class FlatMap {
 public:
  explicit FlatMap(size_t capacity = 1 << 12) { reset(capacity); }

  size_t size() const { return size_; }

  void insert(uint32_t key, const V& value) {
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();
    size_t i = find(key);
    if (!slots_[i].used) {
      slots_[i].used = true;
      slots_[i].key = key;
      ++size_;
    }
    slots_[i].value = value;
  }

  // Returns nullptr when absent. The pointer is valid until the next insert or erase.
  V* get(uint32_t key) {
    size_t i = find(key);
    return slots_[i].used ? &slots_[i].value : nullptr;
  }

  bool erase(uint32_t key) {
    size_t i = find(key);
    if (!slots_[i].used) return false;
    size_t mask = slots_.size() - 1;
    // Backward-shift deletion: pull later members of the probe run into the hole.
    size_t hole = i;
    for (size_t j = (i + 1) & mask; slots_[j].used; j = (j + 1) & mask) {
      size_t home = hash(slots_[j].key) & mask;
      bool movable = (hole <= j) ? (home <= hole || home > j) : (home <= hole && home > j);
      if (movable) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole].used = false;
    --size_;
    return true;
  }

  // Visits every member. An empty map returns at once: its table may have grown large once (a
  // burst of launches in flight) and never shrinks, and a scan of it costs tens of microseconds.
  template <typename F>
  void forEach(F&& f) {
    if (size_ == 0) return;
    for (auto& s : slots_)
      if (s.used) f(s.key, s.value);
  }

  void clear() { reset(1 << 12); }

 private:
  struct Slot {
    uint32_t key = 0;
    bool used = false;
    V value{};
  };

  static size_t hash(uint32_t key) { return size_t(key) * 0x9E3779B97F4A7C15ull >> 17; }

  size_t find(uint32_t key) const {
    size_t mask = slots_.size() - 1;
    size_t i = hash(key) & mask;
    while (slots_[i].used && slots_[i].key != key) i = (i + 1) & mask;
    return i;
  }

  void reset(size_t capacity) {
    slots_.assign(capacity, Slot{});
    size_ = 0;
  }

  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    reset(old.size() * 2);
    for (auto& s : old)
      if (s.used) insert(s.key, s.value);
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace ftp
