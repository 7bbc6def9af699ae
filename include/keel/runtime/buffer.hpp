// SPDX-License-Identifier: Apache-2.0
// Device and pinned host buffers whose release is ordered on a stream: the
// memory stays valid until every task issued before the release has run.
#pragma once

#include <cstddef>
#include <utility>

#include "keel/core/error.hpp"
#include "keel/core/unique_handle.hpp"
#include "keel/runtime/backend.hpp"
#include "keel/runtime/stream.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail {
template <class B>
struct buffer_traits {
  using native_type = typename B::buffer_handle;
  static constexpr native_type null() noexcept { return native_type{}; }
  static void close(native_type h) noexcept { B::free_async(h); }  // in the order of the buffer's stream
};
}  // namespace detail
/// @endcond

/**
 * @brief An allocation of @p Kind memory bound to a stream: destroying or
 * resetting it releases the memory in that stream's order, so work issued
 * before the release never reads freed memory. span() shares ownership, for
 * work (and models) that must keep it alive longer.
 *
 * Ownership: unique (release, reset, swap); moved-from is empty. Thread
 * safety: none of its own. Exceptions: the constructor throws keel::error
 * out_of_memory; the destructor is noexcept.
 *
 * @code
 * keel::host::device_buffer x{stream, n * sizeof(float)};
 * stream.copy_async(x.span(), keel::host_span(src, n * sizeof(float)));
 * @endcode
 */
template <KEEL_MEMORY_BACKEND B, memory_kind Kind>
class basic_buffer {
  static_assert(detail::memory_layer::check<B>::value);  // names the missing call of the memory layer
  using handle_type = unique_handle<detail::buffer_traits<B>>;

 public:
  /// The backend's allocation handle (its record of the allocation; the memory itself is data()).
  using native_handle_type = typename B::buffer_handle;
  /// Whether the buffer is device or pinned host memory.
  static constexpr memory_kind kind = Kind;

  basic_buffer() noexcept = default;
  /** @brief Allocates @p bytes, to be released in @p stream's order. */
  basic_buffer(basic_stream_ref<B> stream, std::size_t bytes)
      : handle_(B::allocate(detail::checked_handle(stream, "keel::buffer"), bytes, Kind)) {}
  /** @brief Takes ownership of an allocation release() gave up. @throws keel::error null_parameter. */
  static basic_buffer from_native_handle(native_handle_type native) {
    if (native == native_handle_type{}) detail::throw_null_native("keel::buffer::from_native_handle", "buffer");
    basic_buffer b;
    b.handle_.reset(native);
    return b;
  }
  static basic_buffer from_native_handle(std::nullptr_t) = delete;  ///< no allocation to own
  static basic_buffer from_native_handle(int) = delete;             ///< no allocation to own

  /// Takes the other object's handle; the other is left empty.
  basic_buffer(basic_buffer&&) noexcept = default;
  /// Releases what this holds (in stream order), then takes the other object's handle; the other is left empty.
  basic_buffer& operator=(basic_buffer&&) noexcept = default;

  /// The backend's allocation handle, null when empty.
  native_handle_type native_handle() const noexcept { return handle_.get(); }
  /// Gives up ownership: returns the handle and leaves this empty; the caller releases it (or gives it back).
  [[nodiscard]] native_handle_type release() noexcept { return handle_.release(); }
  /** @brief Releases the owned memory in stream order; this is left empty. */
  void reset() noexcept { handle_.reset(); }
  /// Whether this holds a handle.
  explicit operator bool() const noexcept { return static_cast<bool>(handle_); }
  /// Exchanges what this and the other object hold.
  void swap(basic_buffer& o) noexcept { handle_.swap(o.handle_); }
  friend void swap(basic_buffer& a, basic_buffer& b) noexcept { a.swap(b); }
  /// Whether both hold the same allocation (or both are empty).
  friend bool operator==(const basic_buffer& a, const basic_buffer& b) noexcept { return a.handle_ == b.handle_; }
  /// Whether they hold different allocations.
  friend bool operator!=(const basic_buffer& a, const basic_buffer& b) noexcept { return !(a == b); }

  /** @brief The memory (host-addressable on the host backend). @throws keel::error invalid_handle if empty. */
  void* data() const { return B::data(checked("keel::buffer::data")); }
  /// data() as a pointer to @p T. @throws keel::error invalid_handle if empty.
  template <class T>
  T* data_as() const {
    return static_cast<T*>(data());
  }
  /// The size in bytes. @throws keel::error invalid_handle when empty.
  std::size_t size() const { return B::size(checked("keel::buffer::size")); }
  /** @brief A span sharing ownership of the allocation (for copies and kernel arguments). */
  memory_span span() const {
    auto h = checked("keel::buffer::span");
    return {B::data(h), B::size(h), Kind, B::keep_alive(h)};
  }

 private:
  native_handle_type checked(const char* api) const {
    if (!handle_) detail::throw_empty(api);
    return handle_.get();
  }
  handle_type handle_;
};

template <class B>
using basic_device_buffer = basic_buffer<B, memory_kind::device>;
template <class B>
using basic_pinned_buffer = basic_buffer<B, memory_kind::pinned_host>;

KEEL_END_NAMESPACE  // namespace keel
