// SPDX-License-Identifier: Apache-2.0
// What the host backend remembers of each captured task for introspection
// (keel/host/introspection.hpp): its type, the stream that issued it, its
// task group, and the kernel's kind and arguments or the copy's parameters.
// Kept beside the replay list, never read by a replay; plain records and
// waits, which the replay list leaves out (capture order keeps them), are
// recorded too, so a dump shows the cross-stream edges.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "keel/host/detail/task.hpp"
#include "keel/runtime/model_tasks.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

struct group_state;
struct model_state;

/// @cond
// Makes @p into @p current's kernel with new arguments (a std::tuple of the
// launch's argument types, behind `args`), keeping its kernel function and
// device: what a per-task update stages (keel/host/model_update.hpp). When
// @p into already holds a kernel of that type (a replacement reused) and
// the copies cannot throw, it is assigned in place (no new task); else a
// new task is built first and moved in (a throw leaves @p into as it was).
using kernel_rebind = void (*)(const replay_task& current, const void* args, std::optional<replay_task>& into);
// Assigns new arguments (as kernel_rebind's) to @p into, which holds a
// kernel that this record's kernel_rebind built: what a prepared kernel
// task's update writes in place (model_update_calls::update_kernel_in_place).
// Set only where the assignment cannot throw.
using kernel_assign = void (*)(replay_task& into, const void* args) noexcept;

struct task_record {
  static constexpr std::uint32_t no_node = ~std::uint32_t{0};
  task_type type = task_type::other;
  std::uint64_t stream_id = 0;
  const group_state* group = nullptr;  // the group it was marked into (the model holds the group)
  kernel_kind kind{""};
  std::vector<kernel_argument> arguments;
  copy_params copy;
  std::uint64_t event = 0;
  bool external_event = false;
  // Per-task updates: the task's replay node (kernels outside task groups,
  // copies; no_node for the rest), and for a kernel launched through
  // stream::launch the identity of its argument types and how to rebuild it.
  std::uint32_t node = no_node;
  const void* signature = nullptr;
  kernel_rebind rebind = nullptr;
  kernel_assign assign = nullptr;
  bool disabled = false;
  // A conditional task: its kind's name and its bodies (owned by its replay node).
  std::string_view conditional;
  std::vector<model_state*> bodies;
};

// What introspection reports of a task's parameters (tasks(): each task;
// a whole-model update: each task again, from the new source's records).
// Arguments are reported here for kernels outside task groups only (a
// group's kernels report its current list's: introspection.hpp).
inline void fill_task_parameters(task_info& info, const task_record& r) noexcept {
  info.event = r.event;
  info.external_event = r.external_event;
  info.disabled = r.disabled;
  info.kernel.kind = r.kind;
  if (r.group == nullptr) {
    info.kernel.arguments = r.arguments.data();
    info.kernel.argument_count = r.arguments.size();
  }
  info.copy = r.copy;
  info.conditional = r.conditional;
}
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
