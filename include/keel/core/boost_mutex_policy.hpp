// SPDX-License-Identifier: Apache-2.0
// Mutex policies over Boost.Thread; link keel::boost_sync (it brings
// libboost_thread, which boost::shared_mutex needs even when "header-only").
#pragma once

#include <string_view>

#include <boost/thread/shared_mutex.hpp>

#include "keel/core/config.hpp"
#include "keel/core/mutex_policy.hpp"

KEEL_BEGIN_NAMESPACE

/** @brief Readers in parallel, writers alone, through boost::shared_mutex. */
struct boost_shared_mutex_policy {
  /// The mutex type the policy locks.
  using mutex_type = boost::shared_mutex;
  /// The policy's name, as error messages print it.
  static constexpr std::string_view name = "boost";
  /// Whether the policy excludes other threads (false only for the null policy).
  static constexpr bool is_thread_safe = true;
};

/**
 * @brief Through boost::upgrade_mutex: besides shared and exclusive locks it
 * offers an upgrade lock (one reader that may become the writer without
 * letting another writer in between); guarded::upgrade uses it.
 */
struct boost_upgrade_mutex_policy {
  /// The mutex type the policy locks.
  using mutex_type = boost::upgrade_mutex;
  /// The policy's name, as error messages print it.
  static constexpr std::string_view name = "upgrade";
  /// Whether the policy excludes other threads (false only for the null policy).
  static constexpr bool is_thread_safe = true;
};

KEEL_END_NAMESPACE  // namespace keel
