// SPDX-License-Identifier: Apache-2.0
// The emulation's control and reliability families: labels in built models,
// floating-point overflow status, the exception-information callbacks,
// stream abort and state callbacks, and the device's utilisation.
// Each is looked up by name in the loaded emulation with the type of its C
// declaration, as a C program linked to libascendcl would call it.
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_add.h"
#include "keel/acl/backend.hpp"

#include "../support/acl_c_function.hpp"

namespace {

// Appends its digit to the run's trace (a host function of a built model).
struct trace_step {
  std::vector<int>* trace;
  int digit;
};
void trace(void* step) {
  auto* s = static_cast<trace_step*>(step);
  s->trace->push_back(s->digit);
}

}  // namespace

TEST_CASE("acl C API: a switch by label index goes on from the label it names", "[acl][families][label]") {
  keel_test::emulation_device().make_current();
  aclrtStream bound = nullptr, exec = nullptr;
  REQUIRE(KEEL_C(aclrtCreateStreamWithConfig)(&bound, 0, ACL_STREAM_PERSISTENT) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtCreateStream)(&exec) == ACL_SUCCESS);
  std::uint32_t* index = nullptr;
  REQUIRE(KEEL_C(aclrtMalloc)(reinterpret_cast<void**>(&index), sizeof *index, ACL_MEM_MALLOC_HUGE_FIRST) ==
          ACL_SUCCESS);
  aclrtLabel labels[2] = {};
  for (aclrtLabel& l : labels) REQUIRE(KEEL_C(aclrtCreateLabel)(&l) == ACL_SUCCESS);
  aclrtLabelList list = nullptr;
  CHECK(KEEL_C(aclrtCreateLabelList)(labels, 0, &list) == ACL_ERROR_INVALID_PARAM);
  REQUIRE(KEEL_C(aclrtCreateLabelList)(labels, 2, &list) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtSetLabel)(labels[0], bound) != ACL_SUCCESS);  // not bound to a model being built

  aclmdlRI model = nullptr;
  REQUIRE(KEEL_C(aclmdlRIBuildBegin)(&model, 0) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclmdlRIBindStream)(model, bound, ACL_MODEL_STREAM_FLAG_HEAD) == ACL_SUCCESS);
  std::vector<int> ran;
  trace_step first{&ran, 1}, at0{&ran, 2}, at1{&ran, 3};
  REQUIRE(KEEL_C(aclrtLaunchHostFunc)(bound, trace, &first) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtSwitchLabelByIndex)(index, 3, list, bound) == ACL_ERROR_INVALID_PARAM);  // maxValue: 2 labels
  REQUIRE(KEEL_C(aclrtSwitchLabelByIndex)(index, 2, list, bound) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtLaunchHostFunc)(bound, trace, &first) == ACL_SUCCESS);  // skipped: the switch jumps
  REQUIRE(KEEL_C(aclrtSetLabel)(labels[0], bound) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtSetLabel)(labels[0], bound) == ACL_ERROR_INVALID_PARAM);  // set once
  REQUIRE(KEEL_C(aclrtLaunchHostFunc)(bound, trace, &at0) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtSetLabel)(labels[1], bound) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtLaunchHostFunc)(bound, trace, &at1) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclmdlRIEndTask)(model, bound) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclmdlRIBuildEnd)(model, nullptr) == ACL_SUCCESS);

  // The index is read when the switch runs; past the last label is the last one.
  const std::vector<std::pair<std::uint32_t, std::vector<int>>> runs = {
      {0, {1, 2, 3}}, {1, {1, 3}}, {7, {1, 3}}};
  for (const auto& run : runs) {
    INFO("label index " << run.first);
    REQUIRE(KEEL_C(aclrtMemcpy)(index, sizeof *index, &run.first, sizeof run.first, ACL_MEMCPY_HOST_TO_DEVICE) ==
            ACL_SUCCESS);
    ran.clear();
    REQUIRE(KEEL_C(aclmdlRIExecuteAsync)(model, exec) == ACL_SUCCESS);
    REQUIRE(KEEL_C(aclrtSynchronizeStream)(exec) == ACL_SUCCESS);
    CHECK(ran == run.second);
  }

  CHECK(KEEL_C(aclmdlRIUnbindStream)(model, bound) == ACL_SUCCESS);
  CHECK(KEEL_C(aclmdlRIDestroy)(model) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyLabelList)(list) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyLabelList)(list) != ACL_SUCCESS);  // no longer live
  for (aclrtLabel l : labels) CHECK(KEEL_C(aclrtDestroyLabel)(l) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtFree)(index) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(exec) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(bound) == ACL_SUCCESS);
}

