// SPDX-License-Identifier: Apache-2.0
// basic_context (owning), basic_context_ref (non-owning) and
// basic_context_scope (makes a context current on the calling thread and
// restores the one before): CANN's aclrtContext, on any backend with the
// context layer.
#pragma once

#include "keel/core/error.hpp"
#include "keel/core/unique_handle.hpp"
#include "keel/runtime/backend/context.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail {
template <class B>
struct context_traits {
  using native_type = typename B::context_handle;
  static constexpr native_type null() noexcept { return native_type{}; }
  static void close(native_type h) noexcept { B::destroy_context(h); }
};

template <class Derived, class B>
class context_ops {
  static_assert(context_layer::check<B>::value);  // names the missing call of the context layer

 public:
  /// The backend.
  using backend_type = B;
  /// The backend's device type.
  using device_type = typename B::device_type;

  /** @brief The device the context belongs to. @throws keel::error invalid_handle when empty. */
  device_type& device() const { return B::context_device(checked("keel::context::device")); }

  /**
   * @brief Makes the context the calling thread's current one
   * (aclrtSetCurrentContext), until another is made current; prefer
   * basic_context_scope, which restores the previous one.
   */
  void make_current() const { B::set_current_context(checked("keel::context::make_current")); }

  /** @brief Whether the context is the calling thread's current one. */
  bool is_current() const {
    const auto h = checked("keel::context::is_current");
    return B::current_context(B::context_device(h)) == h;
  }

  typename B::context_handle checked(const char* api) const {
    auto h = static_cast<const Derived&>(*this).native_handle();
    if (h == typename B::context_handle{})
      throw_error(errc::invalid_handle, api, "the context handle is empty: it was moved from, released, closed or never made");
    return h;
  }
};
}  // namespace detail
/// @endcond

/**
 * @brief A non-owning view of a context (one keel made, or the calling
 * thread's current one, basic_context_ref<B>::current(device)).
 *
 * Ownership: none; the context must outlive the view. Thread safety: a
 * value; use from any thread. Exceptions: calls throw keel::error; an empty
 * view throws invalid_handle.
 */
template <KEEL_CONTEXT_BACKEND B>
class basic_context_ref : public detail::context_ops<basic_context_ref<B>, B> {
 public:
  /// The backend's native handle type.
  using native_handle_type = typename B::context_handle;

  /** @brief An empty view. */
  constexpr basic_context_ref() noexcept = default;
  /** @brief A view of @p native. */
  constexpr explicit basic_context_ref(native_handle_type native) noexcept : native_(native) {}

  /** @brief The calling thread's current context on @p dev's runtime (aclrtGetCurrentContext); empty when none. */
  static basic_context_ref current(typename B::device_type& dev) { return basic_context_ref(B::current_context(dev)); }

  /// The native handle, null when empty.
  constexpr native_handle_type native_handle() const noexcept { return native_; }
  /// Whether this holds a handle.
  constexpr explicit operator bool() const noexcept { return native_ != native_handle_type{}; }
  friend constexpr bool operator==(basic_context_ref a, basic_context_ref b) noexcept { return a.native_ == b.native_; }
  friend constexpr bool operator!=(basic_context_ref a, basic_context_ref b) noexcept { return !(a == b); }

 private:
  native_handle_type native_{};
};

/**
 * @brief An owning context on a device (aclrtCreateContext /
 * aclrtDestroyContext). Making it is not making it current: use
 * basic_context_scope or make_current().
 *
 * Ownership: unique, like unique_ptr; destroying it while a thread still has
 * it current defers the destruction until the last such thread switches away
 * (close() refuses instead). Thread safety: make it current on any number of
 * threads; the handle itself is not synchronised. Exceptions: calls throw
 * keel::error; the destructor is noexcept.
 *
 * @code
 * keel::host::context ctx{dev};
 * {
 *   keel::host::context_scope current{ctx};   // ctx is this thread's context
 *   ...
 * }                                          // the previous one is back
 * @endcode
 */
template <KEEL_CONTEXT_BACKEND B>
class basic_context : public detail::context_ops<basic_context<B>, B> {
  using handle_type = unique_handle<detail::context_traits<B>>;

 public:
  /// The backend's native handle type.
  using native_handle_type = typename B::context_handle;
  /// The backend's device type.
  using device_type = typename B::device_type;

  /** @brief An empty context. */
  basic_context() noexcept = default;
  /** @brief Makes a context on @p dev. */
  explicit basic_context(device_type& dev) : handle_(B::create_context(dev)) {}

  /// Takes the other object's handle; the other is left empty.
  basic_context(basic_context&&) noexcept = default;
  /// Destroys what this holds (deferred while current somewhere), then takes the other's.
  basic_context& operator=(basic_context&&) noexcept = default;

  /// The native handle, null when empty.
  native_handle_type native_handle() const noexcept { return handle_.get(); }
  /// Whether this holds a handle.
  explicit operator bool() const noexcept { return static_cast<bool>(handle_); }

  /**
   * @brief Destroys the context now. @throws keel::error invalid_state when
   * a thread still has it current (the context is unchanged and usable);
   * invalid_handle when empty.
   */
  void close() {
    B::close_context(this->checked("keel::context::close"));
    (void)handle_.release();
  }

  /** @brief A non-owning view. */
  basic_context_ref<B> ref() const noexcept { return basic_context_ref<B>(handle_.get()); }
  /// Converts to a non-owning view of the same handle.
  operator basic_context_ref<B>() const noexcept { return ref(); }

 private:
  handle_type handle_;
};

/**
 * @brief Makes a context current on the calling thread for the scope's life,
 * then restores the context that was current before (none: the thread is
 * left with no context keel made current).
 *
 * Ownership: holds the context (its destruction waits for the scope; close()
 * refuses meanwhile); the context current before is held by whoever made it
 * current, so it is there to restore. Thread
 * safety: belongs to the thread that made it (neither copyable nor movable,
 * so scopes nest and end in reverse order). Exceptions: the constructor
 * throws keel::error (invalid_handle for an empty context) and changes
 * nothing; the destructor is noexcept and reports a runtime failure to
 * keel's error handler.
 */
template <KEEL_CONTEXT_BACKEND B>
class basic_context_scope {
 public:
  /** @brief Makes @p context current (aclrtGetCurrentContext, then aclrtSetCurrentContext). */
  explicit basic_context_scope(basic_context_ref<B> context)
      : dev_(&B::context_device(context.checked("keel::context_scope"))),
        context_(context.native_handle()),
        previous_(B::enter_context(*dev_, context_)) {}
  basic_context_scope(const basic_context_scope&) = delete;
  basic_context_scope& operator=(const basic_context_scope&) = delete;
  ~basic_context_scope() { B::leave_context(*dev_, context_, previous_); }

  /** @brief The context that was current when the scope began (empty: none). */
  basic_context_ref<B> previous() const noexcept { return basic_context_ref<B>(previous_); }

 private:
  typename B::device_type* dev_;
  typename B::context_handle context_;
  typename B::context_handle previous_;
};

/** @brief The context layer's handles under short names: `context`, `context_ref`, `context_scope`. */
#define KEEL_RUNTIME_CONTEXT_ALIASES(B)               \
  using context = ::keel::basic_context<B>;           \
  using context_ref = ::keel::basic_context_ref<B>;   \
  using context_scope = ::keel::basic_context_scope<B>;

KEEL_END_NAMESPACE  // namespace keel
