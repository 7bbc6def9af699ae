// SPDX-License-Identifier: Apache-2.0
// A non-owning tensor view described as the device API describes one: data
// pointer, dtype, view shape, strides in elements and a storage offset.
#pragma once

#include <algorithm>
#include <utility>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "keel/core/error.hpp"
#include "keel/ops/dtype.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops {

/**
 * @brief A view of memory someone else owns: element (i0, i1, ...) lives at
 * `data + (offset + i0*stride0 + i1*stride1 + ...) * element_size`.
 * Strides may be zero (broadcast) or describe any non-contiguous view;
 * they may not be negative. At most `max_dims` dimensions.
 *
 * Ownership: none; the caller keeps the memory alive while an operator uses it.
 * Thread safety: a value type, immutable after construction. Exceptions: the
 * constructors throw keel::error (invalid_parameter) on a bad shape; the rest is noexcept.
 *
 * @code
 * float buf[2 * 3];
 * ops::tensor t(buf, ops::dtype::float32, {2, 3});          // contiguous
 * ops::tensor col(buf, ops::dtype::float32, {2}, {3}, 1);   // column 1
 * @endcode
 */
class tensor {
 public:
  /// The most dimensions a view has.
  static constexpr std::size_t max_dims = 8;
  /// A list of sizes or strides.
  using dims = std::initializer_list<std::int64_t>;

  /** @brief The null tensor: operators report it as a null parameter. */
  tensor() noexcept = default;

  /** @brief A contiguous (row-major) view. */
  tensor(const void* data, dtype type, dims shape) : tensor(data, type, shape.begin(), shape.size(), nullptr, 0) {}

  /** @brief A strided view; strides.size() must equal shape.size(). */
  tensor(const void* data, dtype type, dims shape, dims strides, std::int64_t storage_offset = 0)
      : tensor(data, type, shape.begin(), shape.size(), strides.begin(), strides.size(), storage_offset) {}

  /** @brief From arrays, as a device API call hands them over (strides may be null: contiguous). */
  tensor(const void* data, dtype type, const std::int64_t* shape, std::size_t ndim, const std::int64_t* strides,
         std::size_t nstrides, std::int64_t storage_offset = 0)
      : data_(const_cast<void*>(data)), type_(type), ndim_(static_cast<std::uint8_t>(ndim)), offset_(storage_offset) {
    if (!is_valid(type)) throw_error(errc::invalid_parameter, "keel::ops::tensor", "dtype is not a keel dtype");
    if (ndim > max_dims) {
      ::keel::detail::throw_composed(errc::invalid_parameter, "keel::ops::tensor",
                                     {"at most ", max_dims, " dimensions, got ", ndim});
    }
    if (strides != nullptr && nstrides != ndim) {
      ::keel::detail::throw_composed(errc::invalid_parameter, "keel::ops::tensor",
                                     {"strides has ", nstrides, " entries for ", ndim, " dimensions"});
    }
    if (storage_offset < 0) throw_error(errc::invalid_parameter, "keel::ops::tensor", "storage offset is negative");
    std::int64_t running = 1;
    for (std::size_t i = ndim; i-- > 0;) {
      if (shape[i] < 0) throw_error(errc::invalid_parameter, "keel::ops::tensor", "a size is negative");
      shape_[i] = shape[i];
      strides_[i] = strides != nullptr ? strides[i] : running;
      if (strides_[i] < 0) throw_error(errc::invalid_parameter, "keel::ops::tensor", "a stride is negative");
      if (__builtin_mul_overflow(running, shape[i], &running)) {
        throw_error(errc::invalid_parameter, "keel::ops::tensor", "the number of elements does not fit in 64 bits");
      }
    }
    check_representable();
  }

