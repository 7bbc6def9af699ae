// SPDX-License-Identifier: Apache-2.0
// What the host backend remembers of each captured task for introspection
// (keel/host/introspection.hpp): its type, the stream that issued it, its
// task group, and the kernel's kind and arguments or the copy's parameters.
// Kept beside the replay list, never read by a replay; plain records and
// waits, which the replay list leaves out (capture order keeps them), are
// recorded too, so a dump shows the cross-stream edges.
#pragma once

#include <cstdint>
#include <vector>

#include "keel/runtime/model_tasks.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

struct group_state;

/// @cond
struct task_record {
  task_type type = task_type::other;
  std::uint64_t stream_id = 0;
  const group_state* group = nullptr;  // the group it was marked into (the model holds the group)
  kernel_kind kind{""};
  std::vector<kernel_argument> arguments;
  copy_params copy;
  std::uint64_t event = 0;
  bool external_event = false;
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
