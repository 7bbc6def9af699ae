// SPDX-License-Identifier: Apache-2.0
// Test support: tensors over owned storage with chosen layouts, random data
// with special values, and scalar reference operators written from
// PyTorch's definitions (one element at a time, no SIMD, no staging).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "keel/ops/dtype.hpp"
#include "keel/ops/tensor.hpp"

namespace keel_test {

using namespace keel::ops;

enum class layout { contiguous, transposed, strided, offset };

// Owns storage; view() is a tensor of `shape` with the chosen layout.
struct owned_tensor {
  std::vector<unsigned char> bytes;
  tensor view;
};

inline owned_tensor make_tensor(dtype t, const std::vector<std::int64_t>& shape, layout l = layout::contiguous) {
  const std::size_t nd = shape.size();
  std::vector<std::int64_t> strides(nd);
  std::int64_t offset = 0, span = 1;
  std::vector<std::size_t> order(nd);
  for (std::size_t i = 0; i < nd; ++i) order[i] = nd - 1 - i;  // innermost first
  if (l == layout::transposed && nd >= 2) std::swap(order[0], order[1]);
  const std::int64_t step = l == layout::strided ? 2 : 1;
  for (std::size_t k = 0; k < nd; ++k) {
    const std::size_t i = order[k];
    strides[i] = k == 0 ? step : span;  // strided: every other element of the innermost dimension
    span = strides[i] * std::max<std::int64_t>(shape[i], 1);
  }
  if (l == layout::offset) offset = 3;
  owned_tensor o;
  o.bytes.assign(static_cast<std::size_t>(span + offset + 1) * element_size(t) + 64, 0);
  o.view = tensor(o.bytes.data(), t, shape.data(), nd, strides.data(), nd, offset);
  return o;
}

inline void for_each_index(const tensor& t, const std::function<void(const std::int64_t*)>& fn) {
  if (t.numel() == 0) return;
  std::int64_t idx[tensor::max_dims] = {};
  for (std::int64_t n = 0; n < t.numel(); ++n) {
    fn(idx);
    for (std::size_t i = t.dim(); i-- > 0;) {
      if (++idx[i] < t.size(i)) break;
      idx[i] = 0;
    }
  }
}

// Address of the element at out-index idx (of out_dims dims) in t, which
// broadcasts to that shape (right-aligned, size-1 dimensions repeat).
inline char* element(const tensor& t, const std::int64_t* idx, std::size_t out_dims) {
  std::int64_t off = 0;
  const std::size_t shift = out_dims - t.dim();
  for (std::size_t i = 0; i < t.dim(); ++i) {
    if (t.size(i) != 1) off += idx[i + shift] * t.stride(i);
  }
  return t.first() + off * static_cast<std::int64_t>(element_size(t.type()));
}

inline float read_float(const tensor& t, const char* p) {
  return detail::visit_dtype(t.type(), [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, p, sizeof v);
    return detail::convert<float>(v);
  });
}
inline std::int64_t read_int(const tensor& t, const char* p) {
  return detail::visit_dtype(t.type(), [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, p, sizeof v);
    return detail::convert<std::int64_t>(v);
  });
}
// Writes a float (or int64) into storage of dtype `type` with PyTorch's conversion.
template <class V>
inline void write_value(dtype type, void* p, V value) {
  detail::visit_dtype(type, [&](auto tag) {
    const auto v = detail::convert<decltype(tag)>(value);
    std::memcpy(p, &v, sizeof v);
  });
}

// m * x + a rounded twice (the product, then the sum). The references are
// compiled under the test's flags, and a test variant is built with
// -ffp-contract=fast: the volatile product cannot be fused into the add.
inline float unfused_mul_add(float m, float x, float a) {
  const volatile float p = m * x;
  return p + a;
}

// m * x + a as a target's kernels round it (kernel_table::fused_multiply_add):
// once where the target has FMA, twice elsewhere.
inline float target_mul_add(bool fused, float m, float x, float a) {
  return fused ? std::fma(m, x, a) : unfused_mul_add(m, x, a);
}

