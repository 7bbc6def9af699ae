// SPDX-License-Identifier: Apache-2.0
// The ACL backend's native per-task and whole-model update calls over
// CANN's aclmdlRITaskGetParams / aclmdlRITaskSetParams / aclmdlRITaskDisable
// and aclmdlRIUpdate (15_model_running_instance__management.md: changes are
// staged on tasks and applied together by aclmdlRIUpdate; the calls are not
// concurrent for one model, which the checked layer's claim guarantees).
// keel stages the changes itself and issues them only at commit, after the
// checked layer accepted every one, so a refused change never reaches ACL.
// ACL kernel tasks hold the runtime's argument block, not typed arguments:
// a kernel task takes another task's parameters or is disabled.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "keel/acl/detail/handles.hpp"
#include "keel/acl/introspection.hpp"
#include "keel/acl/stream.hpp"
#include "keel/runtime/model_tasks.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {
namespace detail {

/// @cond
struct model_update_calls : native_types {
  static bool try_claim_model(model_handle m) noexcept {
    bool expected = false;
    return m->update_claimed.compare_exchange_strong(expected, true, std::memory_order_acquire);
  }
  static void end_model_claim(model_handle m) noexcept {
    m->staged.clear();
    m->update_claimed.store(false, std::memory_order_release);
  }

  static bool task_index(model_handle m, const task_info& t, std::size_t& index, task_info& found) {
    const std::vector<model_stream> streams = introspection_calls::model_streams(m);
    if (t.stream >= streams.size() || t.sequence >= streams[t.stream].task_count) return false;
    std::size_t at = t.sequence;
    for (std::size_t k = 0; k < t.stream; ++k) at += streams[k].task_count;
    index = at;
    found = introspection_calls::model_tasks(m)[at];
    return true;
  }
  // Every task is ACL's own: what the runtime refuses, it says at commit.
  static bool task_has_node(model_handle, std::size_t) noexcept { return true; }
  static std::size_t staged_changes(model_handle m) noexcept { return m->staged.size(); }

  static void stage_disable(model_handle m, std::size_t index) { stage(m, native_task(m, index), nullptr); }
  static void stage_from(model_handle m, std::size_t index, model_handle source, std::size_t source_index) {
    stage(m, native_task(m, index), native_task(source, source_index));
  }

  // Issues the staged changes and aclmdlRIUpdate once @p s has run what was
  // issued to it (executions issued before run the old tasks); null: now.
  // Ends the claim, also when ACL refuses.
  static void commit_task_update(model_handle m, stream_handle s) {
    struct finish {
      model_handle m;
      ~finish() { end_model_claim(m); }
    } done{m};
    if (s != nullptr) stream_calls::synchronize(s);
    const device& dev = *m->dev;
    const api& a = entered(dev);
    for (const auto& change : m->staged) {
      if (change.second == nullptr) {
        dev.check(a.aclmdlRITaskDisable(change.first), "aclmdlRITaskDisable");
      } else {
        ri_task_params p{};
        dev.check(a.aclmdlRITaskGetParams(change.second, &p), "aclmdlRITaskGetParams");
        dev.check(a.aclmdlRITaskSetParams(change.first, &p), "aclmdlRITaskSetParams");
      }
    }
    dev.check(a.aclmdlRIUpdate(m->native), "aclmdlRIUpdate");
  }

  // ACL does not say in which order a capture issued its streams' tasks:
  // each stream's own order is what the checked layer compares.
  static long interleaving_mismatch(model_handle, model_handle) noexcept { return -1; }
  template <class F>
  static void with_task_lists(model_handle target, model_handle source, F&& fn) {
    fn(introspection_calls::model_streams(target), introspection_calls::model_tasks(target),
       introspection_calls::model_streams(source), introspection_calls::model_tasks(source));
  }

  // Every kernel task of @p target takes the parameters of @p source's task
  // at its place (TaskGetParams from the source, TaskSetParams on the
  // target, then aclmdlRIUpdate: CANN documents no whole-model call); event
  // tasks keep their events. Ends the claim.
  static void commit_model_update(model_handle target, model_handle source, stream_handle s) {
    const std::vector<task_info> tasks = introspection_calls::model_tasks(target);
    const auto to = all_tasks(target), from = all_tasks(source);
    for (std::size_t i = 0; i < tasks.size(); ++i)
      if (tasks[i].type == task_type::kernel && tasks[i].group == 0) target->staged.emplace_back(to[i], from[i]);
    commit_task_update(target, s);
  }

 private:
  static void stage(model_handle m, void* task, void* from) {
    for (auto& change : m->staged) {
      if (change.first == task) {
        change.second = from;  // a later change of the task replaces the earlier one
        return;
      }
    }
    m->staged.emplace_back(task, from);
  }
  // The model's tasks as ACL lists them, stream by stream (model_tasks' order).
  static std::vector<void*> all_tasks(model_handle m) {
    std::vector<void*> out;
    for (acl::stream_handle st : introspection_calls::native_streams(m))
      for (void* t : introspection_calls::native_tasks(*m->dev, st)) out.push_back(t);
    return out;
  }
  static void* native_task(model_handle m, std::size_t index) { return all_tasks(m).at(index); }
};
/// @endcond

}  // namespace detail
} KEEL_END_NAMESPACE  // namespace keel::acl
