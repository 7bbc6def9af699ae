// SPDX-License-Identifier: Apache-2.0
// Every operator on every SIMD target this CPU supports, against scalar
// references: random data with special values, odd sizes, non-contiguous,
// offset and broadcast views, mixed dtypes, in place.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "keel/ops/kernels/dynamic_dispatch.hpp"
#include "keel/ops/operators.hpp"
#include "reference.hpp"

#include "targets.hpp"

using namespace keel::ops;
using namespace keel_test;

namespace {

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? "," : "") << s[i];
  os << ']';
  return os.str();
}

// Compares out with expected(idx, bytes) for every element; returns the
// number of mismatches and describes the first.
template <class Expected>
std::size_t compare_out(const tensor& out, Expected&& expected, std::string& first) {
  std::size_t bad = 0;
  for_each_index(out, [&](const std::int64_t* idx) {
    unsigned char want[8] = {};
    unsigned char alt[8] = {};
    const bool has_alt = expected(idx, want, alt);
    const char* got = element(out, idx, out.dim());
    if (same_element(out.type(), got, want) || (has_alt && same_element(out.type(), got, alt))) return;
    if (bad++ == 0) {
      std::ostringstream os;
      os << "index (";
      for (std::size_t i = 0; i < out.dim(); ++i) os << (i ? "," : "") << idx[i];
      os << ") got " << read_float(out, got) << " want " << read_float(out, reinterpret_cast<const char*>(want));
      first = os.str();
    }
  });
  return bad;
}

struct add_case {
  std::vector<std::int64_t> self_shape, other_shape;
  dtype self_type, other_type, out_type;
  layout self_layout, other_layout, out_layout;
  scalar alpha;
};

}  // namespace

TEST_CASE("kernels: every compiled target this CPU supports is tested", "[ops][kernels]") {
  const auto targets = keel_test::every_kernel_target();
  REQUIRE(targets.size() == hwy::SupportedAndGeneratedTargets().size());
  std::string names;
  for (const kernel_table* k : targets) names += std::string(k->target) + " ";
  INFO("targets: " << names);
  CHECK(std::string(dynamic_kernels().target) == targets.front()->target);  // the best is first
}

