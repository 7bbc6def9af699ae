// SPDX-License-Identifier: Apache-2.0
// The host backend: the CPU with the semantics of a device runtime. Its
// native calls (one file per concept: stream, event, memory, capture,
// task_group) run work; keel's checked layer (keel/runtime/checked/) keeps
// the capture, group, update and lifetime books over them and checks every rule.
#pragma once

#include "keel/host/built_model.hpp"
#include "keel/host/capture.hpp"
#include "keel/host/context.hpp"
#include "keel/host/conditional.hpp"
#include "keel/host/detail/handles.hpp"
#include "keel/host/device.hpp"
#include "keel/host/event.hpp"
#include "keel/host/introspection.hpp"
#include "keel/host/memory.hpp"
#include "keel/host/model_update.hpp"
#include "keel/host/stream.hpp"
#include "keel/host/stream_config.hpp"
#include "keel/host/task_group.hpp"
#include "keel/runtime/checked/backend.hpp"
#include "keel/runtime/checked/context.hpp"
#include "keel/runtime/checked/model_update.hpp"
#include "keel/runtime/checked/stream_config.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host {
namespace detail {

/// @cond
// The native host backend: every concept's calls in one type, for the checked layer.
struct native : stream_calls, event_calls, memory_calls, capture_calls, task_group_calls, built_model_calls,
                conditional_calls, introspection_calls, stream_config_calls, context_calls, model_update_calls {
  using context_calls::books;
  using native_types::books;
  using stream_calls::device_of;
  using event_calls::device_of;
  using built_model_calls::device_of;
  using stream_calls::query;
  using event_calls::query;
  using stream_calls::synchronize;
  using event_calls::synchronize;
  using stream_calls::synchronize_for;
  using event_calls::synchronize_for;
};
/// @endcond

}  // namespace detail

/**
 * @brief The host backend: the native types and calls the runtime templates
 * (basic_stream, basic_event, basic_model, ...) are instantiated with. Every
 * call is a static member; native handles are plain pointers.
 *
 * Ownership: handles returned by create/allocate/capture_end/group_end are
 * owned by the caller until passed to their destroy call. Thread safety:
 * every call is thread-safe (streams take work from any thread). Exceptions:
 * keel::error naming the rule broken; a failed call changes nothing.
 *
 * Semantics worth knowing (the README's "How the host backend uses the CPU" has the threads):
 * - A task that throws puts its stream in the error state. Later work on
 *   that stream (host callables, kernels, copies, model executions) is
 *   skipped until synchronize() reports the failure, which also clears the
 *   state; event records, waits, resets, releases and update swaps still run,
 *   so other streams never deadlock. query() reports without clearing.
 * - Models run on the executing stream, in capture order (a topological
 *   order of the recorded cross-stream dependencies), in one tight loop.
 * - A stream's worker thread drains a ring of 2,048 tasks; issuing to a full
 *   ring blocks until the worker catches up, like a device's launch queue,
 *   so never fill a stream that waits for work the same thread issues later.
 * - Destroying a stream waits for the work issued to it (a stream blocked on
 *   an external event nobody records would wait forever); a capture it began
 *   is discarded and reported, a capture it joined is invalidated.
 * - A task must not synchronize its own stream (would_deadlock), nor fill
 *   its own stream's ring (the launch that would wait throws would_deadlock).
 *   A task that destroys its own stream defers the destruction: reported as
 *   would_deadlock, the stream runs the work already issued, then its worker
 *   finishes the destruction.
 * - A wait waits for the record that was the event's last one when the wait
 *   was issued; query() and synchronize() refer to the last record at the
 *   call. On an idle stream (every task issued to it has finished) a
 *   record, an external event's signal and its reset take effect before
 *   the call returns, on the calling thread. A model whose task throws (or whose execution meets the stream in
 *   its error state) skips its remaining work but still runs its event
 *   operations.
 * - Streams, events and models share the device's state: destroying the
 *   device object first is safe. Scopes hold their stream's record, so a
 *   stream destroyed under a live scope leaves the scope nothing to end.
 * - Update visibility: an update takes effect when its stream reaches the
 *   end of the update; an execution that reaches the group afterwards runs
 *   the new tasks, one already past it ran the old ones. On an idle
 *   update stream that point is end() itself (no task is enqueued); two
 *   updates of one group with nothing between them on the stream swap once,
 *   with the later tasks. Use
 *   basic_concurrent_update to fence a running execution on the update.
 */
struct backend : checked::backend<detail::native>, checked::built_models<detail::native>,
                 checked::conditionals<detail::native>, checked::stream_config<detail::native>,
                 checked::contexts<detail::native>, checked::model_updates<detail::native> {
  /// @cond KEEL_BACKEND_OPERATIONS
  using typename checked::backend<detail::native>::device_type;
  using typename checked::backend<detail::native>::stream_handle;
  using context_handle = detail::native::context_handle;
  /// @endcond
};

} KEEL_END_NAMESPACE  // namespace keel::host

#if defined(KEEL_SEPARATE_COMPILATION)
// The checked layer's out-of-line calls over the host (its rules: capture,
// group, update, event), instantiated once in keel_runtime instead of in
// every translation unit.
KEEL_BEGIN_NAMESPACE
extern template struct checked::backend<host::detail::native>;
KEEL_END_NAMESPACE
#endif
