// SPDX-License-Identifier: Apache-2.0
// CANN's capture, task-group, update and event rules as the emulation decides
// them itself, called as a C program calls them (no keel rule runs first):
// each refusal has CANN's status and the emulation's own explanation, and
// what the rule allows still works.
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_add.h"
#include "keel/acl/backend.hpp"

#include "../support/acl_c_function.hpp"

namespace {

// The calling thread's last message says the emulation's own rule refused the call.
bool refused_by_emulation() {
  const char* text = KEEL_C(aclGetRecentErrMsg)();
  return text != nullptr && std::string(text).find("refused by the emulation's own CANN rule") != std::string::npos;
}

aclmdlRICaptureStatus capture_status(aclrtStream s) {
  aclmdlRICaptureStatus st = ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED;
  REQUIRE(KEEL_C(aclmdlRICaptureGetInfo)(s, &st, nullptr) == ACL_SUCCESS);
  return st;
}

aclrtStream new_stream() {
  aclrtStream s = nullptr;
  REQUIRE(KEEL_C(aclrtCreateStream)(&s) == ACL_SUCCESS);
  return s;
}
aclrtEvent new_event() {
  aclrtEvent e = nullptr;
  REQUIRE(KEEL_C(aclrtCreateEventWithFlag)(&e, ACL_EVENT_SYNC) == ACL_SUCCESS);
  return e;
}

void nothing(void*) {}

// x = x + x on the stream: one aclnnAdd launch, the task a task group takes.
struct adder {
  adder() {
    REQUIRE(KEEL_C(aclrtMalloc)(&data, 8 * sizeof(float), ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS);
    const std::int64_t shape[1] = {8}, strides[1] = {1};
    tensor = KEEL_C(aclCreateTensor)(shape, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 1, data);
    float one = 1.0f;
    alpha = KEEL_C(aclCreateScalar)(&one, ACL_FLOAT);
    REQUIRE(tensor != nullptr);
    REQUIRE(alpha != nullptr);
  }
  ~adder() {
    KEEL_C(aclDestroyScalar)(alpha);
    KEEL_C(aclDestroyTensor)(tensor);
    KEEL_C(aclrtFree)(data);
  }
  adder(const adder&) = delete;
  adder& operator=(const adder&) = delete;
  aclnnStatus launch(aclrtStream s) const {
    std::uint64_t workspace = 0;
    aclOpExecutor* ex = nullptr;
    REQUIRE(KEEL_C(aclnnAddGetWorkspaceSize)(tensor, tensor, alpha, tensor, &workspace, &ex) == 0);
    return KEEL_C(aclnnAdd)(nullptr, 0, ex, s);
  }
  void* data = nullptr;
  aclTensor* tensor = nullptr;
  aclScalar* alpha = nullptr;
};

// A model with one task group of one aclnnAdd, captured on @p s.
aclrtTaskGrp capture_group(aclrtStream s, const adder& add, aclmdlRI& model) {
  aclrtTaskGrp g = nullptr;
  REQUIRE(KEEL_C(aclmdlRICaptureBegin)(s, ACL_MODEL_RI_CAPTURE_MODE_RELAXED) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclmdlRICaptureTaskGrpBegin)(s) == ACL_SUCCESS);
  REQUIRE(add.launch(s) == 0);
  REQUIRE(KEEL_C(aclmdlRICaptureTaskGrpEnd)(s, &g) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclmdlRICaptureEnd)(s, &model) == ACL_SUCCESS);
  return g;
}

}  // namespace