TEST_CASE("acl C API: a model whose switch names a label it never set does not end its build",
          "[acl][families][label]") {
  keel_test::emulation_device().make_current();
  aclrtStream bound = nullptr;
  REQUIRE(KEEL_C(aclrtCreateStreamWithConfig)(&bound, 0, ACL_STREAM_PERSISTENT) == ACL_SUCCESS);
  std::uint32_t index = 0;
  aclrtLabel label = nullptr;
  REQUIRE(KEEL_C(aclrtCreateLabel)(&label) == ACL_SUCCESS);
  aclrtLabelList list = nullptr;
  REQUIRE(KEEL_C(aclrtCreateLabelList)(&label, 1, &list) == ACL_SUCCESS);
  aclmdlRI model = nullptr;
  REQUIRE(KEEL_C(aclmdlRIBuildBegin)(&model, 0) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclmdlRIBindStream)(model, bound, ACL_MODEL_STREAM_FLAG_HEAD) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtSwitchLabelByIndex)(&index, 1, list, bound) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclmdlRIEndTask)(model, bound) == ACL_SUCCESS);
  CHECK(KEEL_C(aclmdlRIBuildEnd)(model, nullptr) != ACL_SUCCESS);
  CHECK(KEEL_C(aclmdlRIDestroy)(model) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyLabelList)(list) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyLabel)(label) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(bound) == ACL_SUCCESS);
}

namespace {
// The first uint32 of the 64-byte overflow status, read in stream order.
std::uint32_t overflow_status(aclrtStream stream) {
  unsigned char status[64];
  std::memset(status, 0xff, sizeof status);
  REQUIRE(KEEL_C(aclrtGetOverflowStatus)(status, sizeof status, stream) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtSynchronizeStream)(stream) == ACL_SUCCESS);
  std::uint32_t flag = 0;
  std::memcpy(&flag, status, sizeof flag);
  return flag;
}

// out = x + y on `stream`, synchronized.
void add_on(aclrtStream stream, float* x, float* y, float* out) {
  float one = 1;
  const std::int64_t shape[1] = {2}, stride[1] = {1};
  aclTensor* tx = KEEL_C(aclCreateTensor)(shape, 1, ACL_FLOAT, stride, 0, ACL_FORMAT_ND, shape, 1, x);
  aclTensor* ty = KEEL_C(aclCreateTensor)(shape, 1, ACL_FLOAT, stride, 0, ACL_FORMAT_ND, shape, 1, y);
  aclTensor* tout = KEEL_C(aclCreateTensor)(shape, 1, ACL_FLOAT, stride, 0, ACL_FORMAT_ND, shape, 1, out);
  aclScalar* alpha = KEEL_C(aclCreateScalar)(&one, ACL_FLOAT);
  std::uint64_t workspace = 0;
  aclOpExecutor* executor = nullptr;
  REQUIRE(KEEL_C(aclnnAddGetWorkspaceSize)(tx, ty, alpha, tout, &workspace, &executor) == ACLNN_SUCCESS);
  for (aclTensor* t : {tx, ty, tout}) CHECK(KEEL_C(aclDestroyTensor)(t) == ACLNN_SUCCESS);  // the executor keeps its plan
  CHECK(KEEL_C(aclDestroyScalar)(alpha) == ACLNN_SUCCESS);
  REQUIRE(KEEL_C(aclnnAdd)(nullptr, 0, executor, stream) == ACLNN_SUCCESS);
  REQUIRE(KEEL_C(aclrtSynchronizeStream)(stream) == ACL_SUCCESS);
}
}  // namespace

