// SPDX-License-Identifier: Apache-2.0
// Out-of-line functions of keel/acl/introspection.hpp (introspection_calls): included by the
// header (inline) unless KEEL_SEPARATE_COMPILATION is defined, and compiled
// once into keel_acl_runtime (src/keel_acl_separate.cpp) for the builds that
// define it. The one-line and template members stay in the header.
#pragma once

#include "keel/acl/introspection.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
KEEL_DECL auto introspection_calls::capture_model_id(stream_handle s) noexcept -> std::uint64_t {
  const api& a = entered(*s->dev);
  if (a.aclmdlRICaptureGetInfo.get() == nullptr || a.aclmdlRIGetId.get() == nullptr) return 0;
  capture_status st = capture_status::none;
  acl::model_handle native = nullptr;
  if (a.aclmdlRICaptureGetInfo.get()(s->native, &st, &native) != 0 || native == nullptr) return 0;
  std::uint32_t id = 0;
  return a.aclmdlRIGetId.get()(native, &id) == 0 ? id : 0;
}

KEEL_DECL void introspection_calls::set_model_name(model_handle m, std::string_view name) {
  const std::string copy(name);
  m->dev->check(entered(*m->dev).aclmdlRISetName(m->native, copy.c_str()), "aclmdlRISetName");
}

KEEL_DECL auto introspection_calls::model_name(model_handle m) -> std::string {
  char buf[513];
  m->dev->check(entered(*m->dev).aclmdlRIGetName(m->native, sizeof buf, buf), "aclmdlRIGetName");
  return std::string(buf);
}

KEEL_DECL auto introspection_calls::has_destroy_callback(model_handle m, void (*fn)(void*)) noexcept -> bool {
  if (m->destroy_callbacks == nullptr) return false;
  const auto& e = m->destroy_callbacks->entries;
  return std::any_of(e.begin(), e.end(), [fn](const auto& c) { return c.first == fn; });
}

KEEL_DECL void introspection_calls::run_destroy_callbacks(void* list) noexcept {
  const std::unique_ptr<model_box::destroy_callback_list> owned(static_cast<model_box::destroy_callback_list*>(list));
  for (const auto& c : owned->entries) ::keel::detail::call_destroy_callback(c.first, c.second);
}

KEEL_DECL void introspection_calls::add_destroy_callback(model_handle m, void (*fn)(void*), void* user) {
  if (m->destroy_callbacks == nullptr) {
    auto list = std::make_unique<model_box::destroy_callback_list>();
    list->entries.reserve(1);
    m->dev->check(entered(*m->dev).aclmdlRIDestroyRegisterCallback(m->native, &run_destroy_callbacks, list.get()),
                  "aclmdlRIDestroyRegisterCallback");
    m->destroy_callbacks = list.release();  // the registration owns it
  }
  m->destroy_callbacks->entries.emplace_back(fn, user);  // may throw: nothing registered for it yet
}

KEEL_DECL void introspection_calls::remove_destroy_callback(model_handle m, void (*fn)(void*), void*) {
  if (m->destroy_callbacks == nullptr) return;
  auto& e = m->destroy_callbacks->entries;  // the trampoline stays registered: it runs what is left
  e.erase(std::remove_if(e.begin(), e.end(), [fn](const auto& c) { return c.first == fn; }), e.end());
}

KEEL_DECL auto introspection_calls::native_streams(const device& dev, acl::model_handle native) -> std::vector<acl::stream_handle> {
  const api& a = entered(dev);
  std::uint32_t n = 0;
  dev.check(a.aclmdlRIGetStreams(native, nullptr, &n), "aclmdlRIGetStreams");
  std::vector<acl::stream_handle> streams(n);
  if (n != 0) dev.check(a.aclmdlRIGetStreams(native, streams.data(), &n), "aclmdlRIGetStreams");
  streams.resize(n);
  return streams;
}

KEEL_DECL auto introspection_calls::native_tasks(const device& dev, acl::stream_handle s) -> std::vector<task_handle> {
  const api& a = entered(dev);
  std::uint32_t n = 0;
  dev.check(a.aclmdlRIGetTasksByStream(s, nullptr, &n), "aclmdlRIGetTasksByStream");
  std::vector<task_handle> tasks(n);
  if (n != 0) dev.check(a.aclmdlRIGetTasksByStream(s, tasks.data(), &n), "aclmdlRIGetTasksByStream");
  tasks.resize(n);
  return tasks;
}

KEEL_DECL auto introspection_calls::native_task(model_handle m, std::size_t index) -> task_handle {
  for (acl::stream_handle st : native_streams(m)) {
    const std::vector<task_handle> tasks = native_tasks(*m->dev, st);
    if (index < tasks.size()) return tasks[index];
    index -= tasks.size();
  }
  throw_error(keel::errc::invalid_parameter, "aclmdlRIGetTasksByStream", "the model has no such task");
}

