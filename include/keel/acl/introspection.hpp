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
#include "keel/acl/detail/device.hpp"
#include "keel/acl/task_group.hpp"
#include "keel/runtime/model_lifetime.hpp"
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
  KEEL_DECL static std::uint64_t capture_model_id(stream_handle s) noexcept;

  KEEL_DECL static void set_model_name(model_handle m, std::string_view name);
  KEEL_DECL static std::string model_name(model_handle m);
  KEEL_DECL static bool has_destroy_callback(model_handle m, void (*fn)(void*)) noexcept;
  KEEL_DECL static void add_destroy_callback(model_handle m, void (*fn)(void*), void* user);
  // The aclrtCallback keel registers per model: runs and frees its list.
  KEEL_DECL static void run_destroy_callbacks(void* list) noexcept;
  KEEL_DECL static void remove_destroy_callback(model_handle m, void (*fn)(void*), void*);
  static void abort_model(model_handle m) { m->dev->check(entered(*m->dev).aclmdlRIAbort(m->native), "aclmdlRIAbort"); }

  static std::vector<acl::stream_handle> native_streams(model_handle m) { return native_streams(*m->dev, m->native); }
  KEEL_DECL static std::vector<acl::stream_handle> native_streams(const device& dev, acl::model_handle native);
  KEEL_DECL static std::vector<task_handle> native_tasks(const device& dev, acl::stream_handle s);

  // Task @p index of model_tasks' list (stream by stream), as ACL's handle.
  KEEL_DECL static task_handle native_task(model_handle m, std::size_t index);

  // ACL numbers a model's streams itself: keel reports the model's stream i as id i + 1.
  KEEL_DECL static std::vector<model_stream> model_streams(model_handle m);

  KEEL_DECL static std::vector<task_info> model_tasks(model_handle m);
  // Marks each conditional task keel captured in @p tasks (ACL lists it
  // untyped) with its kind and its bodies' streams and tasks, from keel's
  // books: CANN documents no task type for a conditional task and no query
  // for its bodies. The k-th untyped task of a stream is the one keel
  // counted k-th there; when any stream's untyped count differs from keel's
  // (work keel did not issue), none is marked.
  KEEL_DECL static void attach_conditionals(model_handle m, std::vector<task_info>& tasks);
  // The tasks as ACL reports them (no kernel arguments).
  KEEL_DECL static std::vector<task_info> model_tasks_unpaired(model_handle m);
  // The arguments task group @p group's last committed update gave its
  // tasks (null: none committed), kept in the model while tasks() may have
  // reported them. Caller holds m->launch_m.
  KEEL_DECL static const group_arguments* updated_group_arguments(model_handle m, std::uint64_t group);

  // The typed launch behind each task of @p tasks (null where there is
  // none). ACL does not say which launch issued a task: keel pairs them in
  // order. The model's stream k is the k-th aclrtStream to join its capture
  // (or to be bound to it), and that stream's kernel tasks are, in order,
  // the kernels stream::launch issued to it, one task each. When any
  // stream's counts differ (a launch issued no kernel task, or several, or
  // kernels came from elsewhere), nothing is paired: all null. Under m->launch_m.
  KEEL_DECL static std::vector<const typed_launch*> launches_of(model_handle m, const std::vector<task_info>& tasks);

  // aclmdlRIKernelTaskGetAttribute for each attribute CANN lets be queried,
  // on task @p index of model_tasks' list.
  KEEL_DECL static kernel_attributes kernel_task_attributes(model_handle m, std::size_t index);

  /** aclmdlRIDebugPrint: the runtime prints the model's tasks. */
  static void debug_print(model_handle m) { m->dev->check(entered(*m->dev).aclmdlRIDebugPrint(m->native), "aclmdlRIDebugPrint"); }
  /** aclmdlRIDebugJsonPrint: the runtime writes the model as JSON to @p path (verbose: kernel arguments too). */
  KEEL_DECL static void debug_json_print(model_handle m, const char* path, bool verbose);
};
/// @endcond

}  // namespace detail
} KEEL_END_NAMESPACE  // namespace keel::acl

#if !defined(KEEL_SEPARATE_COMPILATION)
#include "keel/acl/impl/introspection.ipp"
#endif