TEST_CASE("acl C API: the device's result mode, the streams' switches and the overflow status",
          "[acl][families][overflow]") {
  keel_test::emulation_device().make_current();
  aclrtFloatOverflowMode mode = ACL_RT_OVERFLOW_MODE_UNDEF;
  REQUIRE(KEEL_C(aclrtGetDeviceSatMode)(&mode) == ACL_SUCCESS);
  CHECK(mode == ACL_RT_OVERFLOW_MODE_INFNAN);  // the A2 series' default
  CHECK(KEEL_C(aclrtSetDeviceSatMode)(ACL_RT_OVERFLOW_MODE_UNDEF) == ACL_ERROR_INVALID_PARAM);
  REQUIRE(KEEL_C(aclrtSetDeviceSatMode)(ACL_RT_OVERFLOW_MODE_SATURATION) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtGetDeviceSatMode)(&mode) == ACL_SUCCESS);
  CHECK(mode == ACL_RT_OVERFLOW_MODE_SATURATION);
  CHECK(KEEL_C(aclrtGetDeviceSatMode)(nullptr) == ACL_ERROR_INVALID_PARAM);

  aclrtStream watched = nullptr, unwatched = nullptr;
  REQUIRE(KEEL_C(aclrtCreateStream)(&watched) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtCreateStream)(&unwatched) == ACL_SUCCESS);
  std::uint32_t flag = 7;
  REQUIRE(KEEL_C(aclrtGetStreamOverflowSwitch)(watched, &flag) == ACL_SUCCESS);
  CHECK(flag == 0u);
  CHECK(KEEL_C(aclrtSetStreamOverflowSwitch)(watched, 2) == ACL_ERROR_INVALID_PARAM);
  REQUIRE(KEEL_C(aclrtSetStreamOverflowSwitch)(watched, 1) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtGetStreamOverflowSwitch)(watched, &flag) == ACL_SUCCESS);
  CHECK(flag == 1u);
  unsigned char small[8];
  CHECK(KEEL_C(aclrtGetOverflowStatus)(small, sizeof small, watched) == ACL_ERROR_INVALID_PARAM);  // 64 bytes

  REQUIRE(KEEL_C(aclrtResetOverflowStatus)(watched) == ACL_SUCCESS);
  CHECK(overflow_status(watched) == 0u);
  const float huge = std::numeric_limits<float>::max();
  float x[2] = {1, huge}, y[2] = {2, huge}, out[2] = {0, 0};
  add_on(unwatched, x, y, out);  // overflows, but the stream's switch is off
  CHECK(std::isinf(out[1]));
  CHECK(overflow_status(watched) == 0u);
  float a[2] = {1, 2}, b[2] = {3, 4};
  add_on(watched, a, b, out);  // finite
  CHECK(overflow_status(watched) == 0u);
  add_on(watched, x, y, out);
  CHECK(overflow_status(unwatched) == 1u);  // the process's status, read on any stream
  REQUIRE(KEEL_C(aclrtResetOverflowStatus)(unwatched) == ACL_SUCCESS);  // in unwatched's order
  REQUIRE(KEEL_C(aclrtSynchronizeStream)(unwatched) == ACL_SUCCESS);
  CHECK(overflow_status(watched) == 0u);

  REQUIRE(KEEL_C(aclrtSetDeviceSatMode)(ACL_RT_OVERFLOW_MODE_INFNAN) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(watched) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(unwatched) == ACL_SUCCESS);
}

