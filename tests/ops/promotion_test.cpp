// SPDX-License-Identifier: Apache-2.0
// Promotion through the common dtype (PyTorch's TensorIterator): every
// operand is converted to the result type before the float32 compute, the
// result is rounded to it before out's dtype, and add's alpha is converted to
// it too; on every target, in both phases and through exec()'s cached plans.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "keel/host/host.hpp"
#include "keel/ops/executor_cache.hpp"
#include "keel/ops/kernels/dynamic_dispatch.hpp"
#include "keel/ops/launch.hpp"
#include "keel/ops/operators.hpp"
#include "reference.hpp"

#include "targets.hpp"

using namespace keel::ops;
using namespace keel_test;

namespace {

std::uint16_t half(float f) { return float_to_half_bits(f); }
std::uint16_t bf16(float f) { return float_to_bfloat16_bits(f); }

}  // namespace

TEST_CASE("promotion: an integer operand meeting a half tensor is rounded to the half type first",
          "[ops][promotion][add][addcmul]") {
  for (const kernel_table* k : keel_test::every_kernel_target()) {
    INFO("target " << k->target);
    {  // add(int32 {999}, bfloat16 {-1000}) -> bfloat16: 999 rounds to 1000, the sum is 0 (was -1)
      std::int32_t a = 999;
      std::uint16_t b = bf16(-1000.0f), out = 0xFFFF;
      add(*k, tensor(&a, dtype::int32, {1}), tensor(&b, dtype::bfloat16, {1}), 1.0f, tensor(&out, dtype::bfloat16, {1}));
      CHECK(bfloat16_bits_to_float(out) == 0.0f);
    }
    {  // add(int32 {2049}, float16 {-2048}) -> float16: 2049 rounds to 2048 (was 1)
      std::int32_t a = 2049;
      std::uint16_t b = half(-2048.0f), out = 0xFFFF;
      add(*k, tensor(&a, dtype::int32, {1}), tensor(&b, dtype::float16, {1}), 1.0f, tensor(&out, dtype::float16, {1}));
      CHECK(half_bits_to_float(out) == 0.0f);
    }
    {  // addcmul(int32 {999}, bfloat16 {1}, bfloat16 {-1000}) -> bfloat16 (was -1)
      std::int32_t s = 999;
      std::uint16_t t1 = bf16(1.0f), t2 = bf16(-1000.0f), out = 0xFFFF;
      addcmul(*k, tensor(&s, dtype::int32, {1}), tensor(&t1, dtype::bfloat16, {1}), tensor(&t2, dtype::bfloat16, {1}),
              1.0f, tensor(&out, dtype::bfloat16, {1}));
      CHECK(bfloat16_bits_to_float(out) == 0.0f);
    }
  }
}

TEST_CASE("promotion: a 0-dim float32 operand meeting a float16 tensor is a float16 value", "[ops][promotion][add]") {
  for (const kernel_table* k : keel_test::every_kernel_target()) {
    INFO("target " << k->target);
    // add(float16 {-1} x 300, 0-dim float32 1.0001) -> float16: 1.0001 is 1 in float16 (was 1.0002e-4)
    std::vector<std::uint16_t> a(300, half(-1.0f)), out(300, 0xFFFF);
    const float other = 1.0001f;
    add(*k, tensor(a.data(), dtype::float16, {300}), tensor(&other, dtype::float32, {}), 1.0f,
        tensor(out.data(), dtype::float16, {300}));
    std::size_t bad = 0;
    for (std::uint16_t h : out) bad += half_bits_to_float(h) != 0.0f;
    CHECK(bad == 0);
  }
}

TEST_CASE("promotion: a float16 result is rounded to float16 before it is written into a float32 out",
          "[ops][promotion][add][addcmul]") {
  for (const kernel_table* k : keel_test::every_kernel_target()) {
    INFO("target " << k->target);
    // 1 + 2^-12 is not a float16: PyTorch computes add in float16 and casts
    // the float16 result (1.0) to out's float32.
    std::vector<std::uint16_t> a(37, half(1.0f)), b(37, half(0.000244140625f));
    std::vector<float> out(37, -1.0f);
    add(*k, tensor(a.data(), dtype::float16, {37}), tensor(b.data(), dtype::float16, {37}), 1.0f,
        tensor(out.data(), dtype::float32, {37}));
    std::size_t bad = 0;
    for (float f : out) bad += f != 1.0f;
    CHECK(bad == 0);
    std::fill(out.begin(), out.end(), -1.0f);
    addcmul(*k, tensor(a.data(), dtype::float16, {37}), tensor(b.data(), dtype::float16, {37}),
            tensor(a.data(), dtype::float16, {37}), 1.0f, tensor(out.data(), dtype::float32, {37}));
    bad = 0;
    for (float f : out) bad += f != 1.0f;
    CHECK(bad == 0);
  }
}

TEST_CASE("promotion: add's alpha is converted to the common dtype, addcmul's value is not",
          "[ops][promotion][add][addcmul]") {
  for (const kernel_table* k : keel_test::every_kernel_target()) {
    INFO("target " << k->target);
    // bfloat16 add, alpha 1.0001: PyTorch's alpha.to<BFloat16>() is 1, so
    // 1 + 1 * 256 = 257 rounds (a tie, to even) to 256; an unrounded alpha
    // gives 257.0256, which rounds to 258 (bfloat16 steps by 2 there).
    std::vector<std::uint16_t> a(40, bf16(1.0f)), b(40, bf16(256.0f)), out(40, 0);
    add(*k, tensor(a.data(), dtype::bfloat16, {40}), tensor(b.data(), dtype::bfloat16, {40}), 1.0001,
        tensor(out.data(), dtype::bfloat16, {40}));
    std::size_t bad = 0;
    for (std::uint16_t h : out) bad += bfloat16_bits_to_float(h) != 256.0f;
    CHECK(bad == 0);
    // bfloat16 addcmul, value 1.0001 stays float32 (ATen's value.to<float>()):
    // 1 + 1.0001 * 1 * 256 = 257.0256 rounds to 258.
    std::vector<std::uint16_t> one(40, bf16(1.0f));
    addcmul(*k, tensor(a.data(), dtype::bfloat16, {40}), tensor(one.data(), dtype::bfloat16, {40}),
            tensor(b.data(), dtype::bfloat16, {40}), 1.0001, tensor(out.data(), dtype::bfloat16, {40}));
    bad = 0;
    for (std::uint16_t h : out) bad += bfloat16_bits_to_float(h) != 258.0f;
    CHECK(bad == 0);
  }
}

TEST_CASE("promotion: exec() plans from the cache promote as phase one does, the scalar bound per call",
          "[ops][promotion][cache]") {
  executor_cache<> cache(dynamic_kernels(), 8);
  keel::host::stream stream{keel::host::default_device()};
  std::int32_t a = 2049;
  std::uint16_t b = half(-2048.0f);
  for (int round = 0; round < 3; ++round) {
    std::vector<std::uint16_t> out(1, 0xFFFF);
    // alpha 1, then 1.0001 (1 in float16), then 2: 2049 -> 2048 in float16 first.
    const scalar alpha = round == 0 ? scalar(1.0f) : round == 1 ? scalar(1.0001) : scalar(2.0f);
    exec(cache, stream, add_op{}, tensor(&a, dtype::int32, {1}), tensor(&b, dtype::float16, {1}), alpha,
         tensor(out.data(), dtype::float16, {1}));
    stream.synchronize();
    CHECK(half_bits_to_float(out[0]) == (round == 2 ? -2048.0f : 0.0f));
  }
  CHECK(cache.misses() == 1);
}