TEST_CASE("acl C API rules: a forked stream joins back before the capture ends", "[acl][rules]") {
  aclrtStream s = new_stream(), side = new_stream();
  aclrtEvent fork = new_event(), join = new_event();
  aclmdlRI m = nullptr;
  REQUIRE(KEEL_C(aclmdlRICaptureBegin)(s, ACL_MODEL_RI_CAPTURE_MODE_RELAXED) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtRecordEvent)(fork, s) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtStreamWaitEvent)(side, fork) == ACL_SUCCESS);
  CHECK(capture_status(side) == ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE);  // the wait forked it into the capture
  REQUIRE(KEEL_C(aclrtLaunchHostFunc)(side, nothing, nullptr) == ACL_SUCCESS);
  SECTION("not joined: ACL_ERROR_RT_STREAM_UNJOINED, and the capture is gone") {
    REQUIRE(KEEL_C(aclrtRecordEvent)(join, side) == ACL_SUCCESS);
    REQUIRE(KEEL_C(aclrtLaunchHostFunc)(side, nothing, nullptr) == ACL_SUCCESS);  // after the join's record
    REQUIRE(KEEL_C(aclrtStreamWaitEvent)(s, join) == ACL_SUCCESS);
    CHECK(KEEL_C(aclmdlRICaptureEnd)(side, &m) == ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED);  // not its origin
    CHECK(refused_by_emulation());
    CHECK(KEEL_C(aclmdlRICaptureEnd)(s, &m) == ACL_ERROR_RT_STREAM_UNJOINED);
    CHECK(refused_by_emulation());
    CHECK(m == nullptr);
    CHECK(capture_status(s) == ACL_MODEL_RI_CAPTURE_STATUS_NONE);
    CHECK(capture_status(side) == ACL_MODEL_RI_CAPTURE_STATUS_NONE);
  }
  SECTION("joined by a record after its last task that the capture waits on: the capture ends") {
    REQUIRE(KEEL_C(aclrtRecordEvent)(join, side) == ACL_SUCCESS);
    REQUIRE(KEEL_C(aclrtStreamWaitEvent)(s, join) == ACL_SUCCESS);
    REQUIRE(KEEL_C(aclmdlRICaptureEnd)(s, &m) == ACL_SUCCESS);
    CHECK(KEEL_C(aclmdlRIDestroy)(m) == ACL_SUCCESS);
  }
  CHECK(KEEL_C(aclrtSynchronizeStream)(side) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyEvent)(join) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyEvent)(fork) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(side) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(s) == ACL_SUCCESS);
}

TEST_CASE("acl C API rules: a capture whose joined stream was destroyed is invalidated", "[acl][rules]") {
  aclrtStream s = new_stream(), side = new_stream();
  aclrtEvent fork = new_event();
  aclmdlRI m = nullptr;
  REQUIRE(KEEL_C(aclmdlRICaptureBegin)(s, ACL_MODEL_RI_CAPTURE_MODE_RELAXED) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtRecordEvent)(fork, s) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtStreamWaitEvent)(side, fork) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtDestroyStream)(side) == ACL_SUCCESS);
  CHECK(KEEL_C(aclmdlRICaptureEnd)(s, &m) == ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED);
  CHECK(refused_by_emulation());
  CHECK(capture_status(s) == ACL_MODEL_RI_CAPTURE_STATUS_NONE);
  CHECK(KEEL_C(aclrtDestroyEvent)(fork) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(s) == ACL_SUCCESS);
}

TEST_CASE("acl C API rules: a capturing stream waits only on its own capture's records", "[acl][rules]") {
  aclrtStream a = new_stream(), b = new_stream();
  aclrtEvent e = new_event();
  aclmdlRI ma = nullptr, mb = nullptr;
  REQUIRE(KEEL_C(aclmdlRICaptureBegin)(a, ACL_MODEL_RI_CAPTURE_MODE_RELAXED) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclmdlRICaptureBegin)(b, ACL_MODEL_RI_CAPTURE_MODE_RELAXED) == ACL_SUCCESS);
  CHECK(KEEL_C(aclmdlRICaptureBegin)(b, ACL_MODEL_RI_CAPTURE_MODE_RELAXED) == ACL_ERROR_RT_STREAM_CAPTURED);
  CHECK(refused_by_emulation());
  REQUIRE(KEEL_C(aclrtRecordEvent)(e, a) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtStreamWaitEvent)(b, e) == ACL_ERROR_STREAM_CAPTURE_CONFLICT);
  CHECK(refused_by_emulation());
  CHECK(KEEL_C(aclmdlRICaptureEnd)(b, &mb) == ACL_SUCCESS);  // the refused wait left nothing behind
  CHECK(KEEL_C(aclmdlRICaptureEnd)(a, &ma) == ACL_SUCCESS);
  CHECK(KEEL_C(aclmdlRIDestroy)(ma) == ACL_SUCCESS);
  CHECK(KEEL_C(aclmdlRIDestroy)(mb) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyEvent)(e) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(b) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(a) == ACL_SUCCESS);
}