namespace {
// What the exception callbacks were told (they run on a stream's worker thread).
struct told {
  std::atomic<int> calls{0};
  std::atomic<std::uint32_t> task{0}, stream{0}, thread{0}, device{0}, code{0};
  // The kernel getters: the failed task (a wait) launched no kernel.
  std::atomic<aclError> args_status{-1}, func_status{-1};
  std::atomic<bool> no_kernel{false};
};
told registered_told, set_told;
void note(told& t, aclrtExceptionInfo* info) {
  t.task = KEEL_C(aclrtGetTaskIdFromExceptionInfo)(info);
  t.stream = KEEL_C(aclrtGetStreamIdFromExceptionInfo)(info);
  t.thread = KEEL_C(aclrtGetThreadIdFromExceptionInfo)(info);
  t.device = KEEL_C(aclrtGetDeviceIdFromExceptionInfo)(info);
  t.code = KEEL_C(aclrtGetErrorCodeFromExceptionInfo)(info);
  void* args = &t;
  std::uint32_t args_count = 7;
  aclrtFuncHandle func = &t;
  t.args_status = KEEL_C(aclrtGetArgsFromExceptionInfo)(info, &args, &args_count);
  t.func_status = KEEL_C(aclrtGetFuncHandleFromExceptionInfo)(info, &func);
  t.no_kernel = args == nullptr && args_count == 0 && func == nullptr;
  t.calls.fetch_add(1);
}
void registered_callback(aclrtExceptionInfo* info) { note(registered_told, info); }
void set_callback(aclrtExceptionInfo* info) { note(set_told, info); }

// A task of `failing` fails: its bounded wait on an event `held` records
// only after a value nobody writes until the wait has timed out.
void fail_a_task(aclrtStream failing) {
  aclrtStream held = nullptr;
  REQUIRE(KEEL_C(aclrtCreateStream)(&held) == ACL_SUCCESS);
  alignas(8) static std::uint64_t gate = 0;
  __atomic_store_n(&gate, 0, __ATOMIC_RELEASE);
  aclrtEvent e = nullptr;
  REQUIRE(KEEL_C(aclrtCreateEvent)(&e) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtValueWait)(&gate, 1, ACL_STREAM_WAIT_VALUE_EQ, held) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtRecordEvent)(e, held) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtStreamWaitEventWithTimeout)(failing, e, 1) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtSynchronizeStream)(failing) == ACL_ERROR_RT_AICORE_EXCEPTION);
  __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
  CHECK(KEEL_C(aclrtSynchronizeStream)(held) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyEvent)(e) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(held) == ACL_SUCCESS);
}
}  // namespace

TEST_CASE("acl C API: the exception callbacks are told of a failed task, its stream, device and error",
          "[acl][families][exception]") {
  keel_test::emulation_device().make_current();
  CHECK(KEEL_C(aclrtExceptionInfoCallbackRegister)(nullptr) == ACL_ERROR_INVALID_PARAM);
  CHECK(KEEL_C(aclrtExceptionInfoCallbackUnregister)(nullptr) == ACL_ERROR_INVALID_PARAM);
  CHECK(KEEL_C(aclrtExceptionInfoCallbackUnregister)(registered_callback) == ACL_SUCCESS);  // not registered: no-op
  CHECK(KEEL_C(aclrtGetTaskIdFromExceptionInfo)(nullptr) == 0xFFFFFFFFu);
  CHECK(KEEL_C(aclrtGetErrorCodeFromExceptionInfo)(nullptr) == 0xFFFFFFFFu);
  void* args = nullptr;
  std::uint32_t args_count = 0;
  aclrtFuncHandle func = nullptr;
  CHECK(KEEL_C(aclrtGetArgsFromExceptionInfo)(nullptr, &args, &args_count) == ACL_ERROR_INVALID_PARAM);
  CHECK(KEEL_C(aclrtGetFuncHandleFromExceptionInfo)(nullptr, &func) == ACL_ERROR_INVALID_PARAM);
  REQUIRE(KEEL_C(aclrtExceptionInfoCallbackRegister)(registered_callback) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtExceptionInfoCallbackRegister)(registered_callback) == ACL_SUCCESS);  // kept once
  REQUIRE(KEEL_C(aclrtSetExceptionInfoCallback)(set_callback) == ACL_SUCCESS);

  aclrtStream failing = nullptr;
  REQUIRE(KEEL_C(aclrtCreateStream)(&failing) == ACL_SUCCESS);
  std::int32_t failing_id = -1;
  REQUIRE(KEEL_C(aclrtStreamGetId)(failing, &failing_id) == ACL_SUCCESS);
  registered_told.calls = 0;
  set_told.calls = 0;
  fail_a_task(failing);  // the callbacks ran before the synchronize reported the failure
  CHECK(registered_told.calls == 1);
  CHECK(set_told.calls == 1);
  for (const told* t : {&registered_told, &set_told}) {
    CHECK(t->stream == static_cast<std::uint32_t>(failing_id));
    CHECK(t->device == 0u);
    CHECK(t->code == static_cast<std::uint32_t>(ACL_ERROR_RT_AICORE_EXCEPTION));
    CHECK(t->thread != 0u);
    CHECK(t->task != 0xFFFFFFFFu);
    CHECK(t->args_status == ACL_SUCCESS);
    CHECK(t->func_status == ACL_SUCCESS);
    CHECK(t->no_kernel);
  }

  REQUIRE(KEEL_C(aclrtExceptionInfoCallbackUnregister)(registered_callback) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtSetExceptionInfoCallback)(nullptr) == ACL_SUCCESS);
  fail_a_task(failing);
  CHECK(registered_told.calls == 1);  // no longer told
  CHECK(set_told.calls == 1);
  CHECK(KEEL_C(aclrtDestroyStream)(failing) == ACL_SUCCESS);
}

