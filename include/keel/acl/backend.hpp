// SPDX-License-Identifier: Apache-2.0
// The ACL backend: keel's runtime templates (basic_stream, basic_event,
// basic_model, capture and update scopes, buffers) over the ACL C API, with
// every function resolved at run time from CANN's libraries through keel
// library leases. keel links nothing of CANN; a function an older CANN lacks
// fails as keel::errc::not_supported naming it, when it is first used. The
// native calls (one file per concept: device, stream, event, memory,
// capture, task_group) reach ACL; keel's checked layer keeps the books and
// checks every rule over them.
#pragma once

#include "keel/acl/built_model.hpp"
#include "keel/acl/capture.hpp"
#include "keel/acl/context.hpp"
#include "keel/acl/conditional.hpp"
#include "keel/acl/detail/handles.hpp"
#include "keel/acl/detail/device.hpp"
#include "keel/acl/detail/runtime_pool.hpp"
#include "keel/acl/event.hpp"
#include "keel/acl/introspection.hpp"
#include "keel/acl/memory.hpp"
#include "keel/acl/model_update.hpp"
#include "keel/acl/stream.hpp"
#include "keel/acl/stream_config.hpp"
#include "keel/acl/task_group.hpp"
#include "keel/runtime/backend.hpp"
#include "keel/runtime/checked/backend.hpp"
#include "keel/runtime/checked/context.hpp"
#include "keel/runtime/checked/model_update.hpp"
#include "keel/runtime/checked/stream_config.hpp"
#include "keel/runtime/context.hpp"
#include "keel/runtime/condition.hpp"
#include "keel/runtime/fenced_update.hpp"
#include "keel/runtime/model_builder.hpp"
#include "keel/runtime/model_update.hpp"
#include "keel/runtime/runtime.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {
namespace detail {

/// @cond
// The native ACL backend: every concept's calls in one type, for the checked layer.
struct native : capture_calls, event_calls, task_group_calls, built_model_calls, conditional_calls, introspection_calls,
                stream_config_calls, context_calls, model_update_calls {
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
  // The native-handle conversions (keel/runtime/backend/native.hpp), one per record.
  using stream_calls::to_native;
  using event_calls::to_native;
  using capture_calls::to_native;
  using task_group_calls::to_native;
  using context_calls::to_native;
  using conditional_calls::to_native;
  using stream_calls::from_native;
  using event_calls::from_native;
  using capture_calls::from_native;
  using task_group_calls::from_native;
  using context_calls::from_native;
  using stream_calls::release_native;
  using event_calls::release_native;
  using capture_calls::release_native;
  using task_group_calls::release_native;
  using context_calls::release_native;
};
/// @endcond

}  // namespace detail

