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
  KEEL_DECL static bool try_claim_model(model_handle m) noexcept;
  KEEL_DECL static void end_model_claim(model_handle m) noexcept;

  KEEL_DECL static bool task_index(model_handle m, const task_info& t, std::size_t& index, task_info& found);
  // task_index's answer kept in the model (claim holder only).
  static const task_info* claimed_task_index(model_handle m, const task_info& t, std::size_t& index) {
    return task_index(m, t, index, m->located) ? &m->located : nullptr;
  }
  // Every task is ACL's own: what the runtime refuses, it says at commit.
  static bool task_has_node(model_handle, std::size_t) noexcept { return true; }
  static std::size_t staged_changes(model_handle m) noexcept { return m->staged.size(); }

  KEEL_DECL static void stage_disable(model_handle m, std::size_t index);
  KEEL_DECL static void stage_from(model_handle m, std::size_t index, model_handle source, std::size_t source_index);

  // The identity of the argument types of the launch that issued kernel
  // task @p index (null: it was not issued by stream::launch with copyable
  // arguments). @throws keel::error invalid_parameter when keel cannot tell
  // which launch issued it (introspection_calls::launches_of).
  KEEL_DECL static const void* kernel_signature(model_handle m, std::size_t index);

  // Kernel task @p index takes the arguments behind @p args (a std::tuple of
  // its launch's recorded types: the checked layer compared the
  // signatures): the launch is issued again with them into a capture of its
  // own, whose one kernel task's parameters the task takes at commit. A
  // failure on the way stages nothing.
  KEEL_DECL static void stage_kernel(model_handle m, std::size_t index, const void* args,
                                     keel::detail::arguments_describer describe_args, std::size_t count);

  // Issues the staged changes and aclmdlRIUpdate once @p s has run what was
  // issued to it (executions issued before run the old tasks); null: now.
  // Ends the claim, also when ACL refuses.
  KEEL_DECL static void commit_task_update(model_handle m, stream_handle s);

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
  KEEL_DECL static void commit_model_update(model_handle target, model_handle source, stream_handle s);

 private:
  KEEL_DECL static void stage(model_handle m, void* task, void* from);
  // The model's tasks as ACL lists them, stream by stream (model_tasks' order).
  KEEL_DECL static std::vector<void*> all_tasks(model_handle m);
  static void* native_task(model_handle m, std::size_t index) { return introspection_calls::native_task(m, index); }
  KEEL_DECL static void drop_staged_launch(model_handle m, std::size_t index) noexcept;
};
/// @endcond

}  // namespace detail
} KEEL_END_NAMESPACE  // namespace keel::acl

#if !defined(KEEL_SEPARATE_COMPILATION)
#include "keel/acl/impl/model_update.ipp"
#endif