namespace {
void note_thread(void* ran_on) { *static_cast<std::uint64_t*>(ran_on) = static_cast<std::uint64_t>(::pthread_self()); }
}  // namespace

TEST_CASE("acl C API: a stream's host functions run on the thread subscribed to them", "[acl][families][host_func]") {
  keel_test::emulation_device().make_current();
  aclrtStream stream = nullptr;
  REQUIRE(KEEL_C(aclrtCreateStream)(&stream) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtProcessHostFunc)(0) == ACL_ERROR_INVALID_PARAM);
  CHECK(KEEL_C(aclrtProcessHostFunc)(1) == ACL_ERROR_THREAD_NOT_SUBSCRIBE);  // this thread is subscribed to none
  CHECK(KEEL_C(aclrtSubscribeHostFunc)(1, nullptr) != ACL_SUCCESS);

  std::atomic<bool> serve{true};
  std::atomic<std::uint64_t> server_id{0};
  // Looked up here: KEEL_C uses Catch's INFO and REQUIRE, which only the
  // test's own thread may call.
  auto* const process_host_func = KEEL_C(aclrtProcessHostFunc);
  std::thread server([&] {
    server_id = static_cast<std::uint64_t>(::pthread_self());
    while (serve) (void)process_host_func(10);
  });
  while (server_id == 0) std::this_thread::yield();
  REQUIRE(KEEL_C(aclrtSubscribeHostFunc)(server_id, stream) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtSubscribeHostFunc)(server_id, stream) == ACL_ERROR_REPEAT_SUBSCRIBE);  // one thread per stream

  std::uint64_t ran_on = 0;
  REQUIRE(KEEL_C(aclrtLaunchHostFunc)(stream, note_thread, &ran_on) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtSynchronizeStream)(stream) == ACL_SUCCESS);
  CHECK(ran_on == server_id);

  CHECK(KEEL_C(aclrtUnSubscribeHostFunc)(server_id + 1, stream) == ACL_ERROR_STREAM_NOT_SUBSCRIBE);
  REQUIRE(KEEL_C(aclrtUnSubscribeHostFunc)(server_id, stream) == ACL_SUCCESS);
  ran_on = 0;
  REQUIRE(KEEL_C(aclrtLaunchHostFunc)(stream, note_thread, &ran_on) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtSynchronizeStream)(stream) == ACL_SUCCESS);
  CHECK(ran_on != 0u);
  CHECK(ran_on != server_id);  // the runtime's own thread again
  serve = false;
  server.join();
  CHECK(KEEL_C(aclrtDestroyStream)(stream) == ACL_SUCCESS);
}

