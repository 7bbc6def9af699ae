// SPDX-License-Identifier: Apache-2.0
// dtypes: PyTorch's promotion and casting tables, and the scalar half
// conversions checked exhaustively against independent references.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "keel/ops/dtype.hpp"
#include "keel/ops/scalar.hpp"

using namespace keel::ops;

namespace {

float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// float32 -> float16 by exact arithmetic in double: the nearest of the two
// neighbouring halves, ties to the even one. Independent of the bit trick.
std::uint16_t half_by_search(float f) {
  if (std::isnan(f)) return 0x7E00;
  const bool neg = std::signbit(f);
  const double a = std::fabs(static_cast<double>(f));
  std::uint16_t lo = 0, hi = 0x7C00;  // binary search over the ordered positive halves
  while (hi - lo > 1) {
    const auto mid = static_cast<std::uint16_t>((lo + hi) / 2);
    if (static_cast<double>(half_bits_to_float(mid)) <= a) lo = mid; else hi = mid;
  }
  // lo <= a < hi (hi may be infinity: compare against the rounding boundary 65520)
  std::uint16_t r;
  const double vlo = half_bits_to_float(lo);
  const double vhi = hi == 0x7C00 ? 65536.0 : static_cast<double>(half_bits_to_float(hi));
  if (a == vlo) r = lo;
  else if (a - vlo < vhi - a) r = lo;
  else if (a - vlo > vhi - a) r = hi;
  else r = (lo & 1) ? hi : lo;
  if (std::isinf(f)) r = 0x7C00;
  return static_cast<std::uint16_t>(r | (neg ? 0x8000 : 0));
}

}  // namespace

TEST_CASE("dtype: promote_types follows torch.promote_types", "[ops][dtype]") {
  using d = dtype;
  CHECK(promote_types(d::float16, d::bfloat16) == d::float32);
  CHECK(promote_types(d::float16, d::float32) == d::float32);
  CHECK(promote_types(d::int64, d::float16) == d::float16);
  CHECK(promote_types(d::boolean, d::int8) == d::int8);
  CHECK(promote_types(d::uint8, d::int32) == d::int32);
  CHECK(promote_types(d::int32, d::int64) == d::int64);
  CHECK(promote_types(d::uint8, d::boolean) == d::uint8);
  CHECK_FALSE(promote_types(d::uint8, d::int8).has_value());  // torch: int16
  for (int a = 0; a < dtype_count; ++a) {
    for (int b = 0; b < dtype_count; ++b) {
      CHECK(promote_types(static_cast<d>(a), static_cast<d>(b)) == promote_types(static_cast<d>(b), static_cast<d>(a)));
    }
  }
}

TEST_CASE("dtype: can_cast follows torch.can_cast", "[ops][dtype]") {
  CHECK(can_cast(dtype::float32, dtype::float16));
  CHECK(can_cast(dtype::int64, dtype::float16));
  CHECK(can_cast(dtype::int64, dtype::int8));
  CHECK(can_cast(dtype::boolean, dtype::boolean));
  CHECK_FALSE(can_cast(dtype::float16, dtype::int64));
  CHECK_FALSE(can_cast(dtype::int32, dtype::boolean));
  CHECK_FALSE(can_cast(dtype::float32, dtype::boolean));
}

TEST_CASE("dtype: float16 <-> float32 round trips every half exactly", "[ops][dtype]") {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = half_bits_to_float(static_cast<std::uint16_t>(h));
    const bool nan = ((h >> 10) & 0x1F) == 0x1F && (h & 0x3FF) != 0;
    if (nan) {
      REQUIRE(std::isnan(f));
      REQUIRE((float_to_half_bits(f) & 0x7C00) == 0x7C00);
      REQUIRE((float_to_half_bits(f) & 0x3FF) != 0);
    } else {
      REQUIRE(float_to_half_bits(f) == h);
    }
  }
}

