// SPDX-License-Identifier: Apache-2.0
// Task-failure subscriptions on the host backend: each is an observer of
// the host device's task failures (host/device.hpp), told on the failing
// stream's worker thread of each task that throws.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <system_error>

#include "keel/core/error.hpp"
#include "keel/host/host.hpp"
#include "keel/runtime/task_failures.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/**
 * @brief The host backend's task failures: a task that throws. The code is
 * the exception's when it is a keel::error (or another std::system_error) (a bounded wait that expired:
 * errc::timeout), else errc::task_failed; the device is 0.
 */
template <>
struct task_failure_source<host::backend> {
  /// Adds @p listener as an observer of @p dev's task failures. @throws std::bad_alloc (nothing added).
  static std::shared_ptr<void> subscribe(host::device& dev, std::shared_ptr<detail::task_failure_listener> listener) {
    host::detail::device_state& state = dev.state();
    struct registration {
      host::detail::device_state* state = nullptr;
      std::uint64_t key = 0;
      ~registration() {
        if (state == nullptr) return;  // observing threw: nothing was added
        state->stop_observing_task_failures(key);
        host::detail::device_state::drop(state);
      }
    };
    auto held = std::make_shared<registration>();  // before observing: nothing to undo if it throws
    const std::uint64_t key = state.observe_task_failures(
        [listener](std::uint64_t stream_id, std::uint64_t task, const std::exception_ptr& failure) {
          task_failure f;
          f.runtime_stream_id = static_cast<std::int32_t>(stream_id);
          f.task = task;
          f.code = code_of(failure);
          listener->tell(f);
        });
    state.retain();  // the observer is removed from the device's state even after the device object is gone
    held->state = &state;
    held->key = key;
    return held;
  }

 private:
  static std::error_code code_of(const std::exception_ptr& failure) noexcept {
    try {
      std::rethrow_exception(failure);
    } catch (const std::system_error& e) {  // keel::error among them
      return e.code();
    } catch (...) {
      return make_error_code(errc::task_failed);
    }
  }
};

namespace host {
/// A task-failure subscription on a host device (keel::basic_task_failure_subscription).
using task_failure_subscription = basic_task_failure_subscription<backend>;
}  // namespace host

KEEL_END_NAMESPACE