// v rounded to floating dtype t (float16 and bfloat16 round to nearest even).
inline float round_to(dtype t, float v) {
  unsigned char tmp[8];
  write_value(t, tmp, v);
  return detail::visit_dtype(t, [&](auto tag) {
    decltype(tag) x;
    std::memcpy(&x, tmp, sizeof x);
    return detail::convert<float>(x);
  });
}

// The element at p of t, converted to the floating common dtype first (as
// PyTorch converts every operand to the result type), then read as float.
inline float read_as(dtype common, const tensor& t, const char* p) {
  return detail::visit_dtype(t.type(), [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, p, sizeof v);
    return detail::visit_dtype(common, [&](auto ctag) {
      return detail::convert<float>(detail::convert<decltype(ctag)>(v));
    });
  });
}

// Random values, about one in eight special: NaN, infinities, signed zero,
// denormals, values at the float16 limits and rounding midpoints, and the
// integer limits of the dtype.
inline void fill_random(const tensor& t, std::mt19937& rng, bool specials = true) {
  std::uniform_real_distribution<float> uf(-100.0f, 100.0f);
  std::uniform_int_distribution<int> pick(0, 15);
  const float float_specials[] = {std::numeric_limits<float>::quiet_NaN(),
                                  std::numeric_limits<float>::infinity(),
                                  -std::numeric_limits<float>::infinity(),
                                  -0.0f,
                                  1e-40f,          // float32 denormal
                                  -3e-8f,          // float16 denormal range
                                  65504.0f,        // float16 max
                                  65520.0f,        // rounds to float16 infinity
                                  1.00048828125f,  // float16 tie (1 + 2^-11)
                                  3.0e38f,
                                  1.00390625f};    // bfloat16 tie (1 + 2^-8)
  for_each_index(t, [&](const std::int64_t* idx) {
    char* p = element(t, idx, t.dim());
    const int k = pick(rng);
    if (is_floating(t.type())) {
      float v = uf(rng);
      if (specials && k == 0) v = float_specials[std::uniform_int_distribution<std::size_t>(0, 10)(rng)];
      write_value(t.type(), p, v);
    } else if (t.type() == dtype::boolean) {
      write_value(t.type(), p, std::int64_t{k & 1});
    } else {
      std::int64_t v = std::uniform_int_distribution<std::int64_t>(-1000, 1000)(rng);
      if (specials && k == 0) {
        v = detail::visit_dtype(t.type(), [&](auto tag) {
          using T = decltype(tag);
          if constexpr (std::is_integral_v<T>) {
            return (pick(rng) & 1) ? static_cast<std::int64_t>(std::numeric_limits<T>::max())
                                   : static_cast<std::int64_t>(std::numeric_limits<T>::min());
          } else {
            return std::int64_t{0};
          }
        });
      }
      write_value(t.type(), p, v);
    }
  });
}

// Bitwise equality of two stored elements, treating any two NaNs as equal.
inline bool same_element(dtype t, const void* a, const void* b) {
  if (std::memcmp(a, b, element_size(t)) == 0) return true;
  if (!is_floating(t)) return false;
  const float x = detail::visit_dtype(t, [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, a, sizeof v);
    return detail::convert<float>(v);
  });
  const float y = detail::visit_dtype(t, [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, b, sizeof v);
    return detail::convert<float>(v);
  });
  return std::isnan(x) && std::isnan(y);
}

// A bfloat16 baddbmm whose executor needs a workspace: self {24} broadcast
// over batch1 {3, 20, 70} @ batch2 {3, 70, 24}, random finite values from
// `seed`; `expect` and `got` are {3, 20, 24} outputs for the reference run
// and the run under test.
struct baddbmm_operands {
  owned_tensor b1 = make_tensor(dtype::bfloat16, {3, 20, 70});
  owned_tensor b2 = make_tensor(dtype::bfloat16, {3, 70, 24});
  owned_tensor self = make_tensor(dtype::bfloat16, {24});
  owned_tensor expect = make_tensor(dtype::bfloat16, {3, 20, 24});
  owned_tensor got = make_tensor(dtype::bfloat16, {3, 20, 24});

  explicit baddbmm_operands(unsigned seed) {
    std::mt19937 rng(seed);
    fill_random(b1.view, rng, false);
    fill_random(b2.view, rng, false);
    fill_random(self.view, rng, false);
  }
};

}  // namespace keel_test
