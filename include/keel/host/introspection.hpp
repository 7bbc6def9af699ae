// SPDX-License-Identifier: Apache-2.0
// The host backend's native introspection and lifetime calls: the model's
// name and destroy callbacks live in its record, abort marks the executions
// issued so far to stop at their next task, and the streams and tasks come
// from the records capture kept (keel/host/detail/task_records.hpp). The
// checked layer (keel/runtime/checked/introspection.hpp) checks the rules.
#pragma once

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "keel/host/capture.hpp"
#include "keel/host/detail/handles.hpp"
#include "keel/runtime/model_tasks.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
struct introspection_calls : native_types {
  static void set_model_name(model_handle m, std::string_view name) {
    std::string copy(name);
    std::lock_guard lock(m->meta_m);
    m->name.swap(copy);
  }
  static std::string model_name(model_handle m) {
    std::lock_guard lock(m->meta_m);
    return m->name;
  }
  static bool has_destroy_callback(model_handle m, void (*fn)(void*)) {
    std::lock_guard lock(m->meta_m);
    return std::any_of(m->destroy_callbacks.begin(), m->destroy_callbacks.end(),
                       [&](const auto& c) { return c.first == fn; });
  }
  static void add_destroy_callback(model_handle m, void (*fn)(void*), void* user) {
    std::lock_guard lock(m->meta_m);
    m->destroy_callbacks.emplace_back(fn, user);
  }
  static void remove_destroy_callback(model_handle m, void (*fn)(void*), void*) {
    std::lock_guard lock(m->meta_m);
    auto& cbs = m->destroy_callbacks;
    cbs.erase(std::remove_if(cbs.begin(), cbs.end(), [&](const auto& c) { return c.first == fn; }), cbs.end());
  }
  // Every execution issued so far (running or queued) stops before its next
  // task; its stream reports task_failed. Later executions run.
  static void abort_model(model_handle m) noexcept {
    const std::uint64_t issued = m->executions.load(std::memory_order_relaxed);
    std::uint64_t below = m->abort_below.load(std::memory_order_relaxed);
    while (below < issued && !m->abort_below.compare_exchange_weak(below, issued, std::memory_order_relaxed)) {
    }
  }

  // Built once at capture end (capture_state.hpp): a query copies them.
  static std::vector<model_stream> model_streams(model_handle m) { return m->stream_list; }
  static std::vector<task_info> model_tasks(model_handle m) {
    std::lock_guard lock(m->meta_m);  // a committed update rewrites entries
    return m->task_list;
  }
  // The host launches no kernel with attributes: each reads as CANN's default.
  static kernel_attributes kernel_task_attributes(model_handle, std::size_t) noexcept { return {}; }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
