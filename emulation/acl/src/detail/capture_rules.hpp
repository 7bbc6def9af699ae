// SPDX-License-Identifier: Apache-2.0
// CANN's capture, task-group, update and event rules, decided by the
// emulation itself: books of its own (which stream belongs to which capture,
// what each forked stream issued and what the capture waited for, which
// group is open or being updated, where each event was last recorded),
// written from CANN's documentation (15_model_running_instance__management.md,
// 07_event_management.md, 25-01_aclError.md and the cross-stream capture
// guide), never from keel's checked layer. keel's ACL backend checks its own
// rules before it calls ACL; these are the second, independent line, so a
// rule keel's checked layer gets wrong is still refused here, with CANN's
// status. A refusal throws status_error (state.hpp) and changes nothing.
//
// The books are keyed by the C handles (aclrtStream, aclrtEvent,
// aclrtTaskGrp) and guarded by a mutex of their own, never held while the
// host layer runs work. The C entry points call check_* before they let the
// host layer act and note_* once it has.
#pragma once

#include <cstdint>
#include <string>

#include "acl/acl.h"

namespace keel::acl_emulation::detail::cann_rules {

// Throws CANN's status @p code for a rule of these books, saying it is the
// emulation's own refusal and why (`guarded` names the call).
[[noreturn]] void refuse(aclError code, const std::string& text);

// ---- capture begin and end -------------------------------------------------

// aclmdlRICaptureBegin / aclmdlRICaptureToModelRIBegin: the stream is in no
// capture (ACL_ERROR_RT_STREAM_CAPTURED) and updates no task group
// (ACL_ERROR_STREAM_TASK_GROUP_STATUS).
void check_capture_begin(const void* stream);
// The capture began on @p stream (of emulated device @p device) in CANN mode
// @p mode on the calling thread.
void note_capture_begin(const void* stream, std::int32_t device, int mode);

// aclmdlRICaptureEnd: what CANN refuses, in the order its runtime checks it:
// a stream in no capture (ACL_ERROR_RT_STREAM_NOT_CAPTURED), a stream that
// joined a capture it did not begin (ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED),
// a GLOBAL or THREAD_LOCAL capture ended on another thread than the one that
// began it (ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD; the capture goes on),
// an invalidated capture (ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED), a task
// group still open (ACL_ERROR_STREAM_TASK_GROUP_STATUS), a forked stream not
// joined back (ACL_ERROR_RT_STREAM_UNJOINED). Returns ACL_SUCCESS or the
// status, with its explanation in @p why.
aclError capture_end_status(const void* stream, std::string& why);
// The capture @p origin began is over (ended or discarded): its streams leave it.
void note_capture_over(const void* origin) noexcept;
// Whether @p stream began a capture that is still in the books.
bool is_capture_origin(const void* stream) noexcept;

// ---- work on a stream --------------------------------------------------------

// Before a task (or an event record or wait) is issued to @p stream: while a
// stream of its capture records a task group, no other stream of that
// capture takes work ("tasks submitted to a capturing stream that did not
// begin the group's recording", ACL_ERROR_STREAM_TASK_GROUP_INTR); and a
// task group, like its update, holds operator launches only ("only
// single-operator calls between aclmdlRICaptureTaskGrpBegin and End",
// CANN's aclmdlRICaptureTaskGrpEnd), anything else being refused with
// ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT in a group and
// ACL_ERROR_STREAM_TASK_GROUP_STATUS in an update (the emulation's choice:
// CANN documents no status for it). @p operator_launch: an aclnnXxx launch.
void check_issue(const void* stream, bool operator_launch = false);

// A task was issued to @p stream: counted for the capture it belongs to
// (what a forked stream must be joined back after, what a task group holds)
// and for the update it is issuing, if any.
void note_task(const void* stream) noexcept;

// ---- events -------------------------------------------------------------------

// aclrtRecordEvent: where the event now stands (in which capture, after how
// many of the recording stream's tasks); a record outside capture clears it.
void note_record(const void* event, const void* stream) noexcept;
// aclrtStreamWaitEvent: a capturing stream does not wait on an event recorded
// in another capture (ACL_ERROR_STREAM_CAPTURE_CONFLICT).
void check_wait(const void* stream, const void* event);
// After the wait: a stream in no capture that waits on a captured record
// joins that capture (a fork); a capturing stream's wait joins the recording
// stream back up to the record.
void note_wait(const void* stream, const void* event) noexcept;
void note_event_destroyed(const void* event) noexcept;

// ---- streams ------------------------------------------------------------------

// The stream is destroyed: a capture it began is gone, one it joined is
// invalidated (CANN ends it with ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED);
// an update it was issuing ends.
void note_stream_destroyed(const void* stream) noexcept;

// ---- task groups and their update -------------------------------------------

// aclmdlRICaptureTaskGrpBegin: the stream is capturing
// (ACL_ERROR_RT_STREAM_NOT_CAPTURED) and its capture has no group open
// (ACL_ERROR_STREAM_TASK_GROUP_STATUS).
void check_group_begin(const void* stream);
void note_group_begin(const void* stream) noexcept;
// aclmdlRICaptureTaskGrpEnd: the stream opened its capture's group
// (ACL_ERROR_STREAM_TASK_GROUP_STATUS).
void check_group_end(const void* stream);
// The group's handle, with the number of tasks issued inside it.
void note_group_end(const void* stream, const void* group);
void note_group_destroyed(const void* group) noexcept;

// aclmdlRICaptureTaskUpdateBegin: the stream is not capturing and not
// updating, and no other stream updates the group (all
// ACL_ERROR_STREAM_TASK_GROUP_STATUS).
void check_update_begin(const void* stream, const void* group);
void note_update_begin(const void* stream, const void* group);
// aclmdlRICaptureTaskUpdateEnd: the stream is updating
// (ACL_ERROR_STREAM_TASK_GROUP_STATUS), and issued as many tasks as the group
// holds ("the number of tasks must match the group's", CANN's
// aclmdlRICaptureTaskUpdateBegin; ACL_ERROR_RT_MODEL_UPDATE_FAILED).
void check_update_end(const void* stream);
// The update on @p stream is over (ended or abandoned): the group is free.
void note_update_over(const void* stream) noexcept;

// ---- capture modes --------------------------------------------------------

// A call CANN lists as unsafe during capture (a synchronous copy or memset),
// made with the calling thread's mode (aclmdlRICaptureThreadExchangeMode):
// RELAXED is never refused; otherwise a capture this thread began in a
// strict mode refuses it, and so does another thread's GLOBAL capture unless
// this thread is THREAD_LOCAL (ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT).
// Only the captures of @p device (the calling thread's) count: a device
// synchronize, a synchronous copy or memset.
void check_unsafe(std::int32_t device, int own_mode, const char* what);
// The same rule for synchronizing a stream, with the capture it belongs to
// only, and for querying or synchronizing an event, with the capture its
// last record was made in only.
void check_unsafe_stream(const void* stream, int own_mode);
void check_unsafe_event(const void* event, int own_mode, const char* what);

}  // namespace keel::acl_emulation::detail::cann_rules