KEEL_DECL auto introspection_calls::model_streams(model_handle m) -> std::vector<model_stream> {
  std::vector<model_stream> out;
  const auto streams = native_streams(m);
  for (std::size_t i = 0; i < streams.size(); ++i)
    out.push_back(model_stream{i + 1, i, native_tasks(*m->dev, streams[i]).size()});
  return out;
}

KEEL_DECL auto introspection_calls::model_tasks(model_handle m) -> std::vector<task_info> {
  std::vector<task_info> out = model_tasks_unpaired(m);
  attach_conditionals(m, out);  // from books fixed at capture end: no lock
  // Kernels stream::launch issued report the arguments they run with: a
  // task group's, those of its last committed update (once there is one).
  std::lock_guard<std::mutex> lock(m->launch_m);
  const std::vector<const typed_launch*> launches = launches_of(m, out);
  std::vector<std::pair<std::uint64_t, std::size_t>> met;  // per group: its kernels met so far
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].group != 0 && out[i].type == task_type::kernel) {
      auto it = std::find_if(met.begin(), met.end(), [&](const auto& e) { return e.first == out[i].group; });
      if (it == met.end()) it = met.insert(met.end(), {out[i].group, 0});
      const std::size_t k = it->second++;
      if (const group_arguments* now = updated_group_arguments(m, out[i].group)) {
        if (k < now->size()) {
          out[i].kernel.arguments = (*now)[k].data();
          out[i].kernel.argument_count = (*now)[k].size();
        }
        continue;
      }
    }
    if (launches[i] == nullptr) continue;
    out[i].kernel.arguments = m->launch_arguments.data() + launches[i]->first_argument;
    out[i].kernel.argument_count = launches[i]->argument_count;
  }
  return out;
}

KEEL_DECL void introspection_calls::attach_conditionals(model_handle m, std::vector<task_info>& tasks) {
  if (m->conditionals.empty() || m->untyped_lost) return;
  const std::vector<acl::stream_handle>& streams = m->launch_streams;
  std::vector<std::vector<std::size_t>> untyped(streams.size());  // per model stream: its untyped tasks
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].type != task_type::other) continue;
    if (tasks[i].stream >= streams.size()) return;
    untyped[tasks[i].stream].push_back(i);
  }
  const auto stream_index = [&](acl::stream_handle native) {
    return static_cast<std::size_t>(std::find(streams.begin(), streams.end(), native) - streams.begin());
  };
  std::size_t counted = 0;
  for (const untyped_count& c : m->untyped) {
    const std::size_t k = stream_index(c.stream);
    if (k == streams.size() || untyped[k].size() != c.count) return;
    counted += c.count;
  }
  std::size_t listed = 0;
  for (const auto& u : untyped) listed += u.size();
  if (listed != counted) return;  // untyped tasks on a stream keel counted none on
  std::size_t bodies = 0;
  for (const conditional_task& c : m->conditionals) bodies += c.bodies;
  if (bodies > m->bodies.size()) return;
  std::size_t body = 0;
  for (const conditional_task& c : m->conditionals) {
    const std::size_t k = stream_index(c.stream);
    task_info& t = tasks[untyped[k][c.rank]];  // counted: c.rank < untyped[k].size()
    t.type = task_type::conditional;
    t.conditional = c.kind;
    t.bodies.reserve(c.bodies);
    for (std::size_t j = 0; j < c.bodies; ++j, ++body) {
      model_box* const b = m->bodies[body];
      t.bodies.push_back(conditional_body{model_streams(b), model_tasks(b)});
    }
  }
}

KEEL_DECL auto introspection_calls::updated_group_arguments(model_handle m, std::uint64_t group)
    -> const group_arguments* {
  auto seen = std::find_if(m->group_arguments_seen.begin(), m->group_arguments_seen.end(),
                           [&](const auto& e) { return e.first == group; });
  std::shared_ptr<const group_arguments> now =
      task_group_calls::committed_arguments(*m->dev, reinterpret_cast<acl::task_group_handle>(group));
  if (!now) return seen != m->group_arguments_seen.end() ? seen->second.get() : nullptr;  // its record gone: as last seen
  if (seen != m->group_arguments_seen.end()) {
    seen->second = std::move(now);
  } else {
    m->group_arguments_seen.emplace_back(group, std::move(now));
    seen = m->group_arguments_seen.end() - 1;
  }
  return seen->second.get();
}

