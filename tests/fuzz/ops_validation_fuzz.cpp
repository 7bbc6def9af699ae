// SPDX-License-Identifier: Apache-2.0
// Fuzz target: phase-one validation of the five operators. Arbitrary
// shapes, strides, offsets, dtypes, aliasing and attributes must give either
// an executor whose run stays inside the memory the views describe (each
// buffer is allocated to exactly that extent, and inputs that are not out
// must not change), or a null-parameter / invalid-parameter error that
// leaves every buffer untouched.
#include <cstring>
#include <vector>

#include "ops_cases.hpp"

using namespace keel_fuzz;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  input in(data, size);
  const call c = decode_call(in);
  arena a;
  if (!build(c, a, in.u32())) return 0;
  std::vector<std::vector<unsigned char>> before;
  for (std::size_t b = 0; b < a.buffers.size(); ++b) before.emplace_back(a.buffers[b].get(), a.buffers[b].get() + a.sizes[b]);
  ko::executor ex;
  try {
    ex = prepare(c, a.views);
  } catch (const keel::error& e) {
    KEEL_FUZZ_REQUIRE(e.code() == keel::errc::invalid_parameter || e.code() == keel::errc::null_parameter,
                      "phase one threw %s", e.what());
    for (std::size_t b = 0; b < a.buffers.size(); ++b)
      KEEL_FUZZ_REQUIRE(a.sizes[b] == 0 || std::memcmp(before[b].data(), a.buffers[b].get(), a.sizes[b]) == 0,
                        "phase one failed (%s) but buffer %zu changed", e.what(), b);
    return 0;
  }
  KEEL_FUZZ_REQUIRE(static_cast<bool>(ex), "phase one returned an empty executor");
  if (!a.runnable) return 0;
  run_exactly(ex);
  // Only out's buffer may change.
  const int out_buffer = c.t[c.count - 1].null ? -1 : c.t[c.count - 1].buffer;
  for (std::size_t b = 0; b < a.buffers.size(); ++b)
    if (static_cast<int>(b) != out_buffer && a.sizes[b] != 0)
      KEEL_FUZZ_REQUIRE(std::memcmp(before[b].data(), a.buffers[b].get(), a.sizes[b]) == 0,
                        "op %d wrote to input buffer %zu", c.op, b);
  return 0;
}
