// SPDX-License-Identifier: Apache-2.0
// The host backend's native introspection and lifetime calls: the model's
// name and destroy callbacks live in its record, abort marks the executions
// issued so far to stop at their next task, and the streams and tasks come
// from the records capture kept (keel/host/detail/task_records.hpp). The
// checked layer (keel/runtime/checked/introspection.hpp) checks the rules.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "keel/host/capture.hpp"
#include "keel/host/detail/group_state.hpp"
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
    std::vector<task_info> out = m->task_list;
    group_arguments(m, out);
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (out[i].type != task_type::conditional) continue;
      for (model_state* body : m->records[m->task_records[i]].bodies)  // each body's own lock
        out[i].bodies.push_back(conditional_body{model_streams(body), model_tasks(body)});
    }
    return out;
  }
  // A task group's kernels report the arguments of the tasks the group runs
  // now (its last update's, or the capture's): the list current under the
  // group's lock, described the first time it is asked about, and kept
  // until a later update refills it.
  static void group_arguments(model_handle m, std::vector<task_info>& out) {
    std::vector<std::pair<const group_state*, std::size_t>> met;  // per group: its kernels met so far
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (out[i].group == 0 || out[i].type != task_type::kernel) continue;
      const group_state* g = m->records[m->task_records[i]].group;
      if (g == nullptr) continue;
      auto it = std::find_if(met.begin(), met.end(), [g](const auto& e) { return e.first == g; });
      if (it == met.end()) it = met.insert(met.end(), {g, 0});
      const std::size_t k = it->second++;
      std::shared_ptr<task_list> list;
      {
        group_state::guard lock(const_cast<group_state&>(*g));
        list = g->tasks;
        if (list && !list->described) {
          list->arguments.resize(list->tasks.size());
          for (std::size_t t = 0; t < list->tasks.size(); ++t) {
            if (t < list->describers.size() && list->describers[t] != nullptr) {
              list->describers[t](list->tasks[t], list->arguments[t]);
            } else {
              list->arguments[t].clear();
            }
          }
          list->described = true;
        }
      }
      if (list && k < list->tasks.size() && k < list->arguments.size()) {
        out[i].kernel.arguments = list->arguments[k].data();
        out[i].kernel.argument_count = list->arguments[k].size();
      }
    }
  }
  // The host launches no kernel with attributes: each reads as CANN's default.
  static kernel_attributes kernel_task_attributes(model_handle, std::size_t) noexcept { return {}; }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