TEST_CASE("acl C API: an ACL_EVENT_IPC event opened from its handle orders another stream after its record",
          "[acl][families][ipc_event]") {
  keel_test::emulation_device().make_current();
  aclrtEvent created = nullptr, opened = nullptr;
  CHECK(KEEL_C(aclrtCreateEventExWithFlag)(&created, ACL_EVENT_IPC | ACL_EVENT_SYNC) == ACL_ERROR_INVALID_PARAM);
  REQUIRE(KEEL_C(aclrtCreateEventExWithFlag)(&created, ACL_EVENT_IPC) == ACL_SUCCESS);
  aclrtIpcEventHandle handle{};
  REQUIRE(KEEL_C(aclrtIpcGetEventHandle)(created, &handle) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtIpcOpenEventHandle)(handle, &opened) == ACL_SUCCESS);  // as another process would
  aclrtEventRecordedStatus status = ACL_EVENT_RECORDED_STATUS_NOT_READY;
  REQUIRE(KEEL_C(aclrtQueryEventStatus)(opened, &status) == ACL_SUCCESS);
  CHECK(status == ACL_EVENT_RECORDED_STATUS_COMPLETE);  // never recorded
  aclrtStream producer = nullptr, consumer = nullptr;
  REQUIRE(KEEL_C(aclrtCreateStream)(&producer) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtCreateStream)(&consumer) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtResetEvent)(created, producer) == ACL_ERROR_INVALID_PARAM);  // not for an IPC event

  alignas(8) static std::uint64_t gate = 0;
  __atomic_store_n(&gate, 0, __ATOMIC_RELEASE);
  REQUIRE(KEEL_C(aclrtValueWait)(&gate, 1, ACL_STREAM_WAIT_VALUE_EQ, producer) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtRecordEvent)(created, producer) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtStreamWaitEvent)(consumer, opened) == ACL_SUCCESS);
  std::vector<int> ran;
  trace_step after{&ran, 1};
  REQUIRE(KEEL_C(aclrtLaunchHostFunc)(consumer, trace, &after) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtQueryEventStatus)(opened, &status) == ACL_SUCCESS);
  CHECK(status == ACL_EVENT_RECORDED_STATUS_NOT_READY);  // the record is issued, not done
  aclrtStreamStatus consumer_status = ACL_STREAM_STATUS_COMPLETE;
  REQUIRE(KEEL_C(aclrtStreamQuery)(consumer, &consumer_status) == ACL_SUCCESS);
  CHECK(consumer_status == ACL_STREAM_STATUS_NOT_READY);  // waiting for the other stream's record
  __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
  REQUIRE(KEEL_C(aclrtSynchronizeStream)(consumer) == ACL_SUCCESS);
  CHECK(ran == std::vector<int>{1});
  REQUIRE(KEEL_C(aclrtSynchronizeEvent)(created) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtQueryEventStatus)(created, &status) == ACL_SUCCESS);
  CHECK(status == ACL_EVENT_RECORDED_STATUS_COMPLETE);

  // The opener records too, and the creator sees it.
  REQUIRE(KEEL_C(aclrtRecordEvent)(opened, consumer) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtSynchronizeEvent)(created) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyEvent)(opened) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyEvent)(created) == ACL_SUCCESS);
  aclrtEvent late = nullptr;
  CHECK(KEEL_C(aclrtIpcOpenEventHandle)(handle, &late) == ACL_ERROR_INVALID_PARAM);  // the creator destroyed it
  aclrtIpcEventHandle forged{};
  CHECK(KEEL_C(aclrtIpcOpenEventHandle)(forged, &late) == ACL_ERROR_INVALID_PARAM);
  CHECK(KEEL_C(aclrtDestroyStream)(producer) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(consumer) == ACL_SUCCESS);
}

