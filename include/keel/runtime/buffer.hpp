// SPDX-License-Identifier: Apache-2.0
// Device and pinned host buffers whose release is ordered on a stream: the
// memory stays valid until every task issued before the release has run.
#pragma once

#include <cstddef>
#include <utility>

#include "keel/core/error.hpp"
#include "keel/runtime/backend.hpp"
#include "keel/runtime/stream.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/**
 * @brief An allocation of @p Kind memory bound to a stream: destroying or
 * resetting it releases the memory in that stream's order, so work issued
 * before the release never reads freed memory. span() shares ownership, for
 * work (and models) that must keep it alive longer.
 *
 * Ownership: unique (get, release, reset, swap); moved-from is empty. Thread
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

 public:
  /// The backend's native handle type.
  using native_handle_type = typename B::buffer_handle;
  /// Whether the buffer is device or pinned host memory.
  static constexpr memory_kind kind = Kind;

  basic_buffer() noexcept = default;
  /** @brief Allocates @p bytes, to be released in @p stream's order. */
  basic_buffer(basic_stream_ref<B> stream, std::size_t bytes)
      : handle_(B::allocate(stream.checked("keel::buffer"), bytes, Kind)) {}
  /** @brief Takes ownership of a native allocation made elsewhere. */
  static basic_buffer adopt(native_handle_type native) {
    if (native == native_handle_type{}) throw_error(errc::null_parameter, "keel::buffer::adopt", "null buffer");
    basic_buffer b;
    b.handle_ = native;
    return b;
  }
  /// Takes the other object's handle; the other is left empty.
  basic_buffer(basic_buffer&& o) noexcept : handle_(std::exchange(o.handle_, native_handle_type{})) {}
  /// Releases what this holds, then takes the other object's handle; the other is left empty.
  basic_buffer& operator=(basic_buffer&& o) noexcept {
    reset(o.release());
    return *this;
  }
  basic_buffer(const basic_buffer&) = delete;
  basic_buffer& operator=(const basic_buffer&) = delete;
  ~basic_buffer() { reset(); }

  /// The native handle, null when empty.
  native_handle_type get() const noexcept { return handle_; }
  /// The native handle, null when empty.
  native_handle_type native_handle() const noexcept { return handle_; }
  /// Gives up ownership: returns the handle and leaves this empty; the caller destroys it.
  native_handle_type release() noexcept { return std::exchange(handle_, native_handle_type{}); }
  /** @brief Releases the owned memory in stream order and takes @p native. */
  void reset(native_handle_type native = native_handle_type{}) noexcept {
    native_handle_type old = std::exchange(handle_, native);
    if (old != native_handle_type{} && old != native) B::free_async(old);
  }
  /// Whether this holds a handle.
  explicit operator bool() const noexcept { return handle_ != native_handle_type{}; }
  /// Exchanges what this and the other object hold.
  void swap(basic_buffer& o) noexcept { std::swap(handle_, o.handle_); }
  friend void swap(basic_buffer& a, basic_buffer& b) noexcept { a.swap(b); }

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
    if (handle_ == native_handle_type{}) detail::throw_empty(api);
    return handle_;
  }
  native_handle_type handle_{};
};

template <class B>
using basic_device_buffer = basic_buffer<B, memory_kind::device>;
template <class B>
using basic_pinned_buffer = basic_buffer<B, memory_kind::pinned_host>;

KEEL_END_NAMESPACE  // namespace keel
