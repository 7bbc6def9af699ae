// SPDX-License-Identifier: Apache-2.0
// A scalar operand (alpha, value, beta): a value and its dtype, like the
// device API's aclScalar, held by value.
#pragma once

#include <cstdint>
#include <type_traits>

#include "keel/ops/dtype.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops {

/**
 * @brief A value with a dtype. Floating scalars keep a double, integral
 * ones an int64, so a Python-style literal round-trips before the operator
 * converts it to its compute type.
 *
 * Ownership: a plain value. Thread safety: immutable, share freely.
 * Exceptions: nothing throws.
 *
 * @code
 * ops::scalar alpha = 2.5;           // float32
 * ops::scalar step = std::int64_t{3}; // int64
 * @endcode
 */
class scalar {
 public:
  constexpr scalar() noexcept : type_(dtype::int64), i_(0) {}
  /// A scalar holding @p v, with its dtype.
  constexpr scalar(float v) noexcept : type_(dtype::float32), f_(v) {}
  /// A scalar holding @p v, with its dtype.
  constexpr scalar(double v) noexcept : type_(dtype::float32), f_(v) {}
  /// A scalar holding @p v, with its dtype.
  constexpr scalar(std::int32_t v) noexcept : type_(dtype::int32), i_(v) {}
  /// A scalar holding @p v, with its dtype.
  constexpr scalar(std::int64_t v) noexcept : type_(dtype::int64), i_(v) {}
  /// A scalar holding @p v, with its dtype.
  constexpr scalar(bool v) noexcept : type_(dtype::boolean), i_(v ? 1 : 0) {}

  /** @brief The scalar's dtype. */
  constexpr dtype type() const noexcept { return type_; }
  /// Whether the dtype is a floating-point one.
  constexpr bool is_floating() const noexcept { return ops::is_floating(type_); }

  /** @brief The value as double (exact for floating scalars). */
  constexpr double to_double() const noexcept { return is_floating() ? f_ : static_cast<double>(i_); }
  /** @brief The value as float, PyTorch's opmath for float32 and the half types. */
  constexpr float to_float() const noexcept { return static_cast<float>(to_double()); }
  /**
   * @brief The value as an integer of type I: integral scalars wrap modulo
   * 2^bits as PyTorch's conversion does; a floating scalar truncates.
   */
  template <class I>
  I to_integer() const noexcept {
    if (is_floating()) return detail::float_to_int<I>(static_cast<float>(f_));
    return detail::wrap_int<I>(i_);
  }

  friend constexpr bool operator==(const scalar& a, const scalar& b) noexcept {
    return a.type_ == b.type_ && (a.is_floating() ? a.f_ == b.f_ : a.i_ == b.i_);
  }

 private:
  dtype type_;
  union {
    double f_;
    std::int64_t i_;
  };
};

} KEEL_END_NAMESPACE  // namespace keel::ops
