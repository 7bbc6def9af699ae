// SPDX-License-Identifier: Apache-2.0
// Element types of keel tensors, PyTorch's promotion and casting rules, and
// the exact scalar conversions (round to nearest even into float16/bfloat16).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops {

/**
 * @brief The element types keel's operators understand. The numbering is
 * stable; it follows no vendor's enum, backends translate.
 */
enum class dtype : std::uint8_t {
  float32 = 0,
  float16 = 1,
  bfloat16 = 2,
  int32 = 3,
  int64 = 4,
  int8 = 5,
  uint8 = 6,
  boolean = 7,  ///< PyTorch's torch.bool (one byte, 0 or 1)
};

/** @brief Number of dtypes; dtype values are 0 .. dtype_count - 1. */
inline constexpr int dtype_count = 8;

/** @brief Bytes per element. Throws: nothing. */
constexpr std::size_t element_size(dtype t) noexcept {
  switch (t) {
    case dtype::float32:
    case dtype::int32: return 4;
    case dtype::float16:
    case dtype::bfloat16: return 2;
    case dtype::int64: return 8;
    case dtype::int8:
    case dtype::uint8:
    case dtype::boolean: return 1;
  }
  return 0;
}

/** @brief The name PyTorch prints ("float32", "bool"...). Throws: nothing. */
constexpr const char* dtype_name(dtype t) noexcept {
  switch (t) {
    case dtype::float32: return "float32";
    case dtype::float16: return "float16";
    case dtype::bfloat16: return "bfloat16";
    case dtype::int32: return "int32";
    case dtype::int64: return "int64";
    case dtype::int8: return "int8";
    case dtype::uint8: return "uint8";
    case dtype::boolean: return "bool";
  }
  return "unknown";
}

constexpr bool is_floating(dtype t) noexcept {
  return t == dtype::float32 || t == dtype::float16 || t == dtype::bfloat16;
}
constexpr bool is_integral(dtype t) noexcept { return !is_floating(t) && t != dtype::boolean; }
constexpr bool is_valid(dtype t) noexcept { return static_cast<int>(t) < dtype_count; }

/**
 * @brief torch.promote_types for keel's dtypes. Empty when PyTorch would
 * promote to a type keel does not have (int8 with uint8 gives int16).
 */
constexpr std::optional<dtype> promote_types(dtype a, dtype b) noexcept {
  if (a == b) return a;
  if (a == dtype::boolean) return b;
  if (b == dtype::boolean) return a;
  const bool fa = is_floating(a), fb = is_floating(b);
  if (fa && fb) return dtype::float32;  // f16 with bf16, or a half with f32
  if (fa) return a;                      // integers never widen a float
  if (fb) return b;
  // Both integral and different.
  if ((a == dtype::int8 && b == dtype::uint8) || (a == dtype::uint8 && b == dtype::int8)) return std::nullopt;
  auto rank = [](dtype t) { return t == dtype::int64 ? 3 : t == dtype::int32 ? 2 : 1; };
  return rank(a) >= rank(b) ? a : b;
}

/** @brief torch.can_cast(from, to): no float to integer, nothing but bool to bool. */
constexpr bool can_cast(dtype from, dtype to) noexcept {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != dtype::boolean && to == dtype::boolean) return false;
  return true;
}

/** @brief A float16 value by its bits (IEEE binary16). */
struct float16 {
  /// The value's bit pattern.
  std::uint16_t bits;
};
/** @brief A bfloat16 value by its bits (the high half of a binary32). */
struct bfloat16 {
  /// The value's bit pattern.
  std::uint16_t bits;
};