  /** @brief The base pointer as given (before the storage offset). */
  void* data() const noexcept { return data_; }
  /** @brief The address of element (0, 0, ...): data + offset * element_size. */
  char* first() const noexcept { return static_cast<char*>(data_) + offset_ * static_cast<std::int64_t>(element_size(type_)); }
  /// The element dtype.
  dtype type() const noexcept { return type_; }
  /// The number of dimensions.
  std::size_t dim() const noexcept { return ndim_; }
  /// The size of dimension @p i.
  std::int64_t size(std::size_t i) const noexcept { return shape_[i]; }
  /// The stride of dimension @p i, in elements.
  std::int64_t stride(std::size_t i) const noexcept { return strides_[i]; }
  /// The offset of the first element from data(), in elements.
  std::int64_t storage_offset() const noexcept { return offset_; }
  /// The sizes, one per dimension.
  const std::int64_t* sizes() const noexcept { return shape_.data(); }
  /// The strides in elements, one per dimension.
  const std::int64_t* strides() const noexcept { return strides_.data(); }

  /// The number of elements (the product of the sizes).
  std::int64_t numel() const noexcept {
    std::int64_t n = 1;
    for (std::size_t i = 0; i < ndim_; ++i) n *= shape_[i];
    return n;
  }

  /** @brief Row-major contiguous (size-1 dimensions may have any stride). */
  bool is_contiguous() const noexcept {
    std::int64_t expected = 1;
    for (std::size_t i = ndim_; i-- > 0;) {
      if (shape_[i] == 1) continue;
      if (strides_[i] != expected) return false;
      expected *= shape_[i];
    }
    return true;
  }

  /** @brief The same view with another base pointer (a cache hit binds this call's memory). */
  tensor with_data(const void* data) const noexcept {
    tensor t = *this;
    t.data_ = const_cast<void*>(data);
    return t;
  }

  /** @brief Same dtype, shape, strides and first element: the same view of the same memory. */
  friend bool same_view(const tensor& a, const tensor& b) noexcept {
    if (a.first() != b.first() || a.type_ != b.type_ || a.ndim_ != b.ndim_) return false;
    for (std::size_t i = 0; i < a.ndim_; ++i) {
      if (a.shape_[i] != b.shape_[i] || (a.shape_[i] != 1 && a.strides_[i] != b.strides_[i])) return false;
    }
    return true;
  }

  /** @brief The shape as text, "[2, 3]", for error messages. */
  std::string shape_string() const {
    std::string s = "[";
    for (std::size_t i = 0; i < ndim_; ++i) {
      if (i != 0) s += ", ";
      s += std::to_string(shape_[i]);
    }
    return s + "]";
  }

 private:
  // Every count and byte offset the view describes must fit in int64:
  // numel(), contiguity checks and the byte extent are computed without
  // further checks, and a view whose extent wraps around would let a kernel
  // write outside the memory it describes.
  void check_representable() const {
    std::int64_t elements = 1;
    std::int64_t last_index = offset_;
    for (std::size_t i = 0; i < ndim_; ++i) {
      const std::int64_t size = shape_[i] > 0 ? shape_[i] : 1;
      std::int64_t reach = 0;
      if (__builtin_mul_overflow(elements, size, &elements) ||
          __builtin_mul_overflow(size - 1, strides_[i], &reach) ||
          __builtin_add_overflow(last_index, reach, &last_index)) {
        ::keel::detail::throw_composed(
            errc::invalid_parameter, "keel::ops::tensor",
            {"the view's element count or extent does not fit in 64 bits (dimension ", i, ")"});
      }
    }
    std::int64_t end_byte = 0;
    if (__builtin_add_overflow(last_index, 1, &end_byte) ||
        __builtin_mul_overflow(end_byte, static_cast<std::int64_t>(element_size(type_)), &end_byte)) {
      throw_error(errc::invalid_parameter, "keel::ops::tensor", "the view's extent in bytes does not fit in 64 bits");
    }
  }

  void* data_ = nullptr;
  dtype type_ = dtype::float32;
  std::uint8_t ndim_ = 0;
  std::int64_t offset_ = 0;
  std::array<std::int64_t, max_dims> shape_{};
  std::array<std::int64_t, max_dims> strides_{};
};

