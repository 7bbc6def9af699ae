// SPDX-License-Identifier: Apache-2.0
// The executor caches' keys: an operator call's identity as 64-bit words
// (the operator, every tensor's layout, the attributes that shape the plan),
// hashed as they are written.
#pragma once

#include <cstddef>
#include <cstdint>

#include "keel/ops/op_table.hpp"
#include "keel/ops/scalar.hpp"
#include "keel/ops/tensor.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops::detail {

// A key as stored or probed: its words and their hash.
struct key_view {
  const std::uint64_t* words;
  std::uint32_t size;
  std::size_t hash;
};
struct key_view_hash {
  std::size_t operator()(const key_view& k) const noexcept { return k.hash; }
};
struct key_view_equal {
  bool operator()(const key_view& a, const key_view& b) const noexcept {
    if (a.hash != b.hash || a.size != b.size) return false;
    for (std::uint32_t i = 0; i < a.size; ++i) {  // a few dozen words: no call to memcmp
      if (a.words[i] != b.words[i]) return false;
    }
    return true;
  }
};

// Cache keys: the operator, then every tensor's dtype, rank, null-ness,
// shape and strides, then the attributes that shape the plan. Data
// pointers, storage offsets and scalar values are not in the key: a hit
// binds this call's. Whole 64-bit words, hashed as they are written, so a
// lookup costs one pass over the words and never allocates.
class plan_key {
 public:
  // The operator, five tensors of tensor::max_dims dimensions (a header
  // word, then size and stride per dimension) and a few attribute words.
  // An operator layer may add words of its own (ACL: each tensor's address
  // and offset and each scalar's value, 12 at most for five tensors and two scalars).
  static constexpr std::size_t capacity = 1 + 5 * (1 + 2 * tensor::max_dims) + 6 + 12;

  explicit plan_key(op_kind op) noexcept { put(static_cast<std::uint64_t>(op)); }
  void add(const tensor& t) noexcept {
    // A null tensor validates differently, so null-ness is in the key.
    put(std::uint64_t{static_cast<std::uint8_t>(t.type())} | std::uint64_t{t.dim()} << 8 |
        std::uint64_t{t.data() == nullptr} << 16);
    for (std::size_t i = 0; i < t.dim(); ++i) {
      put(static_cast<std::uint64_t>(t.size(i)));
      put(static_cast<std::uint64_t>(t.stride(i)));
    }
  }
  // A scalar's dtype decides validation (a floating alpha for integers).
  void add(const scalar& s) noexcept { put(static_cast<std::uint8_t>(s.type())); }
  void put(std::uint64_t w) noexcept {
    // The table compares whole keys, so the hash only has to spread them
    // over buckets. Each word is mixed with its position on its own and the
    // results are summed: the multiplies overlap, where a chained hash
    // (h = (h ^ w) * k) waits for each one in turn.
    hash_ += (w ^ (size_ * 0x9e3779b97f4a7c15ull)) * 0x517cc1b727220a95ull;
    words_[size_++] = w;
  }
  key_view view() const noexcept {
    std::uint64_t h = hash_ ^ hash_ >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return {words_, size_, static_cast<std::size_t>(h ^ h >> 32)};
  }

 private:
  std::uint64_t words_[capacity];
  std::uint32_t size_ = 0;
  std::uint64_t hash_ = 0;
};

} KEEL_END_NAMESPACE  // namespace keel::ops::detail
