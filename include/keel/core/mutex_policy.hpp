// SPDX-License-Identifier: Apache-2.0
// Mutex policies: template parameters that choose how keel's shared state is
// locked (std::shared_mutex, no locking, or a self-deadlock-checking mutex).
#pragma once

#include <algorithm>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "keel/core/error.hpp"

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

/**
 * A std::shared_mutex that remembers which threads hold it, so that a thread
 * asking again for a lock it already holds (exclusive after exclusive,
 * exclusive after shared, shared after exclusive, shared after shared: each
 * can hang behind a waiting writer) gets keel::errc::would_deadlock at once.
 * The bookkeeping is per mutex under a small internal mutex: no thread-local
 * state, nothing shared between mutexes.
 */
class checked_shared_mutex {
 public:
  void lock() {
    claim("lock", true);
    mutex_.lock();
  }
  bool try_lock() {
    claim("try_lock", true);
    if (mutex_.try_lock()) return true;
    unclaim();
    return false;
  }
  void unlock() {
    unclaim();
    mutex_.unlock();
  }
  void lock_shared() {
    claim("lock_shared", false);
    mutex_.lock_shared();
  }
  bool try_lock_shared() {
    claim("try_lock_shared", false);
    if (mutex_.try_lock_shared()) return true;
    unclaim();
    return false;
  }
  void unlock_shared() {
    unclaim();
    mutex_.unlock_shared();
  }

  /** Whether the calling thread holds this mutex in either mode. */
  bool held_by_this_thread() const {
    std::lock_guard<std::mutex> lock(book_mutex_);
    return std::find(holders_.begin(), holders_.end(), std::this_thread::get_id()) != holders_.end();
  }

 private:
  void claim(const char* api, bool exclusive) {
    const auto self = std::this_thread::get_id();
    std::lock_guard<std::mutex> lock(book_mutex_);
    if (std::find(holders_.begin(), holders_.end(), self) != holders_.end()) {
      std::ostringstream rule;
      rule << "thread " << self << " asked for " << (exclusive ? "an exclusive" : "a shared")
           << " lock on a mutex it already holds (a registry or guarded object re-entered from inside "
              "its own lock); waiting would deadlock";
      throw_error(errc::would_deadlock, std::string("checked_shared_mutex::") + api, rule.str());
    }
    holders_.push_back(self);
  }
  void unclaim() noexcept {
    const auto self = std::this_thread::get_id();
    std::lock_guard<std::mutex> lock(book_mutex_);
    auto it = std::find(holders_.begin(), holders_.end(), self);
    if (it != holders_.end()) holders_.erase(it);
  }

  std::shared_mutex mutex_;
  mutable std::mutex book_mutex_;
  std::vector<std::thread::id> holders_;
};

// Whether the calling thread holds `m` in either mode, for mutexes that
// track their holders (checked_shared_mutex); false for those that cannot
// tell. If asking fails, the answer is "held": a caller about to lock then
// refuses rather than risk waiting on itself.
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

/**
 * @brief For debug builds: like std_shared_mutex_policy, but a thread that
 * locks a mutex it already holds gets keel::error (errc::would_deadlock)
 * instead of hanging. Costs a second small mutex per lock and unlock.
 */
struct checked_mutex_policy {
  /// The mutex type the policy locks.
  using mutex_type = detail::checked_shared_mutex;
  /// The policy's name, as error messages print it.
  static constexpr std::string_view name = "checked";
  /// Whether the policy excludes other threads (false only for the null policy).
  static constexpr bool is_thread_safe = true;
};

KEEL_END_NAMESPACE  // namespace keel