TEST_CASE("acl C API rules: task groups open and close once, inside a capture", "[acl][rules]") {
  aclrtStream s = new_stream();
  aclmdlRI m = nullptr;
  aclrtTaskGrp g = nullptr;
  CHECK(KEEL_C(aclmdlRICaptureTaskGrpBegin)(s) == ACL_ERROR_RT_STREAM_NOT_CAPTURED);
  CHECK(refused_by_emulation());
  REQUIRE(KEEL_C(aclmdlRICaptureBegin)(s, ACL_MODEL_RI_CAPTURE_MODE_RELAXED) == ACL_SUCCESS);
  CHECK(KEEL_C(aclmdlRICaptureTaskGrpEnd)(s, &g) == ACL_ERROR_STREAM_TASK_GROUP_STATUS);  // none open
  CHECK(refused_by_emulation());
  REQUIRE(KEEL_C(aclmdlRICaptureTaskGrpBegin)(s) == ACL_SUCCESS);
  CHECK(KEEL_C(aclmdlRICaptureTaskGrpBegin)(s) == ACL_ERROR_STREAM_TASK_GROUP_STATUS);  // open already
  CHECK(refused_by_emulation());
  // A group holds operator launches only.
  CHECK(KEEL_C(aclrtLaunchHostFunc)(s, nothing, nullptr) == ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT);
  CHECK(refused_by_emulation());
  CHECK(KEEL_C(aclmdlRICaptureEnd)(s, &m) == ACL_ERROR_STREAM_TASK_GROUP_STATUS);  // still open at the end
  CHECK(refused_by_emulation());
  CHECK(m == nullptr);
  CHECK(capture_status(s) == ACL_MODEL_RI_CAPTURE_STATUS_NONE);  // the capture is gone, with its group
  CHECK(KEEL_C(aclrtDestroyStream)(s) == ACL_SUCCESS);
}

TEST_CASE("acl C API rules: an update issues as many tasks as its group holds, one updater at a time",
          "[acl][rules]") {
  aclrtStream s = new_stream(), u = new_stream(), other = new_stream();
  const adder add;
  aclmdlRI m = nullptr;
  const aclrtTaskGrp g = capture_group(s, add, m);
  SECTION("too many tasks: ACL_ERROR_RT_MODEL_UPDATE_FAILED, and the stream updates nothing after") {
    REQUIRE(KEEL_C(aclmdlRICaptureTaskUpdateBegin)(u, g) == ACL_SUCCESS);
    REQUIRE(add.launch(u) == 0);
    REQUIRE(add.launch(u) == 0);
    CHECK(KEEL_C(aclmdlRICaptureTaskUpdateEnd)(u) == ACL_ERROR_RT_MODEL_UPDATE_FAILED);
    CHECK(refused_by_emulation());
    CHECK(KEEL_C(aclmdlRICaptureTaskUpdateEnd)(u) == ACL_ERROR_STREAM_TASK_GROUP_STATUS);  // not updating
    CHECK(refused_by_emulation());
  }
  SECTION("a second updater of the group, or a second update on one stream: ACL_ERROR_STREAM_TASK_GROUP_STATUS") {
    REQUIRE(KEEL_C(aclmdlRICaptureTaskUpdateBegin)(u, g) == ACL_SUCCESS);
    CHECK(KEEL_C(aclmdlRICaptureTaskUpdateBegin)(other, g) == ACL_ERROR_STREAM_TASK_GROUP_STATUS);
    CHECK(refused_by_emulation());
    CHECK(KEEL_C(aclmdlRICaptureTaskUpdateBegin)(u, g) == ACL_ERROR_STREAM_TASK_GROUP_STATUS);
    CHECK(refused_by_emulation());
    // An update issues operator launches only.
    CHECK(KEEL_C(aclrtLaunchHostFunc)(u, nothing, nullptr) == ACL_ERROR_STREAM_TASK_GROUP_STATUS);
    CHECK(refused_by_emulation());
    REQUIRE(add.launch(u) == 0);
    CHECK(KEEL_C(aclmdlRICaptureTaskUpdateEnd)(u) == ACL_SUCCESS);
    // The group is free again: the other stream updates it now.
    REQUIRE(KEEL_C(aclmdlRICaptureTaskUpdateBegin)(other, g) == ACL_SUCCESS);
    REQUIRE(add.launch(other) == 0);
    CHECK(KEEL_C(aclmdlRICaptureTaskUpdateEnd)(other) == ACL_SUCCESS);
  }
  SECTION("an update is issued on a stream that is not capturing") {
    REQUIRE(KEEL_C(aclmdlRICaptureBegin)(other, ACL_MODEL_RI_CAPTURE_MODE_RELAXED) == ACL_SUCCESS);
    CHECK(KEEL_C(aclmdlRICaptureTaskUpdateBegin)(other, g) == ACL_ERROR_STREAM_TASK_GROUP_STATUS);
    CHECK(refused_by_emulation());
    aclmdlRI empty = nullptr;
    REQUIRE(KEEL_C(aclmdlRICaptureEnd)(other, &empty) == ACL_SUCCESS);
    CHECK(KEEL_C(aclmdlRIDestroy)(empty) == ACL_SUCCESS);
  }
  CHECK(KEEL_C(aclrtSynchronizeStream)(u) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtSynchronizeStream)(other) == ACL_SUCCESS);
  CHECK(KEEL_C(aclmdlRIDestroy)(m) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(other) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(u) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(s) == ACL_SUCCESS);
}

