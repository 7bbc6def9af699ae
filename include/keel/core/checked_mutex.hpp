// SPDX-License-Identifier: Apache-2.0
// checked_mutex_policy: a std::shared_mutex that turns a thread re-locking a
// mutex it holds into keel::error (errc::would_deadlock) instead of a hang.
// For debug builds; in a header of its own so that the other policies cost
// their includers nothing of its bookkeeping (<sstream>, <thread>, <vector>).
#pragma once

#include <algorithm>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "keel/core/config.hpp"
#include "keel/core/error.hpp"
#include "keel/core/mutex_policy.hpp"

KEEL_BEGIN_NAMESPACE

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