TEST_CASE("add: every target matches the scalar reference", "[ops][kernels][add]") {
  using d = dtype;
  const layout C = layout::contiguous, T = layout::transposed, S = layout::strided, O = layout::offset;
  const std::vector<add_case> cases = {
      {{1}, {1}, d::float32, d::float32, d::float32, C, C, C, 1.0f},
      {{7}, {7}, d::float32, d::float32, d::float32, C, C, C, 0.5f},
      {{1017}, {1017}, d::float32, d::float32, d::float32, O, S, C, -3.25f},
      {{1017}, {}, d::float32, d::float32, d::float32, C, C, C, 2.0f},  // zero-dim other broadcasts
      {{5, 33}, {33}, d::float32, d::float32, d::float32, C, C, C, 1.5f},
      {{5, 33}, {5, 1}, d::float32, d::float32, d::float32, T, C, C, 1.0f},
      {{3, 5, 7}, {3, 5, 7}, d::float32, d::float32, d::float32, T, S, T, 0.25f},
      {{3, 1, 7}, {5, 1}, d::float32, d::float32, d::float32, C, C, S, 1.0f},  // both broadcast
      {{257}, {257}, d::float16, d::float16, d::float16, C, C, C, 1.0f},
      {{9, 31}, {31}, d::bfloat16, d::bfloat16, d::bfloat16, S, C, C, -0.5f},
      {{300}, {300}, d::float16, d::float32, d::float32, C, C, C, 2.0f},
      {{300}, {300}, d::bfloat16, d::float16, d::float32, C, O, C, 1.0f},
      {{300}, {300}, d::float32, d::float32, d::float16, C, C, C, 1.0f},   // round once into out
      {{4, 77}, {77}, d::int32, d::int32, d::int32, C, C, C, std::int64_t{1}},
      {{4, 77}, {4, 77}, d::int32, d::int32, d::int32, T, C, C, std::int64_t{-3}},
      {{123}, {123}, d::int64, d::int64, d::int64, C, C, C, std::int64_t{1}},
      {{123}, {123}, d::int64, d::int64, d::int64, S, C, C, std::int64_t{7}},
      {{99}, {99}, d::int32, d::int64, d::int64, C, C, C, std::int64_t{2}},
      {{99}, {99}, d::uint8, d::int32, d::int32, C, C, C, std::int64_t{1}},
      {{99}, {99}, d::boolean, d::int32, d::float32, C, C, C, std::int64_t{1}},  // int32 result into float32
      {{2, 50}, {}, d::int8, d::float16, d::float16, C, C, C, 1.0f},  // int tensor with half: half
  };
  std::mt19937 rng(5);
  for (const kernel_table* k : keel_test::every_kernel_target()) {
    for (std::size_t ci = 0; ci < cases.size(); ++ci) {
      const add_case& c = cases[ci];
      auto self = make_tensor(c.self_type, c.self_shape, c.self_layout);
      auto other = make_tensor(c.other_type, c.other_shape, c.other_layout);
      fill_random(self.view, rng);
      fill_random(other.view, rng);
      std::vector<std::int64_t> out_shape = c.self_shape.size() >= c.other_shape.size() ? c.self_shape : c.other_shape;
      {  // broadcast shape
        const std::size_t n = out_shape.size();
        for (std::size_t i = 0; i < c.self_shape.size(); ++i) {
          out_shape[n - c.self_shape.size() + i] = std::max(out_shape[n - c.self_shape.size() + i], c.self_shape[i]);
        }
        for (std::size_t i = 0; i < c.other_shape.size(); ++i) {
          out_shape[n - c.other_shape.size() + i] = std::max(out_shape[n - c.other_shape.size() + i], c.other_shape[i]);
        }
      }
      auto out = make_tensor(c.out_type, out_shape, c.out_layout);
      add(*k, self.view, other.view, c.alpha, out.view);
      const dtype compute = *result_type({&self.view, &other.view});
      std::string first;
      const std::size_t bad = compare_out(out.view, [&](const std::int64_t* idx, unsigned char* want, unsigned char*) {
        const char* a = element(self.view, idx, out_shape.size());
        const char* b = element(other.view, idx, out_shape.size());
        if (is_floating(compute)) {
          // Operands and alpha converted to the common dtype first, then
          // computed in float32, rounded to the common dtype, then into out's.
          const float x = read_as(compute, self.view, a), y = read_as(compute, other.view, b);
          const float al = round_to(compute, c.alpha.to_float());
          auto finish = [&](float r, unsigned char* dst) {
            unsigned char tmp[8];
            write_value(compute, tmp, r);
            float back = 0;
            detail::visit_dtype(compute, [&](auto tag) {
              decltype(tag) v;
              std::memcpy(&v, tmp, sizeof v);
              back = detail::convert<float>(v);
            });
            write_value(out.view.type(), dst, back);
          };
          finish(target_mul_add(k->fused_multiply_add, al, y, x), want);
          return false;
        }
        const auto x = static_cast<std::uint64_t>(read_int(self.view, a));
        const auto y = static_cast<std::uint64_t>(read_int(other.view, b));
        const std::uint64_t r = x + y * static_cast<std::uint64_t>(c.alpha.to_integer<std::int64_t>());
        const std::int64_t in_compute = compute == dtype::int32 ? detail::wrap_int<std::int32_t>(r)
                                                                : static_cast<std::int64_t>(r);
        if (compute == dtype::int32 && is_floating(out.view.type())) {
          write_value(out.view.type(), want, static_cast<std::int32_t>(in_compute));
        } else {
          write_value(out.view.type(), want, in_compute);
        }
        return false;
      }, first);
      INFO("target " << k->target << " case " << ci << " self " << dtype_name(c.self_type) << shape_text(c.self_shape)
                     << " other " << dtype_name(c.other_type) << shape_text(c.other_shape) << " out "
                     << dtype_name(c.out_type) << ": " << first);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("add: in place on self and on other", "[ops][kernels][add]") {
  std::mt19937 rng(11);
  for (const kernel_table* k : keel_test::every_kernel_target()) {
    for (int which = 0; which < 2; ++which) {
      auto a = make_tensor(dtype::float16, {7, 45}, layout::strided);
      auto b = make_tensor(dtype::float16, {7, 45}, layout::transposed);
      fill_random(a.view, rng);
      fill_random(b.view, rng);
      auto expect = make_tensor(dtype::float16, {7, 45});
      add(*k, a.view, b.view, 0.75f, expect.view);
      const tensor& target = which == 0 ? a.view : b.view;
      add(*k, a.view, b.view, 0.75f, target);
      std::size_t bad = 0;
      for_each_index(target, [&](const std::int64_t* idx) {
        bad += !same_element(dtype::float16, element(target, idx, 2), element(expect.view, idx, 2));
      });
      INFO("target " << k->target << (which == 0 ? " out=self" : " out=other"));
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("mul: every target matches the scalar reference, broadcasting and promoting as torch.mul",
          "[ops][kernels][mul]") {
  using d = dtype;
  const layout C = layout::contiguous, T = layout::transposed, S = layout::strided, O = layout::offset;
  struct mcase {
    std::vector<std::int64_t> self_shape, other_shape, out_shape;
    dtype self_type, other_type, out_type;
    layout self_layout, other_layout, out_layout;
  };
  const std::vector<mcase> cases = {
      {{1}, {1}, {1}, d::float32, d::float32, d::float32, C, C, C},
      {{7}, {7}, {7}, d::float32, d::float32, d::float32, C, C, C},
      {{1017}, {1017}, {1017}, d::float32, d::float32, d::float32, O, S, C},
      {{1017}, {}, {1017}, d::float32, d::float32, d::float32, C, C, C},  // zero-dim other broadcasts
      {{5, 33}, {33}, {5, 33}, d::float32, d::float32, d::float32, C, C, C},
      {{5, 33}, {5, 1}, {5, 33}, d::float32, d::float32, d::float32, T, C, C},
      {{3, 1, 7}, {5, 1}, {3, 5, 7}, d::float32, d::float32, d::float32, C, C, S},  // both broadcast
      {{257}, {257}, {257}, d::float16, d::float16, d::float16, C, C, C},
      {{9, 31}, {31}, {9, 31}, d::bfloat16, d::bfloat16, d::bfloat16, S, C, C},
      {{300}, {300}, {300}, d::float16, d::float32, d::float32, C, C, C},
      {{300}, {300}, {300}, d::bfloat16, d::float16, d::float32, C, O, C},
      {{300}, {300}, {300}, d::float32, d::float32, d::float16, C, C, C},  // round once into out
      {{4, 77}, {77}, {4, 77}, d::int32, d::int32, d::int32, C, C, C},
      {{4, 77}, {4, 77}, {4, 77}, d::int32, d::int32, d::int32, T, C, C},
      {{123}, {123}, {123}, d::int64, d::int64, d::int64, S, C, C},
      {{99}, {99}, {99}, d::int32, d::int64, d::int64, C, C, C},
      {{99}, {99}, {99}, d::boolean, d::int32, d::float32, C, C, C},  // int32 result into float32
      {{2, 50}, {}, {2, 50}, d::int8, d::float16, d::float16, C, C, C},  // int tensor with half: half
  };
  std::mt19937 rng(7);
  for (const kernel_table* k : keel_test::every_kernel_target()) {
    for (std::size_t ci = 0; ci < cases.size(); ++ci) {
      const mcase& c = cases[ci];
      auto self = make_tensor(c.self_type, c.self_shape, c.self_layout);
      auto other = make_tensor(c.other_type, c.other_shape, c.other_layout);
      fill_random(self.view, rng);
      fill_random(other.view, rng);
      auto out = make_tensor(c.out_type, c.out_shape, c.out_layout);
      mul(*k, self.view, other.view, out.view);
      const dtype compute = *result_type({&self.view, &other.view});
      std::string first;
      const std::size_t bad = compare_out(out.view, [&](const std::int64_t* idx, unsigned char* want, unsigned char*) {
        const char* a = element(self.view, idx, c.out_shape.size());
        const char* b = element(other.view, idx, c.out_shape.size());
        if (is_floating(compute)) {
          // Operands converted to the common dtype, multiplied in float32
          // (one rounding), rounded to the common dtype, then into out's.
          const float x = read_as(compute, self.view, a), y = read_as(compute, other.view, b);
          unsigned char tmp[8];
          write_value(compute, tmp, x * y);
          float back = 0;
          detail::visit_dtype(compute, [&](auto tag) {
            decltype(tag) v;
            std::memcpy(&v, tmp, sizeof v);
            back = detail::convert<float>(v);
          });
          write_value(out.view.type(), want, back);
          return false;
        }
        const auto x = static_cast<std::uint64_t>(read_int(self.view, a));
        const auto y = static_cast<std::uint64_t>(read_int(other.view, b));
        const std::uint64_t r = x * y;  // wraps, as the kernels and PyTorch do
        const std::int64_t in_compute = compute == dtype::int32 ? detail::wrap_int<std::int32_t>(r)
                                                                : static_cast<std::int64_t>(r);
        if (compute == dtype::int32 && is_floating(out.view.type())) {
          write_value(out.view.type(), want, static_cast<std::int32_t>(in_compute));
        } else {
          write_value(out.view.type(), want, in_compute);
        }
        return false;
      }, first);
      INFO("target " << k->target << " case " << ci << " self " << dtype_name(c.self_type) << shape_text(c.self_shape)
                     << " other " << dtype_name(c.other_type) << shape_text(c.other_shape) << " out "
                     << dtype_name(c.out_type) << ": " << first);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("mul: in place on self and on other, and integer products wrap", "[ops][kernels][mul]") {
  std::mt19937 rng(13);
  for (const kernel_table* k : keel_test::every_kernel_target()) {
    for (int which = 0; which < 2; ++which) {
      auto a = make_tensor(dtype::bfloat16, {7, 45}, layout::strided);
      auto b = make_tensor(dtype::bfloat16, {7, 45}, layout::transposed);
      fill_random(a.view, rng);
      fill_random(b.view, rng);
      auto expect = make_tensor(dtype::bfloat16, {7, 45});
      mul(*k, a.view, b.view, expect.view);
      const tensor& target = which == 0 ? a.view : b.view;
      mul(*k, a.view, b.view, target);
      std::size_t bad = 0;
      for_each_index(target, [&](const std::int64_t* idx) {
        bad += !same_element(dtype::bfloat16, element(target, idx, 2), element(expect.view, idx, 2));
      });
      INFO("target " << k->target << (which == 0 ? " out=self" : " out=other"));
      CHECK(bad == 0);
    }
    std::int32_t big[2] = {std::numeric_limits<std::int32_t>::max(), -7};
    std::int32_t prod[2] = {};
    mul(*k, tensor(big, dtype::int32, {2}), tensor(big, dtype::int32, {2}), tensor(prod, dtype::int32, {2}));
    CHECK(prod[0] == 1);  // (2^31 - 1)^2 mod 2^32
    CHECK(prod[1] == 49);
    std::int64_t huge[1] = {std::numeric_limits<std::int64_t>::min()}, minus_one[1] = {-1}, p64[1] = {};
    mul(*k, tensor(huge, dtype::int64, {1}), tensor(minus_one, dtype::int64, {1}), tensor(p64, dtype::int64, {1}));
    CHECK(p64[0] == std::numeric_limits<std::int64_t>::min());
  }
}

TEST_CASE("addcmul: every target matches the scalar reference", "[ops][kernels][addcmul]") {
  using d = dtype;
  struct acase {
    std::vector<std::int64_t> s, t1, t2;
    dtype ts, t1t, t2t, to;
    layout ls, l1, l2, lo;
    float value;
  };
  const layout C = layout::contiguous, T = layout::transposed, S = layout::strided, O = layout::offset;
  const std::vector<acase> cases = {
      {{1}, {1}, {1}, d::float32, d::float32, d::float32, d::float32, C, C, C, C, 1.0f},
      {{1023}, {1023}, {1023}, d::float32, d::float32, d::float32, d::float32, C, S, O, C, 0.5f},
      {{1023}, {}, {1023}, d::float32, d::float32, d::float32, d::float32, C, C, C, C, -2.0f},
      {{6, 35}, {35}, {6, 1}, d::float32, d::float32, d::float32, d::float32, T, C, C, C, 3.0f},
      {{4, 5, 6}, {4, 5, 6}, {4, 5, 6}, d::float32, d::float32, d::float32, d::float32, T, T, S, T, 1.0f},
      {{301}, {301}, {301}, d::float16, d::float16, d::float16, d::float16, C, C, C, C, 0.1f},
      {{301}, {301}, {301}, d::bfloat16, d::bfloat16, d::bfloat16, d::bfloat16, C, S, C, O, 0.1f},
      {{301}, {301}, {301}, d::float16, d::float32, d::bfloat16, d::float32, C, C, C, C, 1.0f},
      {{301}, {301}, {301}, d::int32, d::float16, d::float16, d::float16, C, C, C, C, 2.0f},
  };
  std::mt19937 rng(7);
  for (const kernel_table* k : keel_test::every_kernel_target()) {
    for (std::size_t ci = 0; ci < cases.size(); ++ci) {
      const acase& c = cases[ci];
      auto s = make_tensor(c.ts, c.s, c.ls);
      auto t1 = make_tensor(c.t1t, c.t1, c.l1);
      auto t2 = make_tensor(c.t2t, c.t2, c.l2);
      fill_random(s.view, rng);
      fill_random(t1.view, rng);
      fill_random(t2.view, rng);
      std::vector<std::int64_t> shape = c.s;
      for (const auto* sh : {&c.t1, &c.t2}) {
        if (sh->size() > shape.size()) shape.insert(shape.begin(), sh->size() - shape.size(), 1);
        for (std::size_t i = 0; i < sh->size(); ++i) {
          auto& o = shape[shape.size() - sh->size() + i];
          o = std::max(o, (*sh)[i]);
        }
      }
      auto out = make_tensor(c.to, shape, c.lo);
      addcmul(*k, s.view, t1.view, t2.view, c.value, out.view);
      const dtype compute = *result_type({&s.view, &t1.view, &t2.view});
      std::string first;
      const std::size_t bad = compare_out(out.view, [&](const std::int64_t* idx, unsigned char* want, unsigned char*) {
        // Operands in the common dtype; (value * t1) rounded, then fused
        // with t2 and self where the target has FMA.
        const float x = read_as(compute, s.view, element(s.view, idx, shape.size()));
        const float y = read_as(compute, t1.view, element(t1.view, idx, shape.size()));
        const float z = read_as(compute, t2.view, element(t2.view, idx, shape.size()));
        const float prod = c.value * y;
        const float r = target_mul_add(k->fused_multiply_add, prod, z, x);
        unsigned char tmp[8];
        write_value(compute, tmp, r);
        write_value(out.view.type(), want, read_float(tensor(tmp, compute, {}), reinterpret_cast<const char*>(tmp)));
        return false;
      }, first);
      INFO("target " << k->target << " case " << ci << ": " << first);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("cast: every dtype pair on every target matches the scalar conversion", "[ops][kernels][cast]") {
  std::mt19937 rng(3);
  for (const kernel_table* k : keel_test::every_kernel_target()) {
    for (int from = 0; from < dtype_count; ++from) {
      for (int to = 0; to < dtype_count; ++to) {
        for (const auto& [shape, in_layout, out_layout] :
             {std::tuple{std::vector<std::int64_t>{1}, layout::contiguous, layout::contiguous},
              std::tuple{std::vector<std::int64_t>{1001}, layout::contiguous, layout::contiguous},
              std::tuple{std::vector<std::int64_t>{13, 37}, layout::strided, layout::transposed}}) {
          auto in = make_tensor(static_cast<dtype>(from), shape, in_layout);
          auto out = make_tensor(static_cast<dtype>(to), shape, out_layout);
          fill_random(in.view, rng);
          cast(*k, in.view, out.view);
          std::string first;
          const std::size_t bad = compare_out(out.view, [&](const std::int64_t* idx, unsigned char* want, unsigned char*) {
            const char* p = element(in.view, idx, in.view.dim());
            detail::strided_convert(want, out.view.type(), 1, p, in.view.type(), 1, 1);
            return false;
          }, first);
          INFO("target " << k->target << " " << dtype_name(in.view.type()) << " -> " << dtype_name(out.view.type())
                         << " " << shape_text(shape) << ": " << first);
          CHECK(bad == 0);
        }
      }
    }
  }
}

TEST_CASE("cast: float16 and bfloat16 kernels agree with the exact scalar conversion on every float pattern class",
          "[ops][kernels][cast]") {
  // A sweep through the SIMD paths: every 4093rd pattern (prime: all
  // exponents, mixed mantissas), NaNs and infinities included.
  std::vector<float> in;
  for (std::uint64_t u = 0; u <= 0xFFFFFFFFull; u += 4093) {
    const auto x = static_cast<std::uint32_t>(u);
    float f;
    std::memcpy(&f, &x, 4);
    in.push_back(f);
  }
  std::vector<std::uint16_t> h(in.size()), want_h(in.size()), b(in.size()), want_b(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    want_h[i] = float_to_half_bits(in[i]);
    want_b[i] = float_to_bfloat16_bits(in[i]);
  }
  for (const kernel_table* k : keel_test::every_kernel_target()) {
    k->f32_to_f16(h.data(), in.data(), in.size());
    k->f32_to_bf16(b.data(), in.data(), in.size());
    std::size_t bad_h = 0, bad_b = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      bad_h += !same_element(dtype::float16, &h[i], &want_h[i]);
      bad_b += !same_element(dtype::bfloat16, &b[i], &want_b[i]);
    }
    std::vector<float> back(in.size());
    k->f16_to_f32(back.data(), want_h.data(), in.size());
    std::size_t bad_back = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      const float w = half_bits_to_float(want_h[i]);
      bad_back += !(std::memcmp(&back[i], &w, 4) == 0 || (std::isnan(back[i]) && std::isnan(w)));
    }
    INFO("target " << k->target);
    CHECK(bad_h == 0);
    CHECK(bad_b == 0);
    CHECK(bad_back == 0);
  }
}

TEST_CASE("cast: float32 to bfloat16 is bit-exact on ties, NaN payloads, denormals and overflow on every target",
          "[ops][kernels][cast]") {
  // Hand-checked expectations (so the scalar reference is checked too).
  struct known {
    std::uint32_t in;
    std::uint16_t want;
  };
  const known table[] = {
      {0x3F808000u, 0x3F80u},  // tie, even neighbour below
      {0x3F818000u, 0x3F82u},  // tie, odd: rounds up to even
      {0x3F808001u, 0x3F81u},  // just above the tie
      {0x3F807FFFu, 0x3F80u},  // just below the tie
      {0x7F7FFFFFu, 0x7F80u},  // the largest finite value rounds to infinity
      {0x7F7F8000u, 0x7F80u},  // tie on an odd pattern: up, to infinity
      {0xFF7F7FFFu, 0xFF7Fu},  // stays finite
      {0x7F800000u, 0x7F80u},  // infinities kept
      {0xFF800000u, 0xFF80u},
      {0x7FC00000u, 0x7FC0u},  // quiet NaN
      {0x7F800001u, 0x7FC0u},  // signalling NaN, payload only in the low half: quieted, stays NaN
      {0xFF812345u, 0xFFC1u},  // negative NaN keeps sign and upper payload
      {0x7FFFFFFFu, 0x7FFFu},  // the carry must not overflow the payload into the sign
      {0xFFFF8000u, 0xFFFFu},
      {0x7FBF8000u, 0x7FFFu},  // sNaN whose rounding would carry
      {0x00000001u, 0x0000u},  // the smallest denormal rounds to zero, not flushed by a flag
      {0x80000001u, 0x8000u},
      {0x00008000u, 0x0000u},  // denormal tie, even
      {0x00018000u, 0x0002u},  // denormal tie, odd: up
      {0x00010001u, 0x0001u},  // a denormal that stays a denormal
      {0x007FFFFFu, 0x0080u},  // the largest denormal rounds up to the smallest normal
      {0x00000000u, 0x0000u},
      {0x80000000u, 0x8000u},
  };
  for (const known& t : table) {
    float f;
    std::memcpy(&f, &t.in, 4);
    INFO("scalar reference, input 0x" << std::hex << t.in);
    CHECK(float_to_bfloat16_bits(f) == t.want);
  }
  // Each special value at every position of a 64-element block, the other
  // lanes random normals (blocks without denormals take the fast path on
  // AVX512-BF16 CPUs) or random denormals; rows of several lengths so that
  // heads, two-vector bodies, one-vector steps and scalar tails all see them.
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> normal(-4.0f, 4.0f);
  std::uniform_int_distribution<std::uint32_t> denormal(1u, 0x007FFFFFu);
  for (const kernel_table* k : keel_test::every_kernel_target()) {
    std::size_t bad = 0;
    std::string first;
    for (std::size_t n : {std::size_t{64}, std::size_t{95}, std::size_t{131}}) {
      for (bool denormal_background : {false, true}) {
        for (const known& t : table) {
          for (std::size_t pos = 0; pos < n; pos += 3) {
            // One spare float in front: the row starts at two alignments.
            std::vector<float> buf(n + 1);
            for (auto& x : buf) {
              if (denormal_background) {
                const std::uint32_t u = denormal(rng);
                std::memcpy(&x, &u, 4);
              } else {
                x = normal(rng);
              }
            }
            float* in = buf.data() + (pos % 2);
            std::memcpy(&in[pos], &t.in, 4);
            std::vector<std::uint16_t> got(n);
            k->f32_to_bf16(got.data(), in, n);
            for (std::size_t i = 0; i < n; ++i) {
              const std::uint16_t want = float_to_bfloat16_bits(in[i]);
              if (got[i] != want && bad++ == 0) {
                std::ostringstream os;
                os << "n " << n << " index " << i << " input bits 0x" << std::hex;
                std::uint32_t u;
                std::memcpy(&u, &in[i], 4);
                os << u << " got 0x" << got[i] << " want 0x" << want;
                first = os.str();
              }
            }
          }
        }
      }
    }
    INFO("target " << k->target << ": " << first);
    CHECK(bad == 0);
  }
}

TEST_CASE("cast: a long float32 to bfloat16 row is exact at every output alignment and writes nothing outside it",
          "[ops][kernels][cast]") {
  // A row longer than the L2 cache at several output offsets (unaligned,
  // odd, vector-aligned), with a guard element on each side: the vector
  // body, the scalar tail and NaN, infinity and a denormal at its ends.
  const std::size_t n = (std::size_t{1} << 20) + 37;
  std::vector<float> in(n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1e3f, 1e3f);
  for (auto& x : in) x = dist(rng);
  in[0] = std::numeric_limits<float>::quiet_NaN();
  in[n / 2] = std::numeric_limits<float>::infinity();
  in[n - 1] = std::numeric_limits<float>::denorm_min();
  std::vector<std::uint16_t> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = float_to_bfloat16_bits(in[i]);
  std::vector<std::uint16_t> buf(n + 64);
  for (const kernel_table* k : keel_test::every_kernel_target()) {
    for (std::size_t offset : {1u, 7u, 32u}) {
      std::fill(buf.begin(), buf.end(), std::uint16_t{0xABCD});
      k->f32_to_bf16(buf.data() + offset, in.data(), n);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < n; ++i) bad += !same_element(dtype::bfloat16, &buf[offset + i], &want[i]);
      INFO("target " << k->target << " offset " << offset);
      CHECK(bad == 0);
      CHECK(buf[offset - 1] == 0xABCD);
      CHECK(buf[offset + n] == 0xABCD);
    }
  }
}

TEST_CASE("streaming stores: rows above stream_store_min_bytes are exact at odd lengths and misaligned outputs",
          "[ops][kernels][add][addcmul][cast]") {
  // Just above the threshold for the conversions (6 bytes an element; the
  // add and addcmul rows touch 8 to 16), odd, so the streamed body has a
  // head to peel at every offset and a tail; guards on both sides.
  const std::size_t n = stream_store_min_bytes / 6 + 41;
  REQUIRE(n % 2 == 1);
  REQUIRE(n * 6 >= stream_store_min_bytes);
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> dist(-1e3f, 1e3f);
  std::vector<float> a(n), b(n), c(n);
  for (auto* v : {&a, &b, &c}) {
    for (auto& x : *v) x = dist(rng);
  }
  // Special values near both ends and in the middle, for the conversions
  // (a denormal sends its block down the portable path on AVX512-BF16).
  std::vector<float> in = a;
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min(),
                            65520.0f, -0.0f};
  for (std::size_t j = 0; j < std::size(specials); ++j) {
    in[j * 7] = specials[j];
    in[n / 2 + j * 13] = specials[j];
    in[n - 1 - j * 5] = specials[j];
  }
  std::vector<std::uint16_t> want_h(n), want_b(n);
  for (std::size_t i = 0; i < n; ++i) {
    want_h[i] = float_to_half_bits(in[i]);
    want_b[i] = float_to_bfloat16_bits(in[i]);
  }
  const float alpha = 0.75f, value = -1.25f;
  const float guard = -7.0f;
  std::vector<float> fbuf(n + 32);
  std::vector<std::uint16_t> hbuf(n + 64);
  for (const kernel_table* k : keel_test::every_kernel_target()) {
    std::size_t bad_add = 0, bad_bcast = 0, bad_addcmul = 0, bad_h = 0, bad_b = 0, bad_guard = 0;
    for (std::size_t offset : {1u, 5u, 16u}) {  // element offsets into a 16-byte aligned buffer
      float* out = fbuf.data() + offset;
      std::fill(fbuf.begin(), fbuf.end(), guard);
      k->add_f32(out, a.data(), 1, b.data(), 1, alpha, n);
      for (std::size_t i = 0; i < n; ++i) {
        bad_add += out[i] != target_mul_add(k->fused_multiply_add, alpha, b[i], a[i]);
      }
      bad_guard += (fbuf[offset - 1] != guard) + (fbuf[offset + n] != guard);

      std::fill(fbuf.begin(), fbuf.end(), guard);
      k->add_f32(out, a.data(), 1, &b[3], 0, alpha, n);  // broadcast other: 8 bytes an element
      for (std::size_t i = 0; i < n; ++i) {
        bad_bcast += out[i] != target_mul_add(k->fused_multiply_add, alpha, b[3], a[i]);
      }
      bad_guard += (fbuf[offset - 1] != guard) + (fbuf[offset + n] != guard);

      std::fill(fbuf.begin(), fbuf.end(), guard);
      k->addcmul_f32(out, a.data(), 1, b.data(), 1, c.data(), 1, value, n);
      for (std::size_t i = 0; i < n; ++i) {
        bad_addcmul += out[i] != target_mul_add(k->fused_multiply_add, value * b[i], c[i], a[i]);
      }
      bad_guard += (fbuf[offset - 1] != guard) + (fbuf[offset + n] != guard);
    }
    for (std::size_t offset : {1u, 7u, 32u}) {
      std::uint16_t* out = hbuf.data() + offset;
      std::fill(hbuf.begin(), hbuf.end(), std::uint16_t{0xABCD});
      k->f32_to_f16(out, in.data(), n);
      for (std::size_t i = 0; i < n; ++i) bad_h += !same_element(dtype::float16, &out[i], &want_h[i]);
      bad_guard += (hbuf[offset - 1] != 0xABCD) + (hbuf[offset + n] != 0xABCD);

      std::fill(hbuf.begin(), hbuf.end(), std::uint16_t{0xABCD});
      k->f32_to_bf16(out, in.data(), n);
      for (std::size_t i = 0; i < n; ++i) bad_b += !same_element(dtype::bfloat16, &out[i], &want_b[i]);
      bad_guard += (hbuf[offset - 1] != 0xABCD) + (hbuf[offset + n] != 0xABCD);
    }
    INFO("target " << k->target);
    CHECK(bad_add == 0);
    CHECK(bad_bcast == 0);
    CHECK(bad_addcmul == 0);
    CHECK(bad_h == 0);
    CHECK(bad_b == 0);
    CHECK(bad_guard == 0);
  }
}

TEST_CASE("adaptive_avg_pool2d: every target matches the windowed mean", "[ops][kernels][pool]") {
  struct pcase {
    std::vector<std::int64_t> shape;
    std::int64_t oh, ow;
    dtype type;
    layout in_layout, out_layout;
  };
  const std::vector<pcase> cases = {
      {{2, 3, 56, 56}, 7, 7, dtype::float32, layout::contiguous, layout::contiguous},
      {{3, 9, 9}, 2, 2, dtype::float32, layout::contiguous, layout::contiguous},
      {{2, 2, 10, 7}, 3, 4, dtype::float32, layout::transposed, layout::contiguous},  // overlapping windows, W stride != 1
      {{1, 3, 5, 7}, 8, 9, dtype::float32, layout::offset, layout::strided},         // upsampling windows
      {{2, 3, 13, 17}, 13, 17, dtype::float16, layout::contiguous, layout::contiguous},  // identity windows
      {{4, 11, 19}, 5, 1, dtype::bfloat16, layout::strided, layout::transposed},
      {{1, 1, 1, 1}, 1, 1, dtype::float32, layout::contiguous, layout::contiguous},
      {{1, 2, 28, 28}, 7, 7, dtype::float32, layout::contiguous, layout::contiguous},   // uniform windows of 4
      {{1, 2, 14, 14}, 7, 7, dtype::float32, layout::offset, layout::contiguous},       // uniform windows of 2
      {{1, 2, 8, 64}, 2, 4, dtype::float32, layout::contiguous, layout::strided},       // uniform windows of 16
      {{1, 2, 6, 96}, 3, 3, dtype::float32, layout::contiguous, layout::contiguous},    // windows of 32: wider than a vector
      {{1, 2, 4, 24}, 2, 3, dtype::float32, layout::contiguous, layout::contiguous},    // windows of 8 not filling a vector
      {{1, 2, 3, 48}, 3, 3, dtype::float32, layout::contiguous, layout::contiguous},    // an odd number of vectors per row
      {{1, 1, 2, 512}, 1, 8, dtype::float32, layout::contiguous, layout::strided},      // windows of 64: six levels
      {{1, 2, 4, 64}, 2, 32, dtype::float32, layout::contiguous, layout::contiguous},   // more windows than a vector's lanes
      {{2, 1, 3, 40}, 3, 20, dtype::float32, layout::offset, layout::contiguous},       // three vectors, windows of 2
      {{1, 1, 4, 16}, 2, 1, dtype::float32, layout::contiguous, layout::contiguous},    // one window per row
      {{1, 2, 5, 150}, 2, 70, dtype::float32, layout::contiguous, layout::contiguous},  // more than 64 output columns
      {{1, 2, 9, 200}, 3, 64, dtype::float32, layout::offset, layout::contiguous},     // exactly 64
      {{0, 2, 4, 4}, 2, 2, dtype::float32, layout::contiguous, layout::contiguous},  // empty batch
  };
  std::mt19937 rng(13);
  for (const kernel_table* k : keel_test::every_kernel_target()) {
    for (std::size_t ci = 0; ci < cases.size(); ++ci) {
      const pcase& c = cases[ci];
      auto in = make_tensor(c.type, c.shape, c.in_layout);
      fill_random(in.view, rng, false);
      std::vector<std::int64_t> oshape = c.shape;
      oshape[oshape.size() - 2] = c.oh;
      oshape[oshape.size() - 1] = c.ow;
      auto out = make_tensor(c.type, oshape, c.out_layout);
      adaptive_avg_pool2d(*k, in.view, c.oh, c.ow, out.view);
      const std::size_t nd = oshape.size();
      const std::int64_t h = c.shape[nd - 2], w = c.shape[nd - 1];
      std::size_t bad = 0;
      std::string first;
      for_each_index(out.view, [&](const std::int64_t* idx) {
        const std::int64_t i = idx[nd - 2], j = idx[nd - 1];
        const std::int64_t hs = i * h / c.oh, he = ((i + 1) * h + c.oh - 1) / c.oh;
        const std::int64_t ws = j * w / c.ow, we = ((j + 1) * w + c.ow - 1) / c.ow;
        double sum = 0, mag = 0;
        std::int64_t src[tensor::max_dims];
        std::copy(idx, idx + nd, src);
        for (std::int64_t r = hs; r < he; ++r) {
          for (std::int64_t q = ws; q < we; ++q) {
            src[nd - 2] = r;
            src[nd - 1] = q;
            const double v = read_float(in.view, element(in.view, src, nd));
            sum += v;
            mag += std::fabs(v);
          }
        }
        const double cnt = static_cast<double>((he - hs) * (we - ws));
        const double want = sum / cnt;
        const double got = read_float(out.view, element(out.view, idx, nd));
        // float32 accumulation in another order, then the output rounding.
        const double ulp = c.type == dtype::float32 ? 6e-8 : c.type == dtype::float16 ? 1e-3 : 8e-3;
        const double tol = 1e-6 * mag / cnt + ulp * std::fabs(want) + 1e-30;
        if (!(std::fabs(got - want) <= tol) && bad++ == 0) {
          first = "i=" + std::to_string(i) + " j=" + std::to_string(j) + " got " + std::to_string(got) + " want " +
                  std::to_string(want);
        }
      });
      INFO("target " << k->target << " case " << ci << ": " << first);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("baddbmm: every target matches the double-precision product", "[ops][kernels][baddbmm]") {
  struct bcase {
    std::int64_t b, m, k, n;
    std::vector<std::int64_t> self_shape;
    dtype type;
    layout l1, l2, ls, lo;
    float beta, alpha;
  };
  const layout C = layout::contiguous, T = layout::transposed, S = layout::strided, O = layout::offset;
  const std::vector<bcase> cases = {
      {1, 1, 1, 1, {1, 1, 1}, dtype::float32, C, C, C, C, 1.0f, 1.0f},
      {2, 7, 13, 5, {2, 7, 5}, dtype::float32, C, C, C, C, 0.5f, 2.0f},
      {3, 37, 300, 41, {41}, dtype::float32, C, T, C, C, 1.0f, 1.0f},   // two KC blocks, transposed batch2
      {1, 100, 20, 300, {100, 1}, dtype::float32, T, C, C, S, -1.0f, 0.5f},  // two NC blocks
      {2, 19, 33, 23, {2, 19, 23}, dtype::float32, S, O, T, T, 0.0f, 1.0f},   // beta 0, NaN self ignored
      {2, 9, 0, 6, {2, 9, 6}, dtype::float32, C, C, C, C, 2.0f, 1.0f},        // empty K: beta * self
      {2, 17, 40, 29, {29}, dtype::float16, C, T, C, C, 1.0f, 0.5f},
      {1, 12, 70, 18, {1, 12, 18}, dtype::bfloat16, S, C, C, O, 0.0f, 1.0f},
  };
  std::mt19937 rng(17);
  for (const kernel_table* k : keel_test::every_kernel_target()) {
    for (std::size_t ci = 0; ci < cases.size(); ++ci) {
      const bcase& c = cases[ci];
      auto b1 = make_tensor(c.type, {c.b, c.m, c.k}, c.l1);
      auto b2 = make_tensor(c.type, {c.b, c.k, c.n}, c.l2);
      auto self = make_tensor(c.type, c.self_shape, c.ls);
      fill_random(b1.view, rng, false);
      fill_random(b2.view, rng, false);
      fill_random(self.view, rng, false);
      if (c.beta == 0.0f) {  // NaN everywhere in self: beta == 0 must not read it
        for_each_index(self.view, [&](const std::int64_t* idx) {
          write_value(c.type, element(self.view, idx, self.view.dim()), std::nanf(""));
        });
      }
      auto out = make_tensor(c.type, {c.b, c.m, c.n}, c.lo);
      baddbmm(*k, self.view, b1.view, b2.view, c.beta, c.alpha, out.view);
      std::size_t bad = 0;
      std::string first;
      for_each_index(out.view, [&](const std::int64_t* idx) {
        double acc = 0, mag = 0;
        std::int64_t ia[3] = {idx[0], idx[1], 0}, ib[3] = {idx[0], 0, idx[2]};
        for (std::int64_t kk = 0; kk < c.k; ++kk) {
          ia[2] = kk;
          ib[1] = kk;
          const double x = read_float(b1.view, element(b1.view, ia, 3));
          const double y = read_float(b2.view, element(b2.view, ib, 3));
          acc += x * y;
          mag += std::fabs(x * y);
        }
        double want = c.alpha * acc;
        double want_mag = std::fabs(c.alpha) * mag;
        if (c.beta != 0.0f) {
          const double s = read_float(self.view, element(self.view, idx, 3));
          want += c.beta * s;
          want_mag += std::fabs(c.beta * s);
        }
        const double got = read_float(out.view, element(out.view, idx, 3));
        const double ulp = c.type == dtype::float32 ? 1.2e-7 : c.type == dtype::float16 ? 1e-3 : 8e-3;
        const double tol = 2e-7 * static_cast<double>(c.k + 2) * want_mag + ulp * std::fabs(want) + 1e-30;
        if (!(std::fabs(got - want) <= tol) && bad++ == 0) {
          first = "at (" + std::to_string(idx[0]) + "," + std::to_string(idx[1]) + "," + std::to_string(idx[2]) +
                  ") got " + std::to_string(got) + " want " + std::to_string(want);
        }
      });
      INFO("target " << k->target << " case " << ci << ": " << first);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("baddbmm: out may be self (in place)", "[ops][kernels][baddbmm]") {
  std::mt19937 rng(19);
  const kernel_table& k = dynamic_kernels();
  auto b1 = make_tensor(dtype::float32, {2, 30, 270});
  auto b2 = make_tensor(dtype::float32, {2, 270, 20});
  auto self = make_tensor(dtype::float32, {2, 30, 20});
  fill_random(b1.view, rng, false);
  fill_random(b2.view, rng, false);
  fill_random(self.view, rng, false);
  auto expect = make_tensor(dtype::float32, {2, 30, 20});
  baddbmm(k, self.view, b1.view, b2.view, 0.5f, 1.0f, expect.view);
  baddbmm(k, self.view, b1.view, b2.view, 0.5f, 1.0f, self.view);
  CHECK(std::memcmp(self.bytes.data(), expect.bytes.data(), 2 * 30 * 20 * 4) == 0);
}

TEST_CASE("bool storage: any non-zero byte is true on every target and path", "[ops][kernels][cast]") {
  // Other frameworks' bool tensors may hold bytes other than 0 and 1; keel
  // reads bool storage as bytes, never as a C++ bool (a load of byte 135 as
  // bool is undefined behaviour, which the sanitizer build checks).
  const unsigned char pattern[] = {0, 1, 2, 135, 255, 0, 128, 64, 0, 3};
  for (const kernel_table* k : keel_test::every_kernel_target()) {
    for (layout l : {layout::contiguous, layout::strided}) {
      auto flag = make_tensor(dtype::boolean, {1001}, l);
      std::size_t p = 0;
      for_each_index(flag.view, [&](const std::int64_t* idx) {
        *element(flag.view, idx, 1) = static_cast<char>(pattern[p++ % sizeof pattern]);
      });
      auto truth = [&](const std::int64_t* idx) { return *element(flag.view, idx, 1) != 0; };
      // Casts to every dtype: true is one (bool: any non-zero byte).
      for (int to = 0; to < dtype_count; ++to) {
        auto out = make_tensor(static_cast<dtype>(to), {1001});
        cast(*k, flag.view, out.view);
        std::size_t bad = 0;
        for_each_index(out.view, [&](const std::int64_t* idx) {
          const char* got = element(out.view, idx, 1);
          const bool want = truth(idx);
          if (out.view.type() == dtype::boolean) {
            bad += (*got != 0) != want;
          } else {
            bad += read_float(out.view, got) != (want ? 1.0 : 0.0);
          }
        });
        INFO("target " << k->target << " bool -> " << dtype_name(static_cast<dtype>(to)));
        CHECK(bad == 0);
      }
      // A bool operand staged into float32 and int32 arithmetic.
      for (dtype other_type : {dtype::float32, dtype::int32}) {
        auto other = make_tensor(other_type, {1001});
        auto out = make_tensor(other_type, {1001});
        add(*k, flag.view, other.view, 1, out.view);  // other is zero: out is the flag as a number
        std::size_t bad = 0;
        for_each_index(out.view, [&](const std::int64_t* idx) {
          bad += read_float(out.view, element(out.view, idx, 1)) != (truth(idx) ? 1.0 : 0.0);
        });
        INFO("target " << k->target << " add(bool, " << dtype_name(other_type) << ")");
        CHECK(bad == 0);
      }
    }
  }
}
