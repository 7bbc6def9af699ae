// SPDX-License-Identifier: Apache-2.0
// unique_handle<Traits>: the move-only owner every keel resource handle is built on.
#pragma once

#include <type_traits>
#include <utility>

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/**
 * @brief What a Traits type supplies to unique_handle:
 *
 * @code
 * struct file_traits {
 *   using native_type = int;                          // trivially copyable
 *   static constexpr native_type null() noexcept { return -1; }
 *   static void close(native_type fd) noexcept;       // never throws; report failures
 * };
 * @endcode
 *
 * close() is called once for every non-null handle the owner gives up; it
 * reports failures through keel::report_error, it never throws.
 */
template <class Traits, class = void>
struct is_handle_traits : std::false_type {};

template <class Traits>
struct is_handle_traits<
    Traits, std::void_t<typename Traits::native_type, decltype(Traits::null()),
                        decltype(Traits::close(std::declval<typename Traits::native_type>()))>>
    : std::bool_constant<std::is_trivially_copyable_v<typename Traits::native_type> &&
                         noexcept(Traits::close(std::declval<typename Traits::native_type>())) &&
                         std::is_empty_v<Traits>> {};

/**
 * @brief Move-only owner of one native handle, closed through Traits::close.
 *
 * Ownership: owns the handle it holds, exactly like unique_ptr; the moved-from
 * owner holds Traits::null(). Same size as the native handle.
 * Thread safety: none of its own (like unique_ptr). Exceptions: every member
 * is noexcept; close failures go to keel's error handler.
 */
template <class Traits>
class unique_handle {
  static_assert(is_handle_traits<Traits>::value,
                "unique_handle<Traits>: Traits needs native_type (trivially copyable), "
                "static null() and static noexcept close(native_type), and no state");

 public:
  /// The traits that say how to close the handle and what null is.
  using traits_type = Traits;
  /// The native handle type of the traits.
  using native_type = typename Traits::native_type;

  /** @brief An empty owner. */
  constexpr unique_handle() noexcept : handle_(Traits::null()) {}
  /** @brief Takes ownership of @p native (which may be null). */
  constexpr explicit unique_handle(native_type native) noexcept : handle_(native) {}

  unique_handle(const unique_handle&) = delete;
  unique_handle& operator=(const unique_handle&) = delete;

  /// Takes the other object's handle; the other is left empty.
  constexpr unique_handle(unique_handle&& other) noexcept : handle_(other.release()) {}
  /// Releases what this holds, then takes the other object's handle; the other is left empty.
  unique_handle& operator=(unique_handle&& other) noexcept {
    // reset() after release() makes self-move a no-op rather than a close.
    reset(other.release());
    return *this;
  }

  ~unique_handle() { close_if_owned(handle_); }

  /** @brief The native handle, still owned. */
  constexpr native_type get() const noexcept { return handle_; }

  /** @brief Gives up ownership without closing; the owner becomes empty. */
  constexpr native_type release() noexcept {
    native_type native = handle_;
    handle_ = Traits::null();
    return native;
  }

  /** @brief Closes the owned handle (if any) and takes @p native instead. */
  void reset(native_type native = Traits::null()) noexcept {
    native_type old = handle_;
    handle_ = native;
    if (!(old == native)) close_if_owned(old);
  }

  /// Whether this holds a handle.
  constexpr explicit operator bool() const noexcept { return !(handle_ == Traits::null()); }

  /// Exchanges what this and the other object hold.
  void swap(unique_handle& other) noexcept {
    using std::swap;
    swap(handle_, other.handle_);
  }
  friend void swap(unique_handle& a, unique_handle& b) noexcept { a.swap(b); }

  friend constexpr bool operator==(const unique_handle& a, const unique_handle& b) noexcept {
    return a.handle_ == b.handle_;
  }
  friend constexpr bool operator!=(const unique_handle& a, const unique_handle& b) noexcept {
    return !(a == b);
  }

 private:
  static void close_if_owned(native_type native) noexcept {
    if (!(native == Traits::null())) Traits::close(native);
  }

  native_type handle_;
};

KEEL_END_NAMESPACE  // namespace keel
