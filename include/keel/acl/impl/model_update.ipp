// SPDX-License-Identifier: Apache-2.0
// Out-of-line functions of keel/acl/model_update.hpp (model_update_calls): included by the
// header (inline) unless KEEL_SEPARATE_COMPILATION is defined, and compiled
// once into keel_acl_runtime (src/keel_acl_separate.cpp) for the builds that
// define it. The one-line and template members stay in the header.
#pragma once

#include "keel/acl/model_update.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
KEEL_DECL auto model_update_calls::try_claim_model(model_handle m) noexcept -> bool {
  bool expected = false;
  return m->update_claimed.compare_exchange_strong(expected, true, std::memory_order_acquire);
}

KEEL_DECL void model_update_calls::end_model_claim(model_handle m) noexcept {
  m->staged.clear();
  m->staged_launches.clear();
  m->update_claimed.store(false, std::memory_order_release);
}

KEEL_DECL auto model_update_calls::task_index(model_handle m, const task_info& t, std::size_t& index, task_info& found) -> bool {
  const std::vector<model_stream> streams = introspection_calls::model_streams(m);
  if (t.stream >= streams.size() || t.sequence >= streams[t.stream].task_count) return false;
  std::size_t at = t.sequence;
  for (std::size_t k = 0; k < t.stream; ++k) at += streams[k].task_count;
  found = introspection_calls::model_tasks(m)[at];
  index = at;
  return true;
}

KEEL_DECL void model_update_calls::stage_disable(model_handle m, std::size_t index) {
  stage(m, native_task(m, index), nullptr);
  drop_staged_launch(m, index);
}

KEEL_DECL void model_update_calls::stage_from(model_handle m, std::size_t index, model_handle source, std::size_t source_index) {
  stage(m, native_task(m, index), native_task(source, source_index));
  drop_staged_launch(m, index);
}

KEEL_DECL auto model_update_calls::kernel_signature(model_handle m, std::size_t index) -> const void* {
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

KEEL_DECL void model_update_calls::stage_kernel(model_handle m, std::size_t index, const void* args,
                                                keel::detail::arguments_describer describe_args, std::size_t count) {
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
  model_box::staged_launch staged{index, std::vector<kernel_argument>(count), std::move(source)};
  describe_args(args, staged.arguments.data());
  drop_staged_launch(m, index);
  m->staged_launches.reserve(m->staged_launches.size() + 1);
  stage(m, task, issued);
  m->staged_launches.push_back(std::move(staged));  // reserved: cannot throw
}

KEEL_DECL void model_update_calls::commit_task_update(model_handle m, stream_handle s) {
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

KEEL_DECL void model_update_calls::commit_model_update(model_handle target, model_handle source, stream_handle s) {
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

KEEL_DECL void model_update_calls::stage(model_handle m, void* task, void* from) {
  for (auto& change : m->staged) {
    if (change.first == task) {
      change.second = from;  // a later change of the task replaces the earlier one
      return;
    }
  }
  m->staged.emplace_back(task, from);
}

KEEL_DECL auto model_update_calls::all_tasks(model_handle m) -> std::vector<void*> {
  std::vector<void*> out;
  for (acl::stream_handle st : introspection_calls::native_streams(m))
    for (void* t : introspection_calls::native_tasks(*m->dev, st)) out.push_back(t);
  return out;
}

KEEL_DECL void model_update_calls::drop_staged_launch(model_handle m, std::size_t index) noexcept {
  auto& v = m->staged_launches;
  v.erase(std::remove_if(v.begin(), v.end(), [&](const model_box::staged_launch& s) { return s.task == index; }),
          v.end());
}
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