/**
 * @brief The ACL backend of the runtime templates: every call is a static
 * member that goes through the device's function table. The backend's
 * handles are pointers to small records keel keeps beside ACL's handle (the
 * device, the flags and capture books ACL cannot be asked for), so a call
 * costs one pointer hop and no lookup; what users see is ACL's own handle:
 * native_handle() is the aclrtStream / aclrtEvent / aclmdlRI /
 * aclrtTaskGrp, and a raw one made elsewhere (torch_npu's current stream)
 * is viewed with `stream_ref(dev, native)` / `event_ref(dev, native, flags)`
 * or owned with `stream::from_native_handle(dev, native)`.
 *
 * Native handle to record: the device keeps a registry of its records by ACL
 * handle (keel/acl/detail/registry.hpp), one per kind: keel adds a record
 * when it creates the handle and removes it when it destroys it (a lock and
 * a hash-map insert or erase beside ACL's call, which costs far more); a
 * native-handle constructor or from_native_handle takes the lock and looks
 * the handle up, so every view of one handle shares one record; calls on a
 * handle never look anything up. A stream or event keel did not make gets a
 * record the device owns (keel never destroys its handle) until
 * device::forget_stream / forget_event, or until an owner takes it
 * (from_native_handle); models and task groups have records only when keel
 * captured or marked them (keel keeps their books as it does), so any
 * other aclmdlRI or aclrtTaskGrp is refused. release() hands ACL's handle
 * over and leaves the record with the device (views keep working; a later
 * from_native_handle takes it back; forget_* drops it). ACL cannot be asked
 * an event's flags: the adopter says them.
 *
 * Ownership: as the runtime requirement says. Thread safety: every call is as
 * thread-safe as ACL's. Exceptions: keel::error with acl_category() codes
 * (equivalent to keel's conditions, see keel::acl::condition) and ACL's own
 * message; not_supported for a function the loaded CANN lacks.
 *
 * Threads: CANN needs aclrtSetDevice on every thread that calls the runtime;
 * every entry here makes the stream's (event's, model's) device current on
 * the calling thread first, once per thread (device::make_current), so keel's
 * handles work from any thread. device::functions() does the same for code
 * calling the table directly. keel knows only what it set: a thread that
 * switches itself to another device through ACL calls make_current() again.
 * A thread's capture mode (aclmdlRICaptureThreadExchangeMode) is
 * thread_capture_mode_scope.
 *
 * Errors: a status with its ACL code and ACL's text; a rule broken inside an
 * aclnn launch carries the runtime's own status, not only 361001 (run_on).
 *
 * Differences from the host backend:
 * - launch_kernel runs the body when issued (it enqueues ACL work).
 * - launch_host is aclrtLaunchCallback (ACL_CALLBACK_BLOCK): the first one on
 *   a stream starts a reporting thread for it (aclrtSubscribeReport, then
 *   aclrtProcessReport in a loop; the thread makes the device current on
 *   itself first), which runs the stream's callables in order. The stream's
 *   destruction unsubscribes and joins it; so does device::forget_stream for
 *   an adopted stream, and the device's destruction for adopted streams still
 *   recorded. A callable that throws puts the stream in an error state, as on
 *   the host backend: later host callables of the stream are skipped, query()
 *   and synchronize() throw task_failed with the exception's text, and
 *   synchronize() clears it. ACL work (kernels, copies, events) issued after
 *   the failure still runs: ACL cannot skip it. A callable captured into a
 *   model belongs to the model (freed when the model is destroyed and its
 *   executions have been synchronized; the capturing stream may go first)
 *   and runs, on every execution, on the reporting thread of the executing
 *   stream (execute() starts one if the model holds host callables), whose
 *   error state its failure sets. Its failure also aborts the model it was
 *   captured into (aclmdlRIAbort; that model is a conditional body when it
 *   was captured into one), so, as on the host backend, the execution's
 *   remaining work is skipped and a WHILE loop around the body ends; being
 *   an abort, it stops that model's other executions in flight too (the
 *   host backend fails the one execution). keel asks ACL which model that
 *   is (aclmdlRICaptureGetInfo) once, when the callable is captured.
 *   (Captured into a capture keel did not begin, it lives as long as the
 *   device. keel asks ACL about such a capture
 *   (aclmdlRICaptureGetInfo) before a launch only on a foreign stream: one whose aclrtStream
 *   it gave out or took in, or which waited on an event whose handle it gave
 *   out or took in or a foreign stream recorded. And a callable is skipped on
 *   an ACL stream that failed, asked with aclrtStreamQuery when it runs, only
 *   when ACL work (a kernel, copy, wait, model execution) was issued to the
 *   stream since its last synchronize or the stream is foreign.) A
 *   trivially copyable callable that fits in a pointer travels in the
 *   userData pointer itself: an eager launch of it allocates nothing.
 * - task_count, group_count and task_group::size come from the checked
 *   layer's books: keel issues every task itself during a capture it began,
 *   and counts them as on every backend (a launch, copy, external-event
 *   operation, model execution or task group is one task of the model; a
 *   launch inside a group counts in the group). A launch counts once however many ACL tasks its
 *   body enqueues, and work issued straight through ACL during the capture
 *   (not through keel) is not counted. (Newer CANN lists a model's tasks with
 *   aclmdlRIGetStreams / aclmdlRIGetTasksByStream, hicann/runtime
 *   docs/zh/api_ref/15_model_running_instance_management.md; keel's subset
 *   does not use them yet.)
 * - every capture, group and update rule is the checked layer's
 *   (keel/runtime/checked/), checked before ACL is asked: CANN would end a
 *   capture it refuses and destroy its model (ACL_ERROR_STREAM_TASK_GROUP_STATUS,
 *   ACL_ERROR_RT_STREAM_UNJOINED), while capture_scope::end promises the
 *   capture stays, to be joined or discarded. The errors are keel's, the same
 *   as on the host backend.
 * - an update's launches are staged and issued to ACL at update end, between
 *   aclmdlRICaptureTaskUpdateBegin and End, once the checked layer accepted
 *   them: ACL cannot cancel an update, so an abandoned or refused one never
 *   reaches it and the group is unchanged (abandon_restores_group is true).
 *   group_abort ends the group with what was marked (ACL cannot cancel).
 * - the calls ACL refuses during capture by the calling thread's mode are
 *   refused by keel first from the mode thread_capture_mode_scope set; a
 *   thread that exchanges its mode through ACL directly is not seen.
 * - a buffer's release does not wait: it records an event on its stream, and
 *   the memory is freed by a later allocate, release or synchronize on the
 *   device that finds the event complete (aclrtQueryEventStatus), or when the
 *   device is destroyed; with no later call the memory waits for one.
 *   Released during a capture, it lives as long as the model. (The host
 *   backend frees from the stream's own worker instead.)
 */
