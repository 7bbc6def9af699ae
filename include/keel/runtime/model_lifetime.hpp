// SPDX-License-Identifier: Apache-2.0
// basic_destroy_callback: the RAII registration of a function a model calls
// when it is destroyed (aclmdlRIDestroyRegisterCallback on ACL). Dropping the
// registration unregisters it, unless the model already went (and called it).
#pragma once

#include <atomic>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <utility>

#include "keel/core/error.hpp"
#include "keel/runtime/backend/introspection.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail {
template <class Derived, class B>
class model_ops;

// Calls a destroy callback on the destroying thread, which may be a
// destructor or a runtime's C code: what it throws goes to keel's error
// reporter instead of ending the process, and the model's other callbacks
// still run.
inline void call_destroy_callback(void (*fn)(void*), void* user) noexcept {
  try {
    fn(user);
  } catch (const std::exception& e) {
    // Composed in place: a handler that allocated could throw bad_alloc out of this noexcept function.
    char text[512];
    std::snprintf(text, sizeof text, "a destroy callback threw; the model's other callbacks still run: %s", e.what());
    report_error(errc::task_failed, "keel::model (destroy callback)", text);
  } catch (...) {
    report_error(errc::task_failed, "keel::model (destroy callback)",
                 "a destroy callback threw a non-standard exception; the model's other callbacks still run");
  }
}
}  // namespace detail
/// @endcond

/**
 * @brief A destroy callback registered on a model (model.on_destroy()): the
 * model calls `fn(user)` on the thread that destroys it, once; dropping the
 * registration first unregisters it. A callback that throws is reported
 * through keel's error reporter (task_failed); the model's others still run.
 *
 * Ownership: unique (movable, reset, release, swap); holds the model's life flag, not the model.
 * Thread safety: not synchronised with the model's destruction: drop the
 * registration before the model, or after it on the destroying thread.
 * Exceptions: the destructor and release() are noexcept; an unregistration
 * the runtime refuses is reported through keel's error reporter.
 */
template <class B>
class [[nodiscard]] basic_destroy_callback {
 public:
  /// An empty registration.
  basic_destroy_callback() noexcept = default;
  /// Takes the other's registration; the other is left empty.
  basic_destroy_callback(basic_destroy_callback&& o) noexcept
      : model_(std::exchange(o.model_, typename B::model_handle{})),
        fn_(std::exchange(o.fn_, nullptr)),
        user_(o.user_),
        alive_(std::move(o.alive_)) {}
  /// Unregisters what this holds, then takes the other's registration.
  basic_destroy_callback& operator=(basic_destroy_callback&& o) noexcept {
    if (this != &o) {
      reset();
      model_ = std::exchange(o.model_, typename B::model_handle{});
      fn_ = std::exchange(o.fn_, nullptr);
      user_ = o.user_;
      alive_ = std::move(o.alive_);
    }
    return *this;
  }
  /// Unregisters the callback (see reset()).
  ~basic_destroy_callback() { reset(); }

  /// Whether the registration still stands (not moved from, reset, or its model destroyed).
  bool active() const noexcept {
    return fn_ != nullptr && (!alive_ || alive_->load(std::memory_order_acquire));
  }
  /// Unregisters the callback if its model still lives; the registration is empty afterwards.
  void reset() noexcept {
    if (active()) {
      try {
        B::remove_destroy_callback(model_, fn_, user_);
      } catch (const keel::error& e) {
        report_error(e.code(), "keel::destroy_callback", e.what());
      }
    }
    fn_ = nullptr;
    alive_.reset();
  }
  /// Gives up the registration: the callback stays registered and runs when the model goes.
  void release() noexcept {
    fn_ = nullptr;
    alive_.reset();
  }
  /// Exchanges what this and the other registration hold.
  void swap(basic_destroy_callback& other) noexcept {
    std::swap(model_, other.model_);
    std::swap(fn_, other.fn_);
    std::swap(user_, other.user_);
    alive_.swap(other.alive_);
  }
  /// Exchanges what @p a and @p b hold.
  friend void swap(basic_destroy_callback& a, basic_destroy_callback& b) noexcept { a.swap(b); }
  /// Whether both hold the same registration (the model's function and argument), or both are empty.
  friend bool operator==(const basic_destroy_callback& a, const basic_destroy_callback& b) noexcept {
    if (a.fn_ == nullptr || b.fn_ == nullptr) return a.fn_ == b.fn_;
    return a.model_ == b.model_ && a.fn_ == b.fn_ && a.user_ == b.user_;
  }
  /// Whether they hold different registrations.
  friend bool operator!=(const basic_destroy_callback& a, const basic_destroy_callback& b) noexcept {
    return !(a == b);
  }

 private:
  template <class, class>
  friend class detail::model_ops;
  basic_destroy_callback(typename B::model_handle m, void (*fn)(void*), void* user,
                         std::shared_ptr<const std::atomic<bool>> alive) noexcept
      : model_(m), fn_(fn), user_(user), alive_(std::move(alive)) {}
  typename B::model_handle model_{};
  void (*fn_)(void*) = nullptr;
  void* user_ = nullptr;
  std::shared_ptr<const std::atomic<bool>> alive_;
};

KEEL_END_NAMESPACE  // namespace keel
