// SPDX-License-Identifier: Apache-2.0
// basic_context (owning), basic_context_ref (non-owning) and
// basic_context_scope (makes a context current on the calling thread and
// restores the one before): CANN's aclrtContext, on any backend with the
// context layer.
#pragma once

#include <cstddef>
#include <thread>
#include <utility>

#include "keel/core/error.hpp"
#include "keel/runtime/backend/context.hpp"
#include "keel/runtime/backend/native.hpp"
#include "keel/runtime/stream.hpp"

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

// The operations a context offers, shared by the owner and the view: Derived
// is the view, whose backend handle detail::handle_access reaches.
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

 private:
  typename B::context_handle checked(const char* api) const {
    return checked_handle(static_cast<const Derived&>(*this), api);
  }
};
}  // namespace detail
/// @endcond

/**
 * @brief A non-owning view of a context: of a keel context (every
 * basic_context is one, by derivation), of the calling thread's current one
 * (basic_context_ref<B>::current(device)), or of a native context made
 * elsewhere, from its native handle.
 *
 * Ownership: none; the context must outlive the view. Thread safety: a
 * value; use from any thread. Exceptions: calls throw keel::error; an empty
 * view throws invalid_handle.
 */
template <KEEL_CONTEXT_BACKEND B>
class basic_context_ref : public detail::context_ops<basic_context_ref<B>, B> {
  using native_of = detail::native_of<B, typename B::context_handle>;

 public:
  /// The vendor's context handle (aclrtContext on ACL; the backend's own handle where it has no vendor).
  using native_handle_type = typename native_of::type;
  /// The backend's device type.
  using device_type = typename B::device_type;

  /** @brief An empty view. */
  constexpr basic_context_ref() noexcept = default;

  /**
   * @brief Views @p native, a context of @p dev made elsewhere (or a keel
   * context's native_handle()); keel never destroys it. Every view of one
   * native context is equal. @throws keel::error null_parameter;
   * invalid_parameter when it is a context of another device.
   */
  basic_context_ref(device_type& dev, native_handle_type native) : handle_(view(dev, native, "keel::context_ref")) {}
  basic_context_ref(device_type&, std::nullptr_t) = delete;  ///< a null context is no context to view
  basic_context_ref(device_type&, int) = delete;             ///< 0 is no context to view

  /** @brief The calling thread's current context on @p dev's runtime (aclrtGetCurrentContext); empty when none. */
  static basic_context_ref current(device_type& dev) {
    return basic_context_ref(detail::from_handle, B::current_context(dev));
  }

  /// The vendor's native handle (aclrtContext on ACL), null when empty.
  native_handle_type native_handle() const noexcept { return native_of::to(handle_); }
  /// Whether this holds a handle.
  constexpr explicit operator bool() const noexcept { return handle_ != typename B::context_handle{}; }
  /// Whether both view the same context (or both are empty).
  friend constexpr bool operator==(const basic_context_ref& a, const basic_context_ref& b) noexcept {
    return a.handle_ == b.handle_;
  }
  /// Whether they view different contexts.
  friend constexpr bool operator!=(const basic_context_ref& a, const basic_context_ref& b) noexcept {
    return !(a == b);
  }

  /// @cond
  constexpr basic_context_ref(detail::from_handle_t, typename B::context_handle h) noexcept : handle_(h) {}
  /// @endcond

 protected:
  /// @cond
  static typename B::context_handle view(device_type& dev, native_handle_type native, const char* api,
                                         adoption how = adoption::view) {
    const auto h = detail::view_native<B, typename B::context_handle>(dev, native, how, api, "context");
    if (&B::context_device(h) != &dev) detail::throw_of_other_device(api, "context");
    return h;
  }

  typename B::context_handle handle_{};  // the backend's handle (its record of the context); null when empty
                                         /// @endcond

 private:
  friend struct detail::handle_access;
};

