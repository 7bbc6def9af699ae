// SPDX-License-Identifier: Apache-2.0
// Dismissable scope guards after the Library Fundamentals TS v3: scope_exit,
// scope_fail and scope_success, plus the KEEL_SCOPE_* statement macros.
#pragma once

#include <exception>
#include <type_traits>
#include <utility>

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE
namespace detail {

// When a guard should run its callable, decided at destruction. run_always
// is empty, so a scope_exit stores nothing for it (an empty base).
struct run_always {
  static constexpr bool nothrow_destructor = true;
  bool should_run() const noexcept { return true; }
};

struct run_on_failure {
  static constexpr bool nothrow_destructor = true;
  // Compared with the count at destruction, so a guard created inside a
  // destructor that runs during unwinding does not mistake that unwinding
  // for its own scope failing.
  int exceptions_at_construction = std::uncaught_exceptions();
  bool should_run() const noexcept { return std::uncaught_exceptions() > exceptions_at_construction; }
};

struct run_on_success {
  static constexpr bool nothrow_destructor = false;
  int exceptions_at_construction = std::uncaught_exceptions();
  bool should_run() const noexcept { return std::uncaught_exceptions() <= exceptions_at_construction; }
};

// Holds the guard's callable: as an empty base when it is an empty class
// (a lambda that captures nothing, a stateless function object), so it adds
// no byte to the guard, as Boost.Scope's guards do; as a member otherwise
// (a capturing lambda, a function pointer, a reference to a function).
template <class F, bool AsBase = std::is_class_v<F> && std::is_empty_v<F> && !std::is_final_v<F>>
class callable_storage {
 public:
  template <class Fn>
  explicit callable_storage(Fn&& fn) noexcept(std::is_nothrow_constructible_v<F, Fn>) : f_(std::forward<Fn>(fn)) {}
  F& callable() noexcept { return f_; }

 private:
  F f_;
};

template <class F>
class callable_storage<F, true> : private F {
 public:
  template <class Fn>
  explicit callable_storage(Fn&& fn) noexcept(std::is_nothrow_constructible_v<F, Fn>) : F(std::forward<Fn>(fn)) {}
  F& callable() noexcept { return *this; }
};

// The guard: the callable and the condition as (usually empty) private
// bases, and one bool. A scope_exit of an empty callable is one byte.
template <class F, class Condition>
class basic_scope_guard : private callable_storage<F>, private Condition {
  static_assert(std::is_invocable_v<F&>, "keel scope guard: the callable must be invocable with no arguments");
  using storage = callable_storage<F>;

 public:
  // LFTS v3 [scopeguard.exit]: if storing the callable throws, an exit or
  // fail guard still runs it (the cleanup must not be lost); success does not.
  template <class Fn, std::enable_if_t<!std::is_same_v<std::remove_cv_t<std::remove_reference_t<Fn>>,
                                                       basic_scope_guard> &&
                                           std::is_constructible_v<F, Fn>,
                                       int> = 0>
  explicit basic_scope_guard(Fn&& fn) noexcept(std::is_nothrow_constructible_v<F, Fn> ||
                                               std::is_nothrow_constructible_v<F, Fn&>)
      : basic_scope_guard(std::forward<Fn>(fn), construct_tag{}) {}

  basic_scope_guard(basic_scope_guard&& other) noexcept(std::is_nothrow_move_constructible_v<F> ||
                                                        std::is_nothrow_copy_constructible_v<F>)
      : storage(std::move_if_noexcept(other.callable())), Condition(other.condition()), active_(other.active_) {
    other.dismiss();
  }

  basic_scope_guard(const basic_scope_guard&) = delete;
  basic_scope_guard& operator=(const basic_scope_guard&) = delete;
  basic_scope_guard& operator=(basic_scope_guard&&) = delete;

  ~basic_scope_guard() noexcept(Condition::nothrow_destructor || std::is_nothrow_invocable_v<F&>) {
    if (active_ && condition().should_run()) this->callable()();
  }

  /** @brief The guard will not run its callable (LFTS v3's release(), Boost.Scope's set_active(false)). */
  void dismiss() noexcept { active_ = false; }
  /** @brief Whether the guard will still run its callable. */
  [[nodiscard]] bool active() const noexcept { return active_; }

 private:
  struct construct_tag {};

  template <class Fn>
  basic_scope_guard(Fn&& fn, construct_tag) try : storage(forward_if_nothrow<Fn>(fn)) {
  } catch (...) {
    if constexpr (Condition::nothrow_destructor) fn();  // exit and fail: never lose the cleanup
  }

  // Copy an lvalue, or an rvalue whose move may throw, so that the original
  // is still there to call if storing it fails (LFTS v3).
  template <class Fn>
  static decltype(auto) forward_if_nothrow(Fn& fn) noexcept {
    if constexpr (!std::is_lvalue_reference_v<Fn> && std::is_nothrow_constructible_v<F, Fn>) {
      return std::move(fn);
    } else {
      return static_cast<Fn&>(fn);
    }
  }