struct backend : checked::backend<detail::native>, checked::built_models<detail::native>,
                 checked::conditionals<detail::native>, checked::stream_config<detail::native>,
                 checked::contexts<detail::native>, checked::model_updates<detail::native> {
  /// @cond KEEL_BACKEND_OPERATIONS
  using typename checked::backend<detail::native>::device_type;
  using typename checked::backend<detail::native>::stream_handle;
  using context_handle = detail::native::context_handle;
  // The ACL native calls that pass through unchecked: the vendor handles'
  // conversions (keel's records to and from aclrtStream, aclrtEvent, ...)
  // and the runtime's own dumps.
  using detail::native::to_native;
  using detail::native::from_native;
  using detail::native::release_native;
  using detail::native::debug_print;
  using detail::native::debug_json_print;
  /// @endcond
};

// The runtime handles on ACL, named like keel::host's.
KEEL_RUNTIME_HANDLE_ALIASES(backend)
KEEL_RUNTIME_BUILT_MODEL_ALIASES(backend)
KEEL_RUNTIME_CONDITIONAL_ALIASES(backend)
KEEL_RUNTIME_CONTEXT_ALIASES(backend)
KEEL_RUNTIME_MODEL_UPDATE_ALIASES(backend)
KEEL_RUNTIME_FENCED_MODEL_ALIASES(backend)

static_assert(is_runtime_backend_v<backend>, "keel::acl::backend must model the runtime backend requirement");

} KEEL_END_NAMESPACE  // namespace keel::acl

#if defined(KEEL_SEPARATE_COMPILATION)
// The checked layer's out-of-line calls over ACL (capture, group, update,
// event, built-model, conditional, stream-configuration, context and
// model-update rules), instantiated once in keel_acl_runtime
// (src/keel_acl_separate.cpp) instead of in every translation unit.
KEEL_BEGIN_NAMESPACE
extern template struct checked::backend<acl::detail::native>;
extern template struct checked::built_models<acl::detail::native>;
extern template struct checked::conditionals<acl::detail::native>;
extern template struct checked::stream_config<acl::detail::native>;
extern template struct checked::contexts<acl::detail::native>;
extern template struct checked::model_updates<acl::detail::native>;
KEEL_END_NAMESPACE
#endif

// The members of keel::acl::device that reach every native layer and the checked
// layer's books (the class: keel/acl/detail/device.hpp).
#include "keel/acl/impl/device.ipp"