/**
 * @brief An owning context on a device (aclrtCreateContext /
 * aclrtDestroyContext). Making it is not making it current: use
 * basic_context_scope or make_current(). It is a basic_context_ref too, so
 * whatever takes a view takes the context.
 *
 * Ownership: unique, like unique_ptr (release, reset, swap); destroying it
 * while a thread still has it current defers the destruction until the last
 * such thread switches away (close() refuses instead). Never assign to it
 * through a reference to its basic_context_ref base. Thread safety: make it
 * current on any number of threads; the handle itself is not synchronised.
 * Exceptions: calls throw keel::error; the destructor is noexcept.
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
class basic_context : public basic_context_ref<B> {
  using base = basic_context_ref<B>;
  using traits = detail::context_traits<B>;
  using native_of = detail::native_of<B, typename B::context_handle>;

 public:
  /// The vendor's context handle (see basic_context_ref).
  using native_handle_type = typename base::native_handle_type;
  /// The backend's device type.
  using device_type = typename B::device_type;

  /** @brief An empty context. */
  basic_context() noexcept = default;
  /** @brief Makes a context on @p dev. */
  explicit basic_context(device_type& dev) : base(detail::from_handle, B::create_context(dev)) {}
  /**
   * @brief Takes ownership of @p native, a context of @p dev made elsewhere
   * (or one release() gave up): destroying the result destroys it.
   * @throws keel::error null_parameter; invalid_parameter when a keel
   * context owns it already or it is a context of another device, where the
   * backend can tell (ACL's registry can; the host's native handle is its own
   * handle, so it cannot tell a second owner).
   */
  static basic_context from_native_handle(device_type& dev, native_handle_type native) {
    return basic_context(base::view(dev, native, "keel::context::from_native_handle", adoption::own));
  }
  static basic_context from_native_handle(device_type&, std::nullptr_t) = delete;  ///< no context to own
  static basic_context from_native_handle(device_type&, int) = delete;             ///< no context to own

  /// Takes the other object's handle; the other is left empty.
  basic_context(basic_context&& o) noexcept : base(detail::from_handle, std::exchange(o.handle_, {})) {}
  /// Destroys what this holds (deferred while current somewhere), then takes the other's; the other is left empty.
  basic_context& operator=(basic_context&& o) noexcept {
    detail::replace_owned<traits>(this->handle_, std::exchange(o.handle_, {}));
    return *this;
  }
  basic_context(const basic_context&) = delete;
  basic_context& operator=(const basic_context&) = delete;
  ~basic_context() { reset(); }

  /**
   * @brief Gives up ownership: returns the native context and leaves this
   * empty; the caller destroys it (or gives it back through
   * from_native_handle). Views of it stay valid while it lives.
   */
  [[nodiscard]] native_handle_type release() noexcept { return native_of::release(std::exchange(this->handle_, {})); }
  /** @brief Destroys the owned context (deferred while a thread has it current); this is left empty. */
  void reset() noexcept { detail::replace_owned<traits>(this->handle_, typename B::context_handle{}); }
  /// Exchanges what this and the other object hold.
  void swap(basic_context& other) noexcept { std::swap(this->handle_, other.handle_); }
  /// Exchanges what @p a and @p b hold.
  friend void swap(basic_context& a, basic_context& b) noexcept { a.swap(b); }

  /**
   * @brief Destroys the context now. @throws keel::error invalid_state when
   * a thread still has it current (the context is unchanged and usable);
   * invalid_handle when empty.
   */
  void close() {
    B::close_context(detail::checked_handle(*this, "keel::context::close"));
    this->handle_ = typename B::context_handle{};
  }

  /** @brief A non-owning view (the context is one already: this copies it as a plain view). */
  basic_context_ref<B> ref() const noexcept { return *this; }

 private:
  friend struct detail::handle_access;
  explicit basic_context(typename B::context_handle h) noexcept : base(detail::from_handle, h) {}
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
 * so scopes nest and end in reverse order). Destroyed on another thread, it
 * reports invalid_state to keel's error handler and changes nothing: no
 * thread's current context can be restored from there, so the context stays
 * current on the scope's thread, held until that thread ends (a check of
 * the thread id, one call at construction and one at destruction).
 * Exceptions: the constructor throws keel::error (invalid_handle for an
 * empty context) and changes nothing; the destructor is noexcept and
 * reports a runtime failure to keel's error handler.
 */
template <KEEL_CONTEXT_BACKEND B>
class basic_context_scope {
 public:
  /** @brief Makes @p context current (aclrtGetCurrentContext, then aclrtSetCurrentContext). */
  explicit basic_context_scope(basic_context_ref<B> context)
      : dev_(&B::context_device(detail::checked_handle(context, "keel::context_scope"))),
        context_(detail::handle_of(context)),
        previous_(B::enter_context(*dev_, context_)) {}
  basic_context_scope(const basic_context_scope&) = delete;
  basic_context_scope& operator=(const basic_context_scope&) = delete;
  ~basic_context_scope() {
    if (std::this_thread::get_id() != owner_) {
      report_error(errc::invalid_state, "keel::context_scope",
                   "destroyed on a thread other than the one that made it: a scope belongs to its thread; nothing "
                   "was restored, its context stays current there until that thread ends");
      return;
    }
    B::leave_context(*dev_, context_, previous_);
  }

  /** @brief The context that was current when the scope began (empty: none). */
  basic_context_ref<B> previous() const noexcept { return basic_context_ref<B>(detail::from_handle, previous_); }

 private:
  typename B::device_type* dev_;
  typename B::context_handle context_;
  typename B::context_handle previous_;
  std::thread::id owner_ = std::this_thread::get_id();  // the thread it belongs to
};

/** @brief The context layer's handles under short names: `context`, `context_ref`, `context_scope`. */
#define KEEL_RUNTIME_CONTEXT_ALIASES(B)               \
  using context = ::keel::basic_context<B>;           \
  using context_ref = ::keel::basic_context_ref<B>;   \
  using context_scope = ::keel::basic_context_scope<B>;

KEEL_END_NAMESPACE  // namespace keel