namespace detail {

/**
 * A size computed from shapes (elements, bytes, offsets into a workspace),
 * checked: a step that would pass max (PTRDIFF_MAX, the largest object and
 * pointer difference there can be) marks it overflowed instead of wrapping,
 * for phase one to refuse. The one place keel's operators do size arithmetic.
 */
class checked_size {
 public:
  static constexpr std::size_t max = static_cast<std::size_t>(PTRDIFF_MAX);
  constexpr checked_size(std::size_t value = 0) noexcept : value_(value), over_(value > max) {}  // NOLINT: implicit
  friend constexpr checked_size operator+(checked_size a, checked_size b) noexcept {
    std::size_t sum = 0;
    if (a.over_ || b.over_ || __builtin_add_overflow(a.value_, b.value_, &sum)) return overflowed();
    return checked_size(sum);
  }
  friend constexpr checked_size operator*(checked_size a, checked_size b) noexcept {
    std::size_t product = 0;
    if (a.over_ || b.over_ || __builtin_mul_overflow(a.value_, b.value_, &product)) return overflowed();
    return checked_size(product);
  }
  /** Rounded up to a multiple of `to` (> 0). */
  constexpr checked_size round_up(std::size_t to) const noexcept {
    const checked_size padded = *this + (to - 1);
    return padded.over_ ? padded : checked_size(padded.value_ / to * to);
  }
  constexpr bool fits() const noexcept { return !over_; }
  /** The value; meaningful only when fits(). */
  constexpr std::size_t value() const noexcept { return value_; }

 private:
  static constexpr checked_size overflowed() noexcept {
    checked_size c;
    c.over_ = true;
    return c;
  }
  std::size_t value_;
  bool over_;
};

/**
 * Refuses a size that overflowed: keel::error invalid_parameter naming the
 * API, what was being sized from which tensors (`what()`, a std::string,
 * built only on failure) and the limit.
 */
template <class What>
void check_size(const char* api, checked_size size, What&& what) {
  if (!size.fits()) {
    ::keel::detail::throw_composed(
        errc::invalid_parameter, api,
        {what(), " does not fit in ", checked_size::max, " bytes (PTRDIFF_MAX): the shapes are too large to size"});
  }
}

/** The bytes [lo, hi) a view can touch; empty for an empty view. */
struct byte_extent {
  std::uintptr_t lo = 0, hi = 0;
  bool empty() const noexcept { return lo == hi; }
};

inline byte_extent extent_of(const tensor& t) noexcept {
  if (t.numel() == 0) return {};
  std::int64_t last = 0;
  for (std::size_t i = 0; i < t.dim(); ++i) last += (t.size(i) - 1) * t.stride(i);
  const auto lo = reinterpret_cast<std::uintptr_t>(t.first());
  const auto es = static_cast<std::uintptr_t>(element_size(t.type()));
  return {lo, lo + static_cast<std::uintptr_t>(last) * es + es};
}

/**
 * True when two views share a byte. Decided on extents, so two interleaved
 * views that never touch the same element (even and odd columns) still count:
 * the conservative answer, as the device API gives it.
 */
inline bool may_overlap(const tensor& a, const tensor& b) noexcept {
  const byte_extent x = extent_of(a), y = extent_of(b);
  if (x.empty() || y.empty()) return false;
  return x.lo < y.hi && y.lo < x.hi;
}

/** True when a view that is written maps two indices to one element (a zero or too-small stride). */
inline bool has_internal_overlap(const tensor& t) noexcept {
  if (t.numel() <= 1) return false;
  // Sort dimensions by stride; each must step past everything inside it.
  std::array<std::size_t, tensor::max_dims> order{};
  std::size_t n = 0;
  for (std::size_t i = 0; i < t.dim(); ++i) {
    if (t.size(i) != 1) order[n++] = i;
  }
  // Insertion sort: at most 8 entries (and std::sort here trips GCC 12's
  // -Warray-bounds false positive on its unrolled threshold path).
  for (std::size_t a = 1; a < n; ++a) {
    for (std::size_t b = a; b > 0 && t.stride(order[b]) < t.stride(order[b - 1]); --b) std::swap(order[b], order[b - 1]);
  }
  std::int64_t span = 1;  // elements covered by the inner dimensions
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = order[k];
    if (t.stride(i) < span) return true;
    span = t.stride(i) * (t.size(i) - 1) + span;
  }
  return false;
}

}  // namespace detail
} KEEL_END_NAMESPACE  // namespace keel::ops
