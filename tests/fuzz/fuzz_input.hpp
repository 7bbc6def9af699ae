// SPDX-License-Identifier: Apache-2.0
// Helpers shared by keel's fuzz targets: a reader that turns the fuzzer's
// bytes into small decisions (running out of bytes yields zeros, so every
// input decodes), and a failure macro that prints and aborts so libFuzzer
// keeps the input as a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace keel_fuzz {

class input {
 public:
  input(const std::uint8_t* data, std::size_t size) noexcept : data_(data), size_(size) {}
  std::uint8_t byte() noexcept { return pos_ < size_ ? data_[pos_++] : 0; }
  // A value in [0, n).
  unsigned below(unsigned n) noexcept { return n == 0 ? 0 : byte() % n; }
  bool chance(unsigned in256) noexcept { return byte() < in256; }
  std::uint32_t u32() noexcept {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | byte();
    return v;
  }
  bool empty() const noexcept { return pos_ >= size_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

}  // namespace keel_fuzz

// A broken property: print why, then abort (libFuzzer saves the input).
#define KEEL_FUZZ_REQUIRE(cond, ...)                                                   \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "keel fuzz: property failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                               \
      std::fprintf(stderr, "\n");                                                      \
      std::abort();                                                                    \
    }                                                                                  \
  } while (false)
