// SPDX-License-Identifier: Apache-2.0
// The ACL backend's native introspection and lifetime calls, over CANN's
// aclmdlRI functions (hicann/runtime docs/zh/api_ref/
// 15_model_running_instance_management.md): aclmdlRIGetId (also the
// capture's id), aclmdlRISetName / GetName, aclmdlRIDestroyRegisterCallback /
// UnregisterCallback, aclmdlRIAbort, and the task queries aclmdlRIGetStreams,
// aclmdlRIGetTasksByStream, aclmdlRITaskGetType, aclmdlRITaskGetSeqId and
// aclmdlRITaskGetParams (a kernel's name through aclrtGetFunctionName). The
// checked layer (keel/runtime/checked/introspection.hpp) checks the rules.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "keel/acl/detail/capture_state.hpp"
#include "keel/acl/detail/handles.hpp"
#include "keel/acl/device.hpp"
#include "keel/runtime/model_tasks.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {
namespace detail {

/// @cond
// Kernel names the runtime reports, kept for the process: a kernel_kind
// views a string that outlives it.
inline kernel_kind interned_kind(std::string_view name) {
  static auto* m = new std::mutex;
  static auto* names = new std::set<std::string, std::less<>>;
  std::lock_guard<std::mutex> lock(*m);
  auto it = names->find(name);
  if (it == names->end()) it = names->emplace(name).first;
  return kernel_kind{*it};
}

struct introspection_calls : native_types {
  // The runtime's id of the model a capture on s records into (0 if it has none to give).
  static std::uint64_t capture_model_id(stream_handle s) noexcept {
    const api& a = entered(*s->dev);
    if (a.aclmdlRICaptureGetInfo.get() == nullptr || a.aclmdlRIGetId.get() == nullptr) return 0;
    capture_status st = capture_status::none;
    acl::model_handle native = nullptr;
    if (a.aclmdlRICaptureGetInfo.get()(s->native, &st, &native) != 0 || native == nullptr) return 0;
    std::uint32_t id = 0;
    return a.aclmdlRIGetId.get()(native, &id) == 0 ? id : 0;
  }

  static void set_model_name(model_handle m, std::string_view name) {
    const std::string copy(name);
    m->dev->check(entered(*m->dev).aclmdlRISetName(m->native, copy.c_str()), "aclmdlRISetName");
  }
  static std::string model_name(model_handle m) {
    char buf[513];
    m->dev->check(entered(*m->dev).aclmdlRIGetName(m->native, sizeof buf, buf), "aclmdlRIGetName");
    return std::string(buf);
  }
  static bool has_destroy_callback(model_handle m, void (*fn)(void*)) noexcept {
    return std::find(m->destroy_callbacks.begin(), m->destroy_callbacks.end(), fn) != m->destroy_callbacks.end();
  }
  static void add_destroy_callback(model_handle m, void (*fn)(void*), void* user) {
    m->destroy_callbacks.reserve(m->destroy_callbacks.size() + 1);
    m->dev->check(entered(*m->dev).aclmdlRIDestroyRegisterCallback(m->native, fn, user),
                  "aclmdlRIDestroyRegisterCallback");
    m->destroy_callbacks.push_back(fn);  // reserved
  }
  static void remove_destroy_callback(model_handle m, void (*fn)(void*), void*) {
    m->dev->check(entered(*m->dev).aclmdlRIDestroyUnregisterCallback(m->native, fn), "aclmdlRIDestroyUnregisterCallback");
    m->destroy_callbacks.erase(std::remove(m->destroy_callbacks.begin(), m->destroy_callbacks.end(), fn),
                               m->destroy_callbacks.end());
  }
  static void abort_model(model_handle m) { m->dev->check(entered(*m->dev).aclmdlRIAbort(m->native), "aclmdlRIAbort"); }

