// SPDX-License-Identifier: Apache-2.0
// The ACL backend's native per-task and whole-model update calls over
// CANN's aclmdlRITaskGetParams / aclmdlRITaskSetParams / aclmdlRITaskDisable
// and aclmdlRIUpdate (15_model_running_instance__management.md: changes are
// staged on tasks and applied together by aclmdlRIUpdate; the calls are not
// concurrent for one model, which the checked layer's claim guarantees).
// keel stages the changes itself and issues them only at commit, after the
// checked layer accepted every one, so a refused change never reaches ACL.
// ACL kernel tasks hold the runtime's argument block, which only the
// kernel's own launch can fill: a kernel that stream::launch issued while
// the model was captured (keel recorded its argument types then, see
// typed_launch) takes typed arguments by issuing that launch again with them
// into a capture of its own, on a stream of the model's, and taking the one
// kernel task it yields: aclmdlRITaskGetParams of that task,
// aclmdlRITaskSetParams on the model's, aclmdlRIUpdate. CANN's task
// parameters have no copy task (aclmdlRITaskParams: kernel, event and value
// tasks), so copies take no new addresses here.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "keel/acl/detail/handles.hpp"
#include "keel/acl/introspection.hpp"
#include "keel/acl/stream.hpp"
#include "keel/core/error.hpp"
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
    m->staged_launches.clear();
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

  static void stage_disable(model_handle m, std::size_t index) {
    stage(m, native_task(m, index), nullptr);
    drop_staged_launch(m, index);
  }
  static void stage_from(model_handle m, std::size_t index, model_handle source, std::size_t source_index) {
    stage(m, native_task(m, index), native_task(source, source_index));
    drop_staged_launch(m, index);
  }

  // The identity of the argument types of the launch that issued kernel
  // task @p index (null: it was not issued by stream::launch with copyable
  // arguments). @throws keel::error invalid_parameter when keel cannot tell
  // which launch issued it (introspection_calls::launches_of).
  static const void* kernel_signature(model_handle m, std::size_t index) {
    const std::vector<task_info> tasks = introspection_calls::model_tasks(m);
    std::lock_guard<std::mutex> lock(m->launch_m);
    const typed_launch* launch = introspection_calls::launches_of(m, tasks).at(index);
    if (launch == nullptr)
      ::keel::detail::throw_composed(
          keel::errc::invalid_parameter, "keel::task_update_scope::set_arguments",
          {"task (stream ", tasks[index].stream, ", sequence ", tasks[index].sequence, ") of model #", m->books.id,
           ": keel pairs a model's kernel tasks with the kernels stream::launch issued, one task per launch in "
           "each stream's order, and this model's do not pair (a launch issued no kernel task or several, or "
           "kernels came from elsewhere): its arguments cannot be replaced; the task is unchanged"});
    return launch->signature;
  }

  // Kernel task @p index takes the arguments behind @p args (a std::tuple of
  // its launch's recorded types: the checked layer compared the
  // signatures): the launch is issued again with them into a capture of its
  // own, whose one kernel task's parameters the task takes at commit. A
  // failure on the way stages nothing.
  static void stage_kernel(model_handle m, std::size_t index, const void* args, const kernel_argument* described,
                           std::size_t count) {
    launch_callable kernel;  // a copy: the model's records are not read outside launch_m
    void (*reissue)(const void*, device&, acl::stream_handle, const void*) = nullptr;
    {
      const std::vector<task_info> tasks = introspection_calls::model_tasks(m);
      std::lock_guard<std::mutex> lock(m->launch_m);
      const typed_launch* launch = introspection_calls::launches_of(m, tasks).at(index);
      kernel = launch->kernel;  // kernel_signature found it
      reissue = launch->reissue;
    }
    device& dev = *m->dev;
    const api& a = entered(dev);
    if (m->scratch == nullptr) {
      acl::stream_handle st = nullptr;
      dev.check(a.aclrtCreateStream(&st), "aclrtCreateStream");
      m->scratch = st;  // the claim holder's alone; destroyed with the model
    }
    dev.check(a.aclmdlRICaptureBegin(m->scratch, acl::capture_mode::relaxed), "aclmdlRICaptureBegin");
    acl::model_handle captured = nullptr;
    try {
      reissue(kernel.get(), dev, m->scratch, args);
    } catch (...) {
      if (a.aclmdlRICaptureEnd.get()(m->scratch, &captured) == 0 && captured != nullptr)
        a.aclmdlRIDestroy.get()(captured);
      throw;
    }
    dev.check(a.aclmdlRICaptureEnd(m->scratch, &captured), "aclmdlRICaptureEnd");
    device* d = &dev;
    std::shared_ptr<void> source(captured, [d](void* ri) {
      const auto destroy = entered(*d).aclmdlRIDestroy.get();
      if (destroy != nullptr) destroy(ri);
    });
    task_handle issued = nullptr;
    std::size_t kernels = 0;
    for (acl::stream_handle st : introspection_calls::native_streams(dev, captured)) {
      for (task_handle t : introspection_calls::native_tasks(dev, st)) {
        ri_task_type type = ri_task_type::other;
        dev.check(a.aclmdlRITaskGetType(t, &type), "aclmdlRITaskGetType");
        if (type == ri_task_type::kernel && kernels++ == 0) issued = t;
      }
    }
    void* const task = native_task(m, index);
    ri_task_params mine{}, theirs{};
    if (kernels == 1) {
      dev.check(a.aclmdlRITaskGetParams(task, &mine), "aclmdlRITaskGetParams");
      dev.check(a.aclmdlRITaskGetParams(issued, &theirs), "aclmdlRITaskGetParams");
    }
    if (kernels != 1 || mine.kernel.function != theirs.kernel.function)
      ::keel::detail::throw_composed(
          keel::errc::invalid_parameter, "keel::task_update_scope::set_arguments",
          {"kernel task ", index, " of model #", m->books.id, ": its launch, issued again with the new arguments, ",
           (kernels != 1 ? "issued " : "issued another kernel function"),
           (kernels != 1 ? std::to_string(kernels) + " kernel tasks instead of one" : std::string()),
           "; the task is unchanged"});
    model_box::staged_launch staged{index, std::vector<kernel_argument>(described, described + count), std::move(source)};
    drop_staged_launch(m, index);
    m->staged_launches.reserve(m->staged_launches.size() + 1);
    stage(m, task, issued);
    m->staged_launches.push_back(std::move(staged));  // reserved: cannot throw
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
    if (m->staged_launches.empty()) return;
    // Applied: the tasks report their new arguments, and keep the models
    // their parameters came from (each task's latest).
    std::lock_guard<std::mutex> lock(m->launch_m);
    const std::vector<task_info> tasks = introspection_calls::model_tasks_unpaired(m);
    const std::vector<const typed_launch*> launches = introspection_calls::launches_of(m, tasks);
    m->argument_sources.reserve(m->argument_sources.size() + m->staged_launches.size());
    for (model_box::staged_launch& staged : m->staged_launches) {
      const typed_launch* launch = launches.at(staged.task);
      if (launch != nullptr && launch->argument_count == staged.arguments.size())  // the same signature: the same count
        std::copy(staged.arguments.begin(), staged.arguments.end(),
                  m->launch_arguments.begin() + static_cast<std::ptrdiff_t>(launch->first_argument));
      auto it = std::find_if(m->argument_sources.begin(), m->argument_sources.end(),
                             [&](const auto& s) { return s.first == staged.task; });
      if (it != m->argument_sources.end()) {
        it->second.swap(staged.source);  // the task's earlier source goes with the staged list
      } else {
        m->argument_sources.emplace_back(staged.task, std::move(staged.source));  // reserved
      }
    }
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
    // The target's kernels report the source's arguments, which they run now.
    const std::vector<task_info> source_tasks = introspection_calls::model_tasks_unpaired(source);
    std::unique_lock<std::mutex> a(target->launch_m, std::defer_lock), b(source->launch_m, std::defer_lock);
    std::lock(a, b);
    const auto mine = introspection_calls::launches_of(target, tasks);
    const auto theirs = introspection_calls::launches_of(source, source_tasks);
    for (std::size_t i = 0; i < tasks.size() && i < source_tasks.size(); ++i)
      if (mine[i] != nullptr && theirs[i] != nullptr && tasks[i].group == 0 && mine[i]->signature == theirs[i]->signature)
        std::copy_n(source->launch_arguments.begin() + static_cast<std::ptrdiff_t>(theirs[i]->first_argument),
                    std::min(mine[i]->argument_count, theirs[i]->argument_count),
                    target->launch_arguments.begin() + static_cast<std::ptrdiff_t>(mine[i]->first_argument));
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
  static void* native_task(model_handle m, std::size_t index) { return introspection_calls::native_task(m, index); }
  static void drop_staged_launch(model_handle m, std::size_t index) noexcept {
    auto& v = m->staged_launches;
    v.erase(std::remove_if(v.begin(), v.end(), [&](const model_box::staged_launch& s) { return s.task == index; }),
            v.end());
  }
};
/// @endcond

}  // namespace detail
} KEEL_END_NAMESPACE  // namespace keel::acl
