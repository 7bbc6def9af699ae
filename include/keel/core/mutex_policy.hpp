// SPDX-License-Identifier: Apache-2.0
// Mutex policies: template parameters that choose how keel's shared state is
// locked (std::shared_mutex or no locking; the self-deadlock-checking
// checked_mutex_policy is in keel/core/checked_mutex.hpp).
#pragma once

#include <shared_mutex>
#include <string_view>
#include <type_traits>
#include <utility>

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/**
 * @brief The policy concept. A policy is a stateless struct naming a mutex
 * type that meets the standard SharedMutex requirements (lock, try_lock,
 * unlock, lock_shared, try_lock_shared, unlock_shared) and a short name for
 * diagnostics and benchmarks:
 *
 * @code
 * struct my_policy {
 *   using mutex_type = my_shared_mutex;
 *   static constexpr std::string_view name = "mine";
 *   static constexpr bool is_thread_safe = true;
 * };
 * @endcode
 */
template <class Policy, class = void>
struct is_mutex_policy : std::false_type {};

template <class Policy>
struct is_mutex_policy<
    Policy, std::void_t<typename Policy::mutex_type, decltype(Policy::name), decltype(Policy::is_thread_safe),
                        decltype(std::declval<typename Policy::mutex_type&>().lock()),
                        decltype(std::declval<typename Policy::mutex_type&>().unlock()),
                        decltype(std::declval<typename Policy::mutex_type&>().lock_shared()),
                        decltype(std::declval<typename Policy::mutex_type&>().unlock_shared())>>
    : std::true_type {};

template <class Policy>
inline constexpr bool is_mutex_policy_v = is_mutex_policy<Policy>::value;

/**
 * @brief A SharedMutex that does nothing: for data that one thread owns.
 * Empty, trivially constructible; every call compiles to nothing.
 */
struct null_shared_mutex {
  /// Does nothing: the null policy locks nothing.
  constexpr void lock() noexcept {}
  /// Always succeeds: the null policy locks nothing.
  constexpr bool try_lock() noexcept { return true; }
  /// Does nothing: the null policy locks nothing.
  constexpr void unlock() noexcept {}
  /// Does nothing: the null policy locks nothing.
  constexpr void lock_shared() noexcept {}
  /// Always succeeds: the null policy locks nothing.
  constexpr bool try_lock_shared() noexcept { return true; }
  /// Does nothing: the null policy locks nothing.
  constexpr void unlock_shared() noexcept {}
};

/** @brief Readers in parallel, writers alone, through std::shared_mutex. */
struct std_shared_mutex_policy {
  /// The mutex type the policy locks.
  using mutex_type = std::shared_mutex;
  /// The policy's name, as error messages print it.
  static constexpr std::string_view name = "std";
  /// Whether the policy excludes other threads (false only for the null policy).
  static constexpr bool is_thread_safe = true;
};

/** @brief No locking at all: zero cost, for single-threaded use only. */
struct null_mutex_policy {
  /// The mutex type the policy locks.
  using mutex_type = null_shared_mutex;
  /// The policy's name, as error messages print it.
  static constexpr std::string_view name = "null";
  /// Whether the policy excludes other threads (false only for the null policy).
  static constexpr bool is_thread_safe = false;
};

namespace detail {

// Whether the calling thread holds `m` in either mode, for mutexes that
// track their holders (checked_shared_mutex, in keel/core/checked_mutex.hpp);
// false for those that cannot tell. If asking fails, the answer is "held": a
// caller about to lock then refuses rather than risk waiting on itself.
template <class Mutex, class = void>
struct tracks_holders : std::false_type {};
template <class Mutex>
struct tracks_holders<Mutex, std::void_t<decltype(std::declval<const Mutex&>().held_by_this_thread())>>
    : std::true_type {};

template <class Mutex>
bool held_by_this_thread(const Mutex& m) noexcept {
  if constexpr (tracks_holders<Mutex>::value) {
    try {
      return m.held_by_this_thread();
    } catch (...) {
      return true;
    }
  } else {
    (void)m;
    return false;
  }
}

}  // namespace detail

KEEL_END_NAMESPACE  // namespace keel