TEST_CASE("acl C API rules: capture modes decide which threads may make unsafe calls", "[acl][rules]") {
  aclrtStream s = new_stream();
  char a[8] = {}, b[8] = {1};
  const auto copy = [&] { return KEEL_C(aclrtMemcpy)(a, sizeof a, b, sizeof b, ACL_MEMCPY_HOST_TO_HOST); };
  // The status a copy gets on another thread that first sets its own mode
  // (Catch's assertions stay on this thread: the functions are looked up here).
  const auto set_device = KEEL_C(aclrtSetDevice);
  const auto exchange = KEEL_C(aclmdlRICaptureThreadExchangeMode);
  const auto memcpy_fn = KEEL_C(aclrtMemcpy);
  const auto message = KEEL_C(aclGetRecentErrMsg);
  const auto copy_elsewhere = [&](aclmdlRICaptureMode own) {
    aclError status = ACL_ERROR_RT_INTERNAL_ERROR;
    std::string said;
    std::thread([&] {
      aclmdlRICaptureMode m = own;
      if (set_device(0) != ACL_SUCCESS || exchange(&m) != ACL_SUCCESS) return;
      status = memcpy_fn(a, sizeof a, b, sizeof b, ACL_MEMCPY_HOST_TO_HOST);
      if (status != ACL_SUCCESS) said = message();
    }).join();
    INFO(said);
    if (status != ACL_SUCCESS) CHECK(said.find("refused by the emulation's own CANN rule") != std::string::npos);
    return status;
  };
  aclmdlRI m = nullptr;
  SECTION("global: refused here and on a thread in global mode; thread-local and relaxed threads may") {
    REQUIRE(KEEL_C(aclmdlRICaptureBegin)(s, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL) == ACL_SUCCESS);
    CHECK(copy() == ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT);
    CHECK(refused_by_emulation());
    // Synchronizing the device, the capturing stream or an event recorded in
    // the capture, and querying that event, are unsafe calls too.
    aclrtEvent e = new_event();
    REQUIRE(KEEL_C(aclrtRecordEvent)(e, s) == ACL_SUCCESS);
    CHECK(KEEL_C(aclrtSynchronizeDevice)() == ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT);
    CHECK(refused_by_emulation());
    CHECK(KEEL_C(aclrtSynchronizeStream)(s) == ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT);
    CHECK(refused_by_emulation());
    CHECK(KEEL_C(aclrtSynchronizeEvent)(e) == ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT);
    CHECK(refused_by_emulation());
    aclrtEventRecordedStatus recorded = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    CHECK(KEEL_C(aclrtQueryEventStatus)(e, &recorded) == ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT);
    CHECK(refused_by_emulation());
    aclrtStream idle = new_stream();
    CHECK(KEEL_C(aclrtSynchronizeStream)(idle) == ACL_SUCCESS);  // a stream outside the capture
    CHECK(KEEL_C(aclrtDestroyStream)(idle) == ACL_SUCCESS);
    CHECK(KEEL_C(aclrtDestroyEvent)(e) == ACL_SUCCESS);
    CHECK(copy_elsewhere(ACL_MODEL_RI_CAPTURE_MODE_GLOBAL) == ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT);
    CHECK(copy_elsewhere(ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL) == ACL_SUCCESS);
    CHECK(copy_elsewhere(ACL_MODEL_RI_CAPTURE_MODE_RELAXED) == ACL_SUCCESS);
  }
  SECTION("thread-local: refused on the capturing thread only") {
    REQUIRE(KEEL_C(aclmdlRICaptureBegin)(s, ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL) == ACL_SUCCESS);
    CHECK(copy() == ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT);
    CHECK(refused_by_emulation());
    CHECK(copy_elsewhere(ACL_MODEL_RI_CAPTURE_MODE_GLOBAL) == ACL_SUCCESS);
  }
  SECTION("relaxed: refuses nothing") {
    REQUIRE(KEEL_C(aclmdlRICaptureBegin)(s, ACL_MODEL_RI_CAPTURE_MODE_RELAXED) == ACL_SUCCESS);
    CHECK(copy() == ACL_SUCCESS);
    CHECK(KEEL_C(aclrtSynchronizeStream)(s) == ACL_SUCCESS);
    CHECK(copy_elsewhere(ACL_MODEL_RI_CAPTURE_MODE_GLOBAL) == ACL_SUCCESS);
  }
  REQUIRE(KEEL_C(aclmdlRICaptureEnd)(s, &m) == ACL_SUCCESS);
  CHECK(KEEL_C(aclmdlRIDestroy)(m) == ACL_SUCCESS);
  CHECK(copy() == ACL_SUCCESS);  // no capture: nothing refused
  CHECK(KEEL_C(aclrtDestroyStream)(s) == ACL_SUCCESS);
}

