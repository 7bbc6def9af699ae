// SPDX-License-Identifier: Apache-2.0
// Task-failure subscriptions on the ACL backend: one static function of
// keel's is registered with the runtime (aclrtExceptionInfoCallbackRegister)
// while any subscription exists; it tells the subscriptions of the failed
// task's device (aclrtGetDeviceIdFromExceptionInfo) of each failure.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "keel/acl/backend.hpp"
#include "keel/acl/status.hpp"
#include "keel/runtime/task_failures.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
// The subscriptions, process-wide as the runtime's callbacks are. The
// callback is registered once per function table (a loaded runtime) that
// has subscriptions, and unregistered when its last one goes.
struct task_failure_books {
  struct entry {
    const api* functions = nullptr;  // the device's table (read by the callback without entering the device)
    std::int32_t device = 0;
    std::uint64_t key = 0;
    std::shared_ptr<keel::detail::task_failure_listener> listener;
  };
  std::mutex m;
  std::vector<entry> entries;
  std::uint64_t keys = 0;  // the last key given

  static task_failure_books& get() {
    static task_failure_books* const b = new task_failure_books;  // outlives every subscription, even static ones
    return *b;
  }

  bool has(const api* functions) const noexcept {
    for (const entry& e : entries)
      if (e.functions == functions) return true;
    return false;
  }

  // The runtime's callback: reads the information with each entry's table
  // (it lives during this call only) and calls the listeners outside the
  // lock, so that a listener may end its own or another subscription.
  static void on_exception(exception_info* info) noexcept {
    std::vector<std::pair<task_failure, std::shared_ptr<keel::detail::task_failure_listener>>> told;
    try {
      task_failure_books& b = get();
      std::lock_guard<std::mutex> lock(b.m);
      for (const entry& e : b.entries) {
        const api& a = *e.functions;
        if (static_cast<std::int32_t>(a.aclrtGetDeviceIdFromExceptionInfo(info)) != e.device) continue;
        task_failure f;
        f.device = e.device;
        f.runtime_stream_id = static_cast<std::int32_t>(a.aclrtGetStreamIdFromExceptionInfo(info));
        f.task = a.aclrtGetTaskIdFromExceptionInfo(info);
        f.code = make_status_code(static_cast<status>(a.aclrtGetErrorCodeFromExceptionInfo(info)));
        told.emplace_back(f, e.listener);
      }
    } catch (...) {
      report_current_exception("keel::task_failure_subscription (the runtime's exception callback)");
      return;
    }
    for (const auto& t : told) t.second->tell(t.first);
  }

  // Removes the entry `key` of `dev`; the callback goes from the runtime
  // with the table's last one (called through dev, which sets the device
  // on the calling thread, as every keel call to the runtime does).
  void remove(const device& dev, std::uint64_t key) noexcept {
    std::lock_guard<std::mutex> lock(m);
    const api* const functions = &dev.functions();
    for (auto it = entries.begin(); it != entries.end(); ++it)
      if (it->key == key) {
        entries.erase(it);
        break;
      }
    if (has(functions)) return;
    try {
      const status st = functions->aclrtExceptionInfoCallbackUnregister(&on_exception);
      if (st != 0)
        report_error(make_status_code(st), "aclrtExceptionInfoCallbackUnregister",
                     "the runtime kept keel's exception callback");
    } catch (...) {
      report_current_exception("aclrtExceptionInfoCallbackUnregister");
    }
  }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail

KEEL_BEGIN_NAMESPACE

/**
 * @brief The ACL backend's task failures: those the runtime tells its
 * exception-information callbacks of, on its callback thread. The code is
 * the runtime's status (keel::acl::acl_category()).
 */
template <>
struct task_failure_source<acl::backend> {
  /**
   * @brief Tells @p listener of the failures on @p dev's device while the
   * registration is held. @throws keel::error with the runtime's status, or
   * not_supported when it lacks aclrtExceptionInfoCallbackRegister (nothing registered).
   */
  static std::shared_ptr<void> subscribe(acl::device& dev, std::shared_ptr<detail::task_failure_listener> listener) {
    const acl::api& functions = dev.functions();
    auto& b = acl::detail::task_failure_books::get();
    struct registration {
      const acl::device* dev = nullptr;
      std::uint64_t key = 0;
      ~registration() {
        if (dev != nullptr) acl::detail::task_failure_books::get().remove(*dev, key);
      }
    };
    auto held = std::make_shared<registration>();
    std::lock_guard<std::mutex> lock(b.m);
    b.entries.reserve(b.entries.size() + 1);
    if (!b.has(&functions))
      dev.check(functions.aclrtExceptionInfoCallbackRegister(&acl::detail::task_failure_books::on_exception),
                "aclrtExceptionInfoCallbackRegister");
    acl::detail::task_failure_books::entry e;
    e.functions = &functions;
    e.device = dev.id();
    e.key = ++b.keys;
    e.listener = std::move(listener);
    b.entries.push_back(std::move(e));  // reserved above: cannot throw
    held->dev = &dev;
    held->key = b.keys;
    return held;
  }
};

namespace acl {
/// A task-failure subscription on an ACL device (keel::basic_task_failure_subscription).
using task_failure_subscription = basic_task_failure_subscription<backend>;
}  // namespace acl

KEEL_END_NAMESPACE
