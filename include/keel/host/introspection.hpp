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
    std::lock_guard<std::mutex> lock(m->meta_m);
    m->name.swap(copy);
  }
  static std::string model_name(model_handle m) {
    std::lock_guard<std::mutex> lock(m->meta_m);
    return m->name;
  }
  static bool has_destroy_callback(model_handle m, void (*fn)(void*)) {
    std::lock_guard<std::mutex> lock(m->meta_m);
    return std::any_of(m->destroy_callbacks.begin(), m->destroy_callbacks.end(),
                       [&](const auto& c) { return c.first == fn; });
  }
  static void add_destroy_callback(model_handle m, void (*fn)(void*), void* user) {
    std::lock_guard<std::mutex> lock(m->meta_m);
    m->destroy_callbacks.emplace_back(fn, user);
  }
  static void remove_destroy_callback(model_handle m, void (*fn)(void*), void*) {
    std::lock_guard<std::mutex> lock(m->meta_m);
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

  // The streams in the order they first issued a task of the model.
  static std::vector<model_stream> model_streams(model_handle m) {
    std::vector<model_stream> streams;
    for (const task_record& r : m->records) {
      auto it = std::find_if(streams.begin(), streams.end(), [&](const model_stream& s) { return s.id == r.stream_id; });
      if (it == streams.end()) {
        streams.push_back(model_stream{r.stream_id, streams.size(), 0});
        it = streams.end() - 1;
      }
      ++it->task_count;
    }
    return streams;
  }

  // Per stream in stream order, streams as model_streams lists them. A task
  // group's kernels report no arguments: updates replace them.
  static std::vector<task_info> model_tasks(model_handle m) {
    std::vector<task_info> tasks(m->records.size());
    std::uint64_t ids[8];
    std::uint32_t next_sequence[8];
    std::vector<std::uint64_t> more_ids;  // past eight streams
    std::vector<std::uint32_t> more_sequences;
    std::size_t stream_count = 0;
    // Pass one: each record's stream index and sequence id.
    for (std::size_t i = 0; i < m->records.size(); ++i) {
      const task_record& r = m->records[i];
      std::size_t index = 0;
      while (index < stream_count && (index < 8 ? ids[index] : more_ids[index - 8]) != r.stream_id) ++index;
      if (index == stream_count) {
        if (index < 8) {
          ids[index] = r.stream_id;
          next_sequence[index] = 0;
        } else {
          more_ids.push_back(r.stream_id);
          more_sequences.push_back(0);
        }
        ++stream_count;
      }
      std::uint32_t& seq = index < 8 ? next_sequence[index] : more_sequences[index - 8];
      task_info& t = tasks[i];
      t.type = r.type;
      t.stream = index;
      t.sequence = seq++;
      t.group = r.group != nullptr ? group_id(r.group) : 0;
      t.event = r.event;
      t.external_event = r.external_event;
      t.kernel.kind = r.kind;
      if (r.group == nullptr) {
        t.kernel.arguments = r.arguments.data();
        t.kernel.argument_count = r.arguments.size();
      }
      t.copy = r.copy;
    }
    if (stream_count > 1) {
      // Stable by stream: each stream's tasks in its own order.
      std::stable_sort(tasks.begin(), tasks.end(), [](const task_info& a, const task_info& b) { return a.stream < b.stream; });
    }
    return tasks;
  }

  static std::uint64_t group_id(const group_state* g) noexcept { return g->books.id; }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