  const Condition& condition() const noexcept { return *this; }

  bool active_ = true;
};

}  // namespace detail

/**
 * @brief Runs a callable when the scope is left, however it is left, unless dismissed.
 *
 * Ownership: owns a decayed copy of the callable (an empty one as an empty
 * base: a scope_exit of a captureless lambda is one bool). Not copyable,
 * movable (the source is dismissed). Thread safety: none. Exceptions: the
 * destructor is noexcept; a callable that throws terminates.
 *
 * @code
 * void* p = std::malloc(n);
 * keel::scope_exit free_it{[&] { std::free(p); }};
 * if (!init(p)) return;            // freed
 * hand_over(p); free_it.dismiss(); // kept
 * @endcode
 */
template <class F>
class [[nodiscard]] scope_exit : public detail::basic_scope_guard<F, detail::run_always> {
  using base = detail::basic_scope_guard<F, detail::run_always>;

 public:
  using base::base;
};

/**
 * @brief Runs a callable only when the scope is left by an exception (one
 * thrown after the guard was created), unless dismissed: the rollback guard.
 *
 * Ownership: owns a decayed copy of the callable; movable, not copyable.
 * Thread safety: none. Exceptions: the destructor is noexcept.
 */
template <class F>
class [[nodiscard]] scope_fail : public detail::basic_scope_guard<F, detail::run_on_failure> {
  using base = detail::basic_scope_guard<F, detail::run_on_failure>;

 public:
  using base::base;
};

/**
 * @brief Runs a callable only when the scope is left normally, unless dismissed.
 *
 * Ownership: owns a decayed copy of the callable; movable, not copyable.
 * Thread safety: none. Exceptions: the destructor may throw what the callable
 * throws (it is noexcept only if the callable is), as in LFTS v3.
 */
template <class F>
class [[nodiscard]] scope_success : public detail::basic_scope_guard<F, detail::run_on_success> {
  using base = detail::basic_scope_guard<F, detail::run_on_success>;

 public:
  using base::base;
};

template <class F>
scope_exit(F) -> scope_exit<F>;
template <class F>
scope_fail(F) -> scope_fail<F>;
template <class F>
scope_success(F) -> scope_success<F>;

/** @brief Factory form for code that prefers auto over CTAD. */
template <class F>
[[nodiscard]] scope_exit<std::decay_t<F>> make_scope_exit(F&& f) {
  return scope_exit<std::decay_t<F>>(std::forward<F>(f));
}
template <class F>
[[nodiscard]] scope_fail<std::decay_t<F>> make_scope_fail(F&& f) {
  return scope_fail<std::decay_t<F>>(std::forward<F>(f));
}
template <class F>
[[nodiscard]] scope_success<std::decay_t<F>> make_scope_success(F&& f) {
  return scope_success<std::decay_t<F>>(std::forward<F>(f));
}

namespace detail {
// `KEEL_SCOPE_EXIT { ... };` expands to `auto unique = tag + [&]() { ... };`
enum class scope_exit_tag {};
enum class scope_fail_tag {};
enum class scope_success_tag {};
template <class F>
scope_exit<std::decay_t<F>> operator+(scope_exit_tag, F&& f) {
  return scope_exit<std::decay_t<F>>(std::forward<F>(f));
}
template <class F>
scope_fail<std::decay_t<F>> operator+(scope_fail_tag, F&& f) {
  return scope_fail<std::decay_t<F>>(std::forward<F>(f));
}
template <class F>
scope_success<std::decay_t<F>> operator+(scope_success_tag, F&& f) {
  return scope_success<std::decay_t<F>>(std::forward<F>(f));
}
}  // namespace detail

KEEL_END_NAMESPACE  // namespace keel

#define KEEL_DETAIL_CONCAT_IMPL(a, b) a##b
#define KEEL_DETAIL_CONCAT(a, b) KEEL_DETAIL_CONCAT_IMPL(a, b)
#define KEEL_DETAIL_GUARD(tag) \
  [[maybe_unused]] auto KEEL_DETAIL_CONCAT(keel_scope_guard_, __COUNTER__) = ::keel::detail::tag{} + [&]()

/** @brief `KEEL_SCOPE_EXIT { cleanup(); };` runs the block when the scope is left. Not dismissable: name a keel::scope_exit for that. */
#define KEEL_SCOPE_EXIT KEEL_DETAIL_GUARD(scope_exit_tag)
/** @brief `KEEL_SCOPE_FAIL { rollback(); };` runs the block when the scope is left by an exception. */
#define KEEL_SCOPE_FAIL KEEL_DETAIL_GUARD(scope_fail_tag)
/** @brief `KEEL_SCOPE_SUCCESS { commit(); };` runs the block when the scope is left normally. */
#define KEEL_SCOPE_SUCCESS KEEL_DETAIL_GUARD(scope_success_tag)