KEEL_DECL auto introspection_calls::model_tasks_unpaired(model_handle m) -> std::vector<task_info> {
  const device& dev = *m->dev;
  const api& a = entered(dev);
  std::vector<task_info> out;
  const auto streams = native_streams(m);
  for (std::size_t i = 0; i < streams.size(); ++i) {
    for (task_handle t : native_tasks(dev, streams[i])) {
      task_info info;
      info.stream = i;
      ri_task_type type = ri_task_type::other;
      dev.check(a.aclmdlRITaskGetType(t, &type), "aclmdlRITaskGetType");
      dev.check(a.aclmdlRITaskGetSeqId(t, &info.sequence), "aclmdlRITaskGetSeqId");
      ri_task_params p{};
      dev.check(a.aclmdlRITaskGetParams(t, &p), "aclmdlRITaskGetParams");
      info.group = reinterpret_cast<std::uintptr_t>(p.task_group);
      switch (type) {
        case ri_task_type::kernel: {
          info.type = task_type::kernel;
          char name[256] = {};
          if (p.kernel.function != nullptr && a.aclrtGetFunctionName.get() != nullptr &&
              a.aclrtGetFunctionName.get()(p.kernel.function, sizeof name, name) == 0)
            info.kernel.kind = interned_kind(name);
          info.kernel.argument_block = p.kernel.args;
          info.kernel.argument_block_bytes = p.kernel.args_size;
          info.kernel.blocks = p.kernel.blocks;
          break;
        }
        case ri_task_type::event_record:
        case ri_task_type::event_wait:
        case ri_task_type::event_reset:
          info.type = type == ri_task_type::event_record ? task_type::event_record
                      : type == ri_task_type::event_wait ? task_type::event_wait
                                                         : task_type::event_reset;
          info.event = reinterpret_cast<std::uintptr_t>(p.event.event);
          // An external event (its creation flag), or an external record
          // or wait of a default event (the operation's flag): the task
          // crosses models.
          info.external_event = (p.event.event_flag & event_flags::external) != 0 ||
                                (type == ri_task_type::event_record && (p.event.flag & record_flags::external) != 0) ||
                                (type == ri_task_type::event_wait && (p.event.flag & wait_flags::external) != 0);
          break;
        default: info.type = task_type::other; break;
      }
      out.push_back(info);
    }
  }
  return out;
}

KEEL_DECL auto introspection_calls::launches_of(model_handle m, const std::vector<task_info>& tasks) -> std::vector<const typed_launch*> {
  std::vector<const typed_launch*> out(tasks.size(), nullptr);
  std::size_t streams = 0;
  for (const task_info& t : tasks) streams = std::max(streams, t.stream + 1);
  if (m->launches.empty() || streams != m->launch_streams.size()) return out;
  std::vector<std::size_t> next(streams, 0);  // per stream: the next launch index into m->launches to try
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].type != task_type::kernel) continue;
    const acl::stream_handle native = m->launch_streams[tasks[i].stream];
    std::size_t& at = next[tasks[i].stream];
    while (at < m->launches.size() && m->launches[at].stream != native) ++at;
    if (at == m->launches.size()) return std::vector<const typed_launch*>(tasks.size(), nullptr);
    out[i] = &m->launches[at++];
  }
  for (std::size_t k = 0; k < streams; ++k) {  // no launch left unpaired
    for (std::size_t at = next[k]; at < m->launches.size(); ++at)
      if (m->launches[at].stream == m->launch_streams[k]) return std::vector<const typed_launch*>(tasks.size(), nullptr);
  }
  return out;
}

KEEL_DECL auto introspection_calls::kernel_task_attributes(model_handle m, std::size_t index) -> kernel_attributes {
  const device& dev = *m->dev;
  const api& a = entered(dev);
  const task_handle task = native_task(m, index);
  auto query = [&](kernel_attribute id) {
    kernel_attribute_value v{};
    dev.check(a.aclmdlRIKernelTaskGetAttribute(task, id, &v), "aclmdlRIKernelTaskGetAttribute");
    return v;
  };
  kernel_attributes out;
  out.schedule_mode = query(kernel_attribute::schedule_mode).schedule_mode;
  out.dynamic_ub_bytes = query(kernel_attribute::dynamic_ub_size).dynamic_ub_bytes;
  out.data_dump = query(kernel_attribute::data_dump).data_dump != 0;
  out.timeout_s = query(kernel_attribute::timeout).timeout;
  const kernel_attribute_value us = query(kernel_attribute::timeout_us);
  out.timeout_us = (static_cast<std::uint64_t>(us.timeout_us.high) << 32) | us.timeout_us.low;
  return out;
}

KEEL_DECL void introspection_calls::debug_json_print(model_handle m, const char* path, bool verbose) {
  m->dev->check(entered(*m->dev).aclmdlRIDebugJsonPrint(m->native, path, verbose ? 1u : 0u), "aclmdlRIDebugJsonPrint");
}
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