namespace {
void count_run(void* runs) { static_cast<std::atomic<int>*>(runs)->fetch_add(1); }
// A task that runs until its gate opens, and says when it has begun.
struct gate {
  std::atomic<bool> began{false}, open{false};
};
void run_until_open(void* g) {
  auto* the_gate = static_cast<gate*>(g);
  the_gate->began = true;
  while (!the_gate->open) std::this_thread::yield();
}
}  // namespace

TEST_CASE("acl C API: an aborted stream skips its tasks not yet run, and a synchronize meanwhile reports the abort",
          "[acl][families][abort]") {
  keel_test::emulation_device().make_current();
  CHECK(KEEL_C(aclrtStreamAbort)(nullptr) == ACL_ERROR_INVALID_PARAM);
  aclrtStream stream = nullptr;
  REQUIRE(KEEL_C(aclrtCreateStream)(&stream) == ACL_SUCCESS);
  aclrtContext context = nullptr;
  REQUIRE(KEEL_C(aclrtGetCurrentContext)(&context) == ACL_SUCCESS);
  gate running;
  std::atomic<int> runs{0};
  // The stream runs a task that ends only once the abort is under way; a
  // host function waits behind it.
  REQUIRE(KEEL_C(aclrtLaunchHostFunc)(stream, run_until_open, &running) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtLaunchHostFunc)(stream, count_run, &runs) == ACL_SUCCESS);
  while (!running.began) std::this_thread::yield();

  auto* abort_stream = KEEL_C(aclrtStreamAbort);
  auto* set_context = KEEL_C(aclrtSetCurrentContext);
  std::atomic<aclError> aborted{-1};
  std::thread aborter([&] {
    if (set_context(context) == ACL_SUCCESS) aborted = abort_stream(stream);
  });
  aclError synchronized = ACL_SUCCESS;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {  // a timeout (1 ms) until the abort begins
    synchronized = KEEL_C(aclrtSynchronizeStreamWithTimeout)(stream, 1);
  } while (synchronized != ACL_ERROR_RT_STREAM_ABORT && aborted == -1 && std::chrono::steady_clock::now() < give_up);
  CHECK(synchronized == ACL_ERROR_RT_STREAM_ABORT);
  running.open = true;  // the running task ends; the abort then does
  aborter.join();
  CHECK(aborted == ACL_SUCCESS);
  CHECK(runs == 0);  // discarded

  CHECK(KEEL_C(aclrtSynchronizeStream)(stream) == ACL_SUCCESS);  // no error state is left
  REQUIRE(KEEL_C(aclrtLaunchHostFunc)(stream, count_run, &runs) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtSynchronizeStream)(stream) == ACL_SUCCESS);
  CHECK(runs == 1);  // the stream takes new work
  CHECK(KEEL_C(aclrtDestroyStream)(stream) == ACL_SUCCESS);
}

TEST_CASE("acl C API: a stream bound to a model being built cannot be aborted", "[acl][families][abort]") {
  keel_test::emulation_device().make_current();
  aclrtStream bound = nullptr;
  REQUIRE(KEEL_C(aclrtCreateStreamWithConfig)(&bound, 0, ACL_STREAM_PERSISTENT) == ACL_SUCCESS);
  aclmdlRI model = nullptr;
  REQUIRE(KEEL_C(aclmdlRIBuildBegin)(&model, 0) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclmdlRIBindStream)(model, bound, ACL_MODEL_STREAM_FLAG_HEAD) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtStreamAbort)(bound) == ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  REQUIRE(KEEL_C(aclmdlRIEndTask)(model, bound) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclmdlRIBuildEnd)(model, nullptr) == ACL_SUCCESS);
  CHECK(KEEL_C(aclmdlRIUnbindStream)(model, bound) == ACL_SUCCESS);
  CHECK(KEEL_C(aclmdlRIDestroy)(model) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtStreamAbort)(bound) == ACL_SUCCESS);  // unbound: an empty stream aborts at once
  CHECK(KEEL_C(aclrtDestroyStream)(bound) == ACL_SUCCESS);
}

