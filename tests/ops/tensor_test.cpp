// SPDX-License-Identifier: Apache-2.0
// tensor views: construction rules, contiguity, overlap detection, result_type.
#include <catch2/catch.hpp>

#include "keel/ops/operators.hpp"
#include "keel/ops/tensor.hpp"

using namespace keel::ops;

TEST_CASE("tensor: a contiguous view computes row-major strides", "[ops][tensor]") {
  float buf[24] = {};
  const tensor t(buf, dtype::float32, {2, 3, 4});
  CHECK(t.dim() == 3);
  CHECK(t.stride(0) == 12);
  CHECK(t.stride(1) == 4);
  CHECK(t.stride(2) == 1);
  CHECK(t.numel() == 24);
  CHECK(t.is_contiguous());
  CHECK(t.first() == reinterpret_cast<char*>(buf));
  const tensor col(buf, dtype::float32, {2}, {3}, 1);
  CHECK_FALSE(col.is_contiguous());
  CHECK(col.first() == reinterpret_cast<char*>(buf + 1));
  const tensor scalar_view(buf, dtype::float32, {});
  CHECK(scalar_view.numel() == 1);
  CHECK(scalar_view.dim() == 0);
}

TEST_CASE("tensor: bad shapes are invalid_parameter errors", "[ops][tensor]") {
  float buf[4] = {};
  auto code_of = [](auto&& f) {
    try {
      f();
    } catch (const keel::error& e) {
      return e.code();
    }
    return std::error_code{};
  };
  CHECK(code_of([&] { tensor(buf, dtype::float32, {2, -1}); }) == keel::errc::invalid_parameter);
  CHECK(code_of([&] { tensor(buf, dtype::float32, {2, 2}, {2, -1}); }) == keel::errc::invalid_parameter);
  CHECK(code_of([&] { tensor(buf, dtype::float32, {2, 2}, {2}); }) == keel::errc::invalid_parameter);
  CHECK(code_of([&] { tensor(buf, dtype::float32, {1, 1, 1, 1, 1, 1, 1, 1, 1}); }) == keel::errc::invalid_parameter);
  CHECK(code_of([&] { tensor(buf, dtype::float32, {2}, {1}, -1); }) == keel::errc::invalid_parameter);
  CHECK(code_of([&] { tensor(buf, static_cast<dtype>(42), {2}); }) == keel::errc::invalid_parameter);
}

TEST_CASE("tensor: overlap detection", "[ops][tensor]") {
  float buf[64] = {};
  const tensor all(buf, dtype::float32, {8, 8});
  const tensor top(buf, dtype::float32, {4, 8});
  const tensor bottom(buf + 32, dtype::float32, {4, 8});
  const tensor shifted(buf, dtype::float32, {4, 8}, {8, 1}, 1);
  CHECK(detail::may_overlap(all, top));
  CHECK_FALSE(detail::may_overlap(top, bottom));
  CHECK(detail::may_overlap(top, shifted));
  CHECK(same_view(top, tensor(buf, dtype::float32, {4, 8})));
  CHECK_FALSE(same_view(top, shifted));
  CHECK_FALSE(same_view(top, tensor(buf, dtype::int32, {4, 8})));
  // Internal overlap: a zero stride, or strides that alias.
  CHECK(detail::has_internal_overlap(tensor(buf, dtype::float32, {4, 8}, {0, 1})));
  CHECK(detail::has_internal_overlap(tensor(buf, dtype::float32, {4, 8}, {4, 1})));
  CHECK_FALSE(detail::has_internal_overlap(tensor(buf, dtype::float32, {8, 4}, {1, 8})));  // transposed
  CHECK_FALSE(detail::has_internal_overlap(tensor(buf, dtype::float32, {1, 8}, {0, 1})));  // size-1 stride is free
}

TEST_CASE("result_type: dimensioned tensors decide, zero-dim ones only across categories", "[ops][tensor]") {
  float f = 0;
  const tensor i32(&f, dtype::int32, {4});
  const tensor f16(&f, dtype::float16, {4});
  const tensor i64_0d(&f, dtype::int64, {});
  const tensor f32_0d(&f, dtype::float32, {});
  const tensor b(&f, dtype::boolean, {4});
  CHECK(result_type({&i32, &i64_0d}) == dtype::int32);     // torch: int32
  CHECK(result_type({&i32, &f32_0d}) == dtype::float32);   // higher category wins
  CHECK(result_type({&f16, &f32_0d}) == dtype::float16);   // same category: dimensioned wins
  CHECK(result_type({&b, &i64_0d}) == dtype::int64);
  CHECK(result_type({&i32, &f16}) == dtype::float16);
  CHECK(result_type({&f32_0d, &i64_0d}) == dtype::float32);
}

TEST_CASE("result_type: an int16 on the way (int8 with uint8) is kept until a wider or floating type wins",
          "[ops][tensor]") {
  float f = 0;
  const tensor i8(&f, dtype::int8, {4});
  const tensor u8(&f, dtype::uint8, {4});
  const tensor i8_0d(&f, dtype::int8, {});
  const tensor u8_0d(&f, dtype::uint8, {});
  const tensor f32_0d(&f, dtype::float32, {});
  const tensor bf16(&f, dtype::bfloat16, {4});
  const tensor i32(&f, dtype::int32, {4});
  const tensor b(&f, dtype::boolean, {4});
  CHECK_FALSE(result_type({&i8, &u8}).has_value());                    // torch: int16
  CHECK(result_type({&i8, &u8, &f32_0d}) == dtype::float32);           // torch: float32
  CHECK(result_type({&i8, &u8, &bf16}) == dtype::bfloat16);            // torch: bfloat16
  CHECK(result_type({&i8, &u8, &i32}) == dtype::int32);                // torch: int32
  CHECK(result_type({&i32, &i8_0d, &u8_0d}) == dtype::int32);          // zero-dim int16 loses to int32
  CHECK_FALSE(result_type({&b, &i8_0d, &u8_0d}).has_value());          // bool with zero-dim int16: int16
  CHECK_FALSE(result_type({}).has_value());
}