TEST_CASE("acl C API rules: a strict capture ends on the thread that began it", "[acl][rules]") {
  aclrtStream s = new_stream();
  const auto set_device = KEEL_C(aclrtSetDevice);
  const auto end = KEEL_C(aclmdlRICaptureEnd);
  const auto message = KEEL_C(aclGetRecentErrMsg);
  // The capture's end on another thread: its status and message.
  const auto end_elsewhere = [&](aclmdlRI& m) {
    aclError status = ACL_ERROR_RT_INTERNAL_ERROR;
    std::string said;
    std::thread([&] {
      if (set_device(0) != ACL_SUCCESS) return;
      status = end(s, &m);
      if (status != ACL_SUCCESS) said = message();
    }).join();
    INFO(said);
    if (status != ACL_SUCCESS) CHECK(said.find("refused by the emulation's own CANN rule") != std::string::npos);
    return status;
  };
  aclmdlRI m = nullptr;
  SECTION("global or thread-local: ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD, and the capture goes on") {
    const aclmdlRICaptureMode mode = GENERATE(ACL_MODEL_RI_CAPTURE_MODE_GLOBAL, ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL);
    REQUIRE(KEEL_C(aclmdlRICaptureBegin)(s, mode) == ACL_SUCCESS);
    CHECK(end_elsewhere(m) == ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD);
    CHECK(capture_status(s) == ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE);
    REQUIRE(end(s, &m) == ACL_SUCCESS);
  }
  SECTION("relaxed: any thread ends it") {
    REQUIRE(KEEL_C(aclmdlRICaptureBegin)(s, ACL_MODEL_RI_CAPTURE_MODE_RELAXED) == ACL_SUCCESS);
    CHECK(end_elsewhere(m) == ACL_SUCCESS);
  }
  CHECK(KEEL_C(aclmdlRIDestroy)(m) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(s) == ACL_SUCCESS);
}

TEST_CASE("acl C API rules: while a task group is recorded, the capture's other streams take no work",
          "[acl][rules]") {
  aclrtStream s = new_stream(), side = new_stream(), outside = new_stream();
  aclrtEvent fork = new_event(), join = new_event();
  static char byte = 0;
  aclmdlRI m = nullptr;
  aclrtTaskGrp g = nullptr;
  REQUIRE(KEEL_C(aclmdlRICaptureBegin)(s, ACL_MODEL_RI_CAPTURE_MODE_RELAXED) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtRecordEvent)(fork, s) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtStreamWaitEvent)(side, fork) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclmdlRICaptureTaskGrpBegin)(s) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtLaunchHostFunc)(side, nothing, nullptr) == ACL_ERROR_STREAM_TASK_GROUP_INTR);
  CHECK(refused_by_emulation());
  CHECK(KEEL_C(aclrtMemsetAsync)(&byte, 1, 0, 1, side) == ACL_ERROR_STREAM_TASK_GROUP_INTR);
  CHECK(refused_by_emulation());
  CHECK(KEEL_C(aclrtRecordEvent)(join, side) == ACL_ERROR_STREAM_TASK_GROUP_INTR);
  CHECK(refused_by_emulation());
  CHECK(KEEL_C(aclrtMemsetAsync)(&byte, 1, 0, 1, outside) == ACL_SUCCESS);  // a stream outside the capture may
  REQUIRE(KEEL_C(aclmdlRICaptureTaskGrpEnd)(s, &g) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtLaunchHostFunc)(side, nothing, nullptr) == ACL_SUCCESS);  // the group ended
  REQUIRE(KEEL_C(aclrtRecordEvent)(join, side) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtStreamWaitEvent)(s, join) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclmdlRICaptureEnd)(s, &m) == ACL_SUCCESS);
  CHECK(KEEL_C(aclmdlRIDestroy)(m) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtSynchronizeStream)(outside) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyEvent)(join) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyEvent)(fork) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(outside) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(side) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(s) == ACL_SUCCESS);
}