  static std::vector<acl::stream_handle> native_streams(model_handle m) { return native_streams(*m->dev, m->native); }
  static std::vector<acl::stream_handle> native_streams(const device& dev, acl::model_handle native) {
    const api& a = entered(dev);
    std::uint32_t n = 0;
    dev.check(a.aclmdlRIGetStreams(native, nullptr, &n), "aclmdlRIGetStreams");
    std::vector<acl::stream_handle> streams(n);
    if (n != 0) dev.check(a.aclmdlRIGetStreams(native, streams.data(), &n), "aclmdlRIGetStreams");
    streams.resize(n);
    return streams;
  }
  static std::vector<task_handle> native_tasks(const device& dev, acl::stream_handle s) {
    const api& a = entered(dev);
    std::uint32_t n = 0;
    dev.check(a.aclmdlRIGetTasksByStream(s, nullptr, &n), "aclmdlRIGetTasksByStream");
    std::vector<task_handle> tasks(n);
    if (n != 0) dev.check(a.aclmdlRIGetTasksByStream(s, tasks.data(), &n), "aclmdlRIGetTasksByStream");
    tasks.resize(n);
    return tasks;
  }

  // Task @p index of model_tasks' list (stream by stream), as ACL's handle.
  static task_handle native_task(model_handle m, std::size_t index) {
    for (acl::stream_handle st : native_streams(m)) {
      const std::vector<task_handle> tasks = native_tasks(*m->dev, st);
      if (index < tasks.size()) return tasks[index];
      index -= tasks.size();
    }
    throw_error(keel::errc::invalid_parameter, "aclmdlRIGetTasksByStream", "the model has no such task");
  }

  // ACL numbers a model's streams itself: keel reports the model's stream i as id i + 1.
  static std::vector<model_stream> model_streams(model_handle m) {
    std::vector<model_stream> out;
    const auto streams = native_streams(m);
    for (std::size_t i = 0; i < streams.size(); ++i)
      out.push_back(model_stream{i + 1, i, native_tasks(*m->dev, streams[i]).size()});
    return out;
  }

  static std::vector<task_info> model_tasks(model_handle m) {
    std::vector<task_info> out = model_tasks_unpaired(m);
    // Kernels stream::launch issued report the arguments they run with.
    std::lock_guard<std::mutex> lock(m->launch_m);
    const std::vector<const typed_launch*> launches = launches_of(m, out);
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (launches[i] == nullptr || out[i].group != 0) continue;  // a group's tasks are its updates'
      out[i].kernel.arguments = m->launch_arguments.data() + launches[i]->first_argument;
      out[i].kernel.argument_count = launches[i]->argument_count;
    }
    return out;
  }
  // The tasks as ACL reports them (no kernel arguments).
  static std::vector<task_info> model_tasks_unpaired(model_handle m) {
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
            break;
          default: info.type = task_type::other; break;
        }
        out.push_back(info);
      }
    }
    return out;
  }

  // The typed launch behind each task of @p tasks (null where there is
  // none). ACL does not say which launch issued a task: keel pairs them in
  // order. The model's stream k is the k-th aclrtStream to join its capture
  // (or to be bound to it), and that stream's kernel tasks are, in order,
  // the kernels stream::launch issued to it, one task each. When any
  // stream's counts differ (a launch issued no kernel task, or several, or
  // kernels came from elsewhere), nothing is paired: all null. Under m->launch_m.
  static std::vector<const typed_launch*> launches_of(model_handle m, const std::vector<task_info>& tasks) {
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

  // aclmdlRIKernelTaskGetAttribute for each attribute CANN lets be queried,
  // on task @p index of model_tasks' list.
  static kernel_attributes kernel_task_attributes(model_handle m, std::size_t index) {
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

  /** aclmdlRIDebugPrint: the runtime prints the model's tasks. */
  static void debug_print(model_handle m) { m->dev->check(entered(*m->dev).aclmdlRIDebugPrint(m->native), "aclmdlRIDebugPrint"); }
  /** aclmdlRIDebugJsonPrint: the runtime writes the model as JSON to @p path (verbose: kernel arguments too). */
  static void debug_json_print(model_handle m, const char* path, bool verbose) {
    m->dev->check(entered(*m->dev).aclmdlRIDebugJsonPrint(m->native, path, verbose ? 1u : 0u), "aclmdlRIDebugJsonPrint");
  }
};
/// @endcond

}  // namespace detail
} KEEL_END_NAMESPACE  // namespace keel::acl
