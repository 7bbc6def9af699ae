// SPDX-License-Identifier: Apache-2.0
// guarded<T, Policy>: data that can only be reached under its lock, read
// under a shared one and changed under an exclusive one.
#pragma once

#include <mutex>
#include <shared_mutex>
#include <type_traits>
#include <utility>

#include "keel/core/config.hpp"
#include "keel/core/mutex_policy.hpp"

KEEL_BEGIN_NAMESPACE
namespace detail {

template <class M, class = void>
struct has_upgrade_lock : std::false_type {};
template <class M>
struct has_upgrade_lock<M, std::void_t<decltype(std::declval<M&>().lock_upgrade()),
                                       decltype(std::declval<M&>().unlock_upgrade_and_lock()),
                                       decltype(std::declval<M&>().unlock_upgrade())>> : std::true_type {};

// Keeps an empty mutex (null_shared_mutex) from costing a byte and padding.
template <class Mutex, bool = std::is_empty_v<Mutex>>
struct mutex_holder {
  Mutex& mutex() const noexcept { return mutex_; }
  mutable Mutex mutex_;
};
template <class Mutex>
struct mutex_holder<Mutex, true> : private Mutex {
  Mutex& mutex() const noexcept { return const_cast<mutex_holder&>(*this); }
};

}  // namespace detail

/**
 * @brief A T that can be reached only through read(f) (shared lock, f gets a
 * const T&) and write(f) (exclusive lock, f gets a T&).
 *
 * Ownership: owns the T and its mutex; neither copyable nor movable.
 * Thread safety: as the policy: every member is safe to call concurrently
 * unless the policy is null_mutex_policy. Exceptions: whatever f or T's
 * constructor throws, after the lock is released; the lock is never leaked.
 *
 * @code
 * keel::guarded<std::map<std::string, int>, keel::std_shared_mutex_policy> table;
 * table.write([](auto& m) { m["answer"] = 42; });
 * int v = table.read([](const auto& m) { return m.at("answer"); });
 * @endcode
 *
 * Do not call back into the same guarded object from inside f: with the std
 * and Boost policies that deadlocks; checked_mutex_policy reports it.
 */
template <class T, class Policy = std_shared_mutex_policy>
class guarded : private detail::mutex_holder<typename Policy::mutex_type> {
  static_assert(is_mutex_policy_v<Policy>,
                "guarded<T, Policy>: Policy must name a SharedMutex mutex_type, a name and is_thread_safe");
  using holder = detail::mutex_holder<typename Policy::mutex_type>;

 public:
  /// The type of the protected value.
  using value_type = T;
  /// The mutex policy.
  using policy_type = Policy;
  /// The mutex type of the policy.
  using mutex_type = typename Policy::mutex_type;

  /** @brief Constructs the T in place from @p args. */
  template <class... Args, std::enable_if_t<std::is_constructible_v<T, Args...>, int> = 0>
  explicit guarded(Args&&... args) : value_(std::forward<Args>(args)...) {}

  guarded(const guarded&) = delete;
  guarded& operator=(const guarded&) = delete;

  /** @brief Calls f(const T&) under a shared lock and returns what f returns. */
  template <class F>
  decltype(auto) read(F&& f) const {
    std::shared_lock<mutex_type> lock(holder::mutex());
    return std::forward<F>(f)(static_cast<const T&>(value_));
  }

  /** @brief Calls f(T&) under an exclusive lock and returns what f returns. */
  template <class F>
  decltype(auto) write(F&& f) {
    std::unique_lock<mutex_type> lock(holder::mutex());
    return std::forward<F>(f)(value_);
  }

  /**
   * @brief Only for mutexes with upgrade locks (boost_upgrade_mutex_policy):
   * calls f(access) under an upgrade lock, where access.value() reads and
   * access.upgrade() returns a T& after atomically becoming the exclusive
   * owner, so a check-then-modify cannot be raced by another writer.
   */
  template <class F>
  decltype(auto) upgrade(F&& f) {
    static_assert(detail::has_upgrade_lock<mutex_type>::value,
                  "guarded::upgrade needs a mutex with upgrade locks, such as boost_upgrade_mutex_policy");
    upgrade_access access{holder::mutex(), value_};
    return std::forward<F>(f)(access);
  }

 private:
  class upgrade_access {
   public:
    upgrade_access(mutex_type& mutex, T& value) : mutex_(mutex), value_(value) { mutex_.lock_upgrade(); }
    ~upgrade_access() {
      if (exclusive_) {
        mutex_.unlock();
      } else {
        mutex_.unlock_upgrade();
      }
    }
    upgrade_access(const upgrade_access&) = delete;
    upgrade_access& operator=(const upgrade_access&) = delete;

    const T& value() const noexcept { return value_; }
    T& upgrade() {
      if (!exclusive_) {
        mutex_.unlock_upgrade_and_lock();
        exclusive_ = true;
      }
      return value_;
    }
    bool is_exclusive() const noexcept { return exclusive_; }

   private:
    mutex_type& mutex_;
    T& value_;
    bool exclusive_ = false;
  };

  T value_;
};

KEEL_END_NAMESPACE  // namespace keel