TEST_CASE("dtype: float32 -> float16 rounds to nearest even on a sweep of float bit patterns", "[ops][dtype]") {
  // Every 4099th pattern (prime step: every exponent, mixed mantissas) plus
  // every midpoint between adjacent halves.
  for (std::uint64_t u = 0; u <= 0xFFFFFFFFull; u += 4099) {
    const float f = float_of(static_cast<std::uint32_t>(u));
    if (std::isnan(f)) continue;
    INFO("bits " << u);
    REQUIRE(float_to_half_bits(f) == half_by_search(f));
  }
  for (std::uint32_t h = 0; h < 0x7BFF; ++h) {
    const double mid = (static_cast<double>(half_bits_to_float(static_cast<std::uint16_t>(h))) +
                        half_bits_to_float(static_cast<std::uint16_t>(h + 1))) / 2;
    const auto f = static_cast<float>(mid);  // exact: a half midpoint has 12 significant bits
    REQUIRE(float_to_half_bits(f) == ((h & 1) ? h + 1 : h));
    REQUIRE(float_to_half_bits(-f) == (((h & 1) ? h + 1 : h) | 0x8000));
  }
#ifdef __FLT16_MANT_DIG__
  // The compiler's own conversion, a third opinion where it exists.
  for (std::uint64_t u = 0; u <= 0xFFFFFFFFull; u += 65537) {
    const float f = float_of(static_cast<std::uint32_t>(u));
    if (std::isnan(f)) continue;
    const _Float16 h = static_cast<_Float16>(f);
    std::uint16_t hb;
    std::memcpy(&hb, &h, 2);
    REQUIRE(float_to_half_bits(f) == hb);
  }
#endif
  CHECK(float_to_half_bits(65519.99f) == 0x7BFF);
  CHECK(float_to_half_bits(65520.0f) == 0x7C00);
  CHECK(float_to_half_bits(-std::numeric_limits<float>::infinity()) == 0xFC00);
  CHECK(float_to_half_bits(1e-40f) == 0x0000);  // float denormal: far below half's range
}

TEST_CASE("dtype: float32 -> bfloat16 rounds to nearest even, NaN stays NaN", "[ops][dtype]") {
  for (std::uint64_t u = 0; u <= 0xFFFFFFFFull; u += 4099) {
    const auto x = static_cast<std::uint32_t>(u);
    const float f = float_of(x);
    const std::uint16_t b = float_to_bfloat16_bits(f);
    if (std::isnan(f)) {
      REQUIRE(std::isnan(bfloat16_bits_to_float(b)));
      continue;
    }
    // Independent: compare distances to the two neighbours in double.
    const std::uint16_t lo = static_cast<std::uint16_t>(x >> 16);
    const double vlo = bfloat16_bits_to_float(lo);
    const auto up = static_cast<std::uint16_t>(lo + 1);
    // Past the largest finite value the next step is 2^128, where RNE overflows to infinity.
    const double vhi = (up & 0x7FFF) == 0x7F80 ? std::copysign(std::ldexp(1.0, 128), static_cast<double>(f))
                                                : static_cast<double>(bfloat16_bits_to_float(up));
    const double v = f;
    std::uint16_t want;
    if (v == vlo) want = lo;
    else if (std::fabs(v - vlo) < std::fabs(vhi - v)) want = lo;
    else if (std::fabs(v - vlo) > std::fabs(vhi - v)) want = static_cast<std::uint16_t>(lo + 1);
    else want = (lo & 1) ? static_cast<std::uint16_t>(lo + 1) : lo;
    INFO("bits " << x);
    REQUIRE(b == want);
  }
  CHECK(float_to_bfloat16_bits(std::numeric_limits<float>::infinity()) == 0x7F80);
}

TEST_CASE("dtype: float to integer truncates, saturates, maps NaN to 0, uint8 wraps via int64", "[ops][dtype]") {
  using detail::convert;
  CHECK(convert<std::int32_t>(2.9f) == 2);
  CHECK(convert<std::int32_t>(-2.9f) == -2);
  CHECK(convert<std::int32_t>(3e9f) == std::numeric_limits<std::int32_t>::max());
  CHECK(convert<std::int32_t>(-3e9f) == std::numeric_limits<std::int32_t>::min());
  CHECK(convert<std::int64_t>(std::nanf("")) == 0);
  CHECK(convert<std::int8_t>(200.0f) == 127);
  CHECK(convert<std::uint8_t>(-1.0f) == 255);   // torch: tensor([-1.]).to(torch.uint8) == 255
  CHECK(convert<std::uint8_t>(300.0f) == 44);
  CHECK(convert<bool>(std::nanf("")));
  CHECK_FALSE(convert<bool>(-0.0f));
  CHECK(convert<bool>(float16{0x8001}));
  CHECK(convert<std::int8_t>(std::int32_t{200}) == -56);  // integers wrap
  CHECK(convert<std::uint8_t>(std::int64_t{-1}) == 255);
  CHECK(convert<float>(true) == 1.0f);
  CHECK(convert<float16>(std::int64_t{65536}).bits == 0x7C00);
}

TEST_CASE("scalar: value and dtype", "[ops][scalar]") {
  const scalar f = 2.5;
  CHECK(f.type() == dtype::float32);
  CHECK(f.to_float() == 2.5f);
  CHECK(f.to_integer<std::int32_t>() == 2);
  const scalar i = std::int64_t{1} << 40;
  CHECK(i.type() == dtype::int64);
  CHECK(i.to_integer<std::int32_t>() == 0);  // wraps
  CHECK(scalar(true).type() == dtype::boolean);
  CHECK(scalar(7).type() == dtype::int32);
}