/** @brief float32 to float16 bits, round to nearest even; NaN stays NaN (quiet), overflow gives infinity. */
inline std::uint16_t float_to_half_bits(float f) noexcept {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));
  if (abs >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {                                                  // result is subnormal or zero
    if (abs < 0x33000000u) return static_cast<std::uint16_t>(sign);          // below half the smallest subnormal
    const std::uint32_t exp = abs >> 23;
    const std::uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
    const std::uint32_t shift = 126u - exp;  // 14 .. 24
    std::uint32_t h = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  // Normal: rebias and round the 13 dropped bits to nearest even; a carry
  // into the exponent is the correct result.
  std::uint32_t h = ((abs - 0x38000000u) >> 13);
  const std::uint32_t rem = abs & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

/** @brief float16 bits to float32 (exact). */
inline float half_bits_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  const std::uint32_t mant = h & 0x3FFu;
  std::uint32_t x;
  if (exp == 0x1Fu) {
    x = sign | 0x7F800000u | (mant << 13);
  } else if (exp != 0) {
    x = sign | ((exp + 112u) << 23) | (mant << 13);
  } else {
    // Subnormal or zero: mant * 2^-24 is exact in float32.
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    std::memcpy(&x, &v, 4);
    x |= sign;
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

/** @brief float32 to bfloat16 bits, round to nearest even; NaN stays NaN (quiet bit set). */
inline std::uint16_t float_to_bfloat16_bits(float f) noexcept {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((x >> 16) | 0x0040u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(x >> 16);
}

inline float bfloat16_bits_to_float(std::uint16_t b) noexcept {
  const std::uint32_t x = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

namespace detail {

// Float to integer: truncation toward zero, as Tensor.to does for values in
// range. PyTorch leaves NaN and out-of-range values undefined for the signed
// types (C++ UB; x86 happens to give the minimum); keel saturates and maps NaN
// to 0, so every SIMD target and the scalar reference agree. uint8 goes
// through int64 and wraps, which PyTorch does on purpose (-1.0 gives 255).
template <class I>
I float_to_int(float f) noexcept {
  if constexpr (std::is_same_v<I, std::uint8_t>) {
    return static_cast<std::uint8_t>(static_cast<std::uint64_t>(float_to_int<std::int64_t>(f)));
  } else {
    if (std::isnan(f)) return 0;
    constexpr float lo = static_cast<float>(std::numeric_limits<I>::min());
    constexpr float hi_excl = -lo;  // 2^(bits-1), exact in float
    if (f <= lo) return std::numeric_limits<I>::min();
    if (f >= hi_excl) return std::numeric_limits<I>::max();
    return static_cast<I>(f);
  }
}

// Integer to integer wraps modulo 2^bits (two's complement), as PyTorch.
template <class To, class From>
To wrap_int(From v) noexcept {
  return static_cast<To>(static_cast<std::make_unsigned_t<To>>(static_cast<std::uint64_t>(v)));
}

/** The C++ storage type of a dtype. */
template <dtype T> struct storage;
template <> struct storage<dtype::float32> { using type = float; };
template <> struct storage<dtype::float16> { using type = float16; };
template <> struct storage<dtype::bfloat16> { using type = bfloat16; };
template <> struct storage<dtype::int32> { using type = std::int32_t; };
template <> struct storage<dtype::int64> { using type = std::int64_t; };
template <> struct storage<dtype::int8> { using type = std::int8_t; };
template <> struct storage<dtype::uint8> { using type = std::uint8_t; };
template <> struct storage<dtype::boolean> { using type = bool; };

// Reads any stored value as float (the opmath of floating types).
inline float to_float(float v) noexcept { return v; }
inline float to_float(float16 v) noexcept { return half_bits_to_float(v.bits); }
inline float to_float(bfloat16 v) noexcept { return bfloat16_bits_to_float(v.bits); }
inline float to_float(bool v) noexcept { return v ? 1.0f : 0.0f; }
template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
float to_float(I v) noexcept {
  return static_cast<float>(v);
}

/** convert<To>(from): one element, with PyTorch's rules (see float_to_int for the out-of-range case). */
template <class To, class From>
To convert(From v) noexcept {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (std::is_same_v<From, float16> || std::is_same_v<From, bfloat16>) {
      return (v.bits & 0x7FFFu) != 0;  // NaN is true, as in PyTorch
    } else {
      return v != From{};
    }
  } else if constexpr (std::is_same_v<To, float>) {
    return to_float(v);
  } else if constexpr (std::is_same_v<To, float16>) {
    return float16{float_to_half_bits(to_float(v))};
  } else if constexpr (std::is_same_v<To, bfloat16>) {
    return bfloat16{float_to_bfloat16_bits(to_float(v))};
  } else {  // integral target
    if constexpr (std::is_same_v<From, bool>) {
      return static_cast<To>(v ? 1 : 0);
    } else if constexpr (std::is_integral_v<From>) {
      return wrap_int<To>(v);
    } else {
      return float_to_int<To>(to_float(v));
    }
  }
}

/** Calls f(storage-type tag) for a runtime dtype. */
template <class F>
decltype(auto) visit_dtype(dtype t, F&& f) {
  switch (t) {
    case dtype::float32: return f(float{});
    case dtype::float16: return f(float16{});
    case dtype::bfloat16: return f(bfloat16{});
    case dtype::int32: return f(std::int32_t{});
    case dtype::int64: return f(std::int64_t{});
    case dtype::int8: return f(std::int8_t{});
    case dtype::uint8: return f(std::uint8_t{});
    case dtype::boolean: break;
  }
  return f(bool{});
}

/**
 * Converts n elements between any two dtypes with element strides (zero
 * broadcasts the source). Scalar; the SIMD pairs go through the kernel table.
 */
inline void strided_convert(void* dst, dtype dst_type, std::ptrdiff_t dst_stride, const void* src, dtype src_type,
                            std::ptrdiff_t src_stride, std::size_t n) noexcept {
  visit_dtype(dst_type, [&](auto dst_tag) {
    using D = decltype(dst_tag);
    visit_dtype(src_type, [&](auto src_tag) {
      using S = decltype(src_tag);
      D* d = static_cast<D*>(dst);
      if constexpr (std::is_same_v<S, bool>) {
        // Bool storage is read as bytes, any non-zero byte being true: loading
        // a byte other than 0 or 1 as a C++ bool is undefined behaviour, and
        // tensors from other frameworks may hold such bytes.
        const auto* s = static_cast<const std::uint8_t*>(src);
        for (std::size_t i = 0; i < n; ++i) {
          d[static_cast<std::ptrdiff_t>(i) * dst_stride] =
              convert<D>(s[static_cast<std::ptrdiff_t>(i) * src_stride] != 0);
        }
      } else {
        const S* s = static_cast<const S*>(src);
        for (std::size_t i = 0; i < n; ++i) {
          d[static_cast<std::ptrdiff_t>(i) * dst_stride] = convert<D>(s[static_cast<std::ptrdiff_t>(i) * src_stride]);
        }
      }
    });
  });
}

}  // namespace detail
} KEEL_END_NAMESPACE  // namespace keel::ops