namespace {
// What the stream state callback was told, of every stream.
struct state_changes {
  std::mutex m;
  std::vector<std::pair<aclrtStream, aclrtStreamState>> seen;
  std::vector<std::pair<aclrtStream, aclrtStreamState>> of(aclrtStream s) {
    std::lock_guard<std::mutex> lock(m);
    std::vector<std::pair<aclrtStream, aclrtStreamState>> mine;
    for (const auto& c : seen)
      if (c.first == s) mine.push_back(c);
    return mine;
  }
};
void note_state(aclrtStream stm, aclrtStreamState state, void* args) {
  auto* changes = static_cast<state_changes*>(args);
  std::lock_guard<std::mutex> lock(changes->m);
  changes->seen.emplace_back(stm, state);
}
}  // namespace

TEST_CASE("acl C API: a stream state callback is told after a stream is made and before it is destroyed",
          "[acl][families][stream_state]") {
  keel_test::emulation_device().make_current();
  state_changes changes;
  CHECK(KEEL_C(aclrtRegStreamStateCallback)(nullptr, note_state, &changes) == ACL_ERROR_INVALID_PARAM);
  CHECK(KEEL_C(aclrtRegStreamStateCallback)("", note_state, &changes) == ACL_ERROR_INVALID_PARAM);
  CHECK(KEEL_C(aclrtRegStreamStateCallback)("keel.test", nullptr, nullptr) == ACL_SUCCESS);  // not registered: no-op
  REQUIRE(KEEL_C(aclrtRegStreamStateCallback)("keel.test", note_state, &changes) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtRegStreamStateCallback)("keel.test", note_state, &changes) == ACL_ERROR_INVALID_PARAM);  // once

  aclrtStream stream = nullptr;
  REQUIRE(KEEL_C(aclrtCreateStream)(&stream) == ACL_SUCCESS);
  using change = std::pair<aclrtStream, aclrtStreamState>;
  CHECK(changes.of(stream) == std::vector<change>{{stream, ACL_RT_STREAM_STATE_CREATE_POST}});
  REQUIRE(KEEL_C(aclrtDestroyStream)(stream) == ACL_SUCCESS);
  CHECK(changes.of(stream) ==
        std::vector<change>{{stream, ACL_RT_STREAM_STATE_CREATE_POST}, {stream, ACL_RT_STREAM_STATE_DESTROY_PRE}});

  REQUIRE(KEEL_C(aclrtRegStreamStateCallback)("keel.test", nullptr, nullptr) == ACL_SUCCESS);  // unregistered
  {
    std::lock_guard<std::mutex> lock(changes.m);
    changes.seen.clear();
  }
  aclrtStream untold = nullptr;
  REQUIRE(KEEL_C(aclrtCreateStream)(&untold) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(untold) == ACL_SUCCESS);
  CHECK(changes.of(untold).empty());
}

TEST_CASE("acl C API: the emulated device's utilisation: idle cores, memory not reported", "[acl][families][utilization]") {
  keel_test::emulation_device().make_current();
  aclrtUtilizationInfo info{};
  CHECK(KEEL_C(aclrtGetDeviceUtilizationRate)(0, nullptr) == ACL_ERROR_INVALID_PARAM);
  std::uint32_t devices = 0;
  REQUIRE(KEEL_C(aclrtGetDeviceCount)(&devices) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtGetDeviceUtilizationRate)(static_cast<std::int32_t>(devices), &info) ==
        ACL_ERROR_RT_INVALID_DEVICEID);
  CHECK(KEEL_C(aclrtGetDeviceUtilizationRate)(-1, &info) == ACL_ERROR_RT_INVALID_DEVICEID);
  info.memoryUtilization = 50;
  REQUIRE(KEEL_C(aclrtGetDeviceUtilizationRate)(0, &info) == ACL_SUCCESS);
  CHECK(info.cubeUtilization == 0);
  CHECK(info.vectorUtilization == 0);
  CHECK(info.aicpuUtilization == 0);
  CHECK(info.memoryUtilization == -1);
  CHECK(info.utilizationExtend == nullptr);
}
