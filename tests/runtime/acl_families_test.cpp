// SPDX-License-Identifier: Apache-2.0
// The families of CANN's runtime API real programs call besides keel's own:
// data buffers, system and device queries, the error report, stream config
// handles and failure modes, the context's default stream, stream memory
// operations, the reduce task and event timestamps. Each is looked up by
// name in the loaded emulation with the type of its C declaration (the
// emulation's headers), as a C program linked to libascendcl would call it.
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <atomic>
#include <chrono>
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

void bump(void* counter) { static_cast<std::atomic<int>*>(counter)->fetch_add(1); }

}  // namespace

TEST_CASE("acl C API: data buffers describe memory the caller owns", "[acl][families]") {
  int storage[4] = {};
  aclDataBuffer* b = KEEL_C(aclCreateDataBuffer)(storage, sizeof storage);
  REQUIRE(b != nullptr);
  CHECK(KEEL_C(aclGetDataBufferAddr)(b) == storage);
  CHECK(KEEL_C(aclGetDataBufferSizeV2)(b) == sizeof storage);
  CHECK(KEEL_C(aclUpdateDataBuffer)(b, storage + 1, 4) == ACL_SUCCESS);
  CHECK(KEEL_C(aclGetDataBufferAddr)(b) == storage + 1);
  CHECK(KEEL_C(aclGetDataBufferSizeV2)(b) == 4u);
  CHECK(KEEL_C(aclDestroyDataBuffer)(b) == ACL_SUCCESS);
  CHECK(KEEL_C(aclDestroyDataBuffer)(b) == ACL_ERROR_INVALID_PARAM);  // not a live buffer any more
  CHECK(KEEL_C(aclGetDataBufferAddr)(b) == nullptr);
  CHECK(KEEL_C(aclDestroyDataBuffer)(nullptr) == ACL_ERROR_INVALID_PARAM);

  CHECK(KEEL_C(aclDataTypeSize)(ACL_FLOAT) == 4u);
  CHECK(KEEL_C(aclDataTypeSize)(ACL_FLOAT16) == 2u);
  CHECK(KEEL_C(aclDataTypeSize)(ACL_INT64) == 8u);
  CHECK(KEEL_C(aclDataTypeSize)(ACL_COMPLEX128) == 16u);
  CHECK(KEEL_C(aclDataTypeSize)(ACL_DT_UNDEFINED) == 0u);
  CHECK(KEEL_C(aclFloatToFloat16)(1.625f) == 0x3e80);
  CHECK(KEEL_C(aclFloat16ToFloat)(0x3e80) == 1.625f);
}

TEST_CASE("acl C API: the system and the device describe themselves", "[acl][families]") {
  keel_test::emulation_device().make_current();
  aclrtRunMode mode = ACL_DEVICE;
  CHECK(KEEL_C(aclrtGetRunMode)(&mode) == ACL_SUCCESS);
  CHECK(mode == ACL_HOST);
  CHECK(KEEL_C(aclrtGetRunMode)(nullptr) == ACL_ERROR_INVALID_PARAM);

  char runtime[] = "runtime", unknown[] = "no-such-package";
  char version[ACL_PKG_VERSION_MAX_SIZE] = {};
  std::int32_t number = 0;
  CHECK(KEEL_C(aclsysGetVersionStr)(runtime, version) == ACL_SUCCESS);
  CHECK(std::string(version) == "8.5.0");
  CHECK(KEEL_C(aclsysGetVersionNum)(runtime, &number) == ACL_SUCCESS);
  CHECK(number == 8050000);
  CHECK(KEEL_C(aclsysGetVersionStr)(unknown, version) == ACL_ERROR_INVALID_PARAM);

  const std::string soc = KEEL_C(aclrtGetSocName)();
  CHECK(soc == "Ascend910B4");
  std::int32_t compatible = -1;
  CHECK(KEEL_C(aclrtCheckArchCompatibility)(soc.c_str(), &compatible) == ACL_SUCCESS);
  CHECK(compatible == 1);
  CHECK(KEEL_C(aclrtCheckArchCompatibility)("Ascend310P3", &compatible) == ACL_SUCCESS);
  CHECK(compatible == 0);

  const aclCannAttr* attrs = nullptr;
  std::size_t count = 0;
  CHECK(KEEL_C(aclGetCannAttributeList)(&attrs, &count) == ACL_SUCCESS);
  CHECK(count == 2u);
  std::int32_t value = -1;
  CHECK(KEEL_C(aclGetCannAttribute)(ACL_CANN_ATTR_BF16, &value) == ACL_SUCCESS);
  CHECK(value == 1);
  CHECK(KEEL_C(aclGetCannAttribute)(ACL_CANN_ATTR_JIT_COMPILE, &value) == ACL_SUCCESS);
  CHECK(value == 0);

  std::int64_t info = 0;
  CHECK(KEEL_C(aclrtGetDeviceInfo)(0, ACL_DEV_ATTR_AICORE_CORE_NUM, &info) == ACL_SUCCESS);
  CHECK(info == 20);
  CHECK(KEEL_C(aclrtGetDeviceInfo)(0, ACL_DEV_ATTR_VECTOR_CORE_NUM, &info) == ACL_SUCCESS);
  CHECK(info == 40);
  CHECK(KEEL_C(aclrtGetDeviceInfo)(0, ACL_DEV_ATTR_NPU_ARCH, &info) == ACL_ERROR_INVALID_PARAM);
  CHECK(KEEL_C(aclrtGetDeviceInfo)(64, ACL_DEV_ATTR_AICORE_CORE_NUM, &info) == ACL_ERROR_RT_INVALID_DEVICEID);
  CHECK(KEEL_C(aclrtGetDeviceCapability)(0, ACL_FEATURE_TSCPU_TASK_UPDATE_SUPPORT_AIC_AIV, &value) == ACL_SUCCESS);
  CHECK(value == 1);
  std::uint32_t cores = 0;
  CHECK(KEEL_C(aclrtGetResInCurrentThread)(ACL_RT_DEV_RES_CUBE_CORE, &cores) == ACL_SUCCESS);
  CHECK(cores == 20u);
  std::uint32_t elsewhere = 0;
  aclError without_context = ACL_SUCCESS;
  auto* const get_res_in_current_thread = KEEL_C(aclrtGetResInCurrentThread);  // Catch's macros: this thread only
  std::thread([&] { without_context = get_res_in_current_thread(ACL_RT_DEV_RES_CUBE_CORE, &elsewhere); }).join();
  CHECK(without_context == ACL_ERROR_RT_CONTEXT_NULL);

  aclrtDeviceStatus health = ACL_RT_DEVICE_STATUS_ABNORMAL;
  CHECK(KEEL_C(aclrtQueryDeviceStatus)(0, &health) == ACL_SUCCESS);
  CHECK(health == ACL_RT_DEVICE_STATUS_NORMAL);
  CHECK(KEEL_C(aclrtQueryDeviceStatus)(64, &health) == ACL_ERROR_RT_INVALID_DEVICEID);

  aclrtErrorInfo error;
  std::memset(&error, 0xff, sizeof error);
  CHECK(KEEL_C(aclrtGetErrorVerbose)(0, &error) == ACL_SUCCESS);
  CHECK(error.errorType == ACL_RT_NO_ERROR);
  CHECK(error.hasDetail == 0);
}

TEST_CASE("acl C API: aclGetRecentErrMsg hands the text out once", "[acl][families]") {
  CHECK(KEEL_C(aclrtGetRunMode)(nullptr) == ACL_ERROR_INVALID_PARAM);
  const char* first = KEEL_C(aclGetRecentErrMsg)();
  REQUIRE(first != nullptr);
  CHECK(std::string(first).find("aclrtGetRunMode") != std::string::npos);
  CHECK(KEEL_C(aclGetRecentErrMsg)() == nullptr);  // CANN: read and cleared
}

TEST_CASE("acl C API: stream config handles and the context's default stream", "[acl][families]") {
  keel_test::emulation_device().make_current();
  aclrtStreamConfigHandle* config = KEEL_C(aclrtCreateStreamConfigHandle)();
  REQUIRE(config != nullptr);
  const std::uint32_t flag = ACL_STREAM_FAST_LAUNCH, priority = 3, bad_priority = 8;
  CHECK(KEEL_C(aclrtSetStreamConfigOpt)(config, ACL_RT_STREAM_FLAG, &flag, sizeof flag) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtSetStreamConfigOpt)(config, ACL_RT_STREAM_PRIORITY, &priority, sizeof priority) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtSetStreamConfigOpt)(config, ACL_RT_STREAM_PRIORITY, &bad_priority, sizeof bad_priority) ==
        ACL_ERROR_INVALID_PARAM);
  CHECK(KEEL_C(aclrtSetStreamConfigOpt)(config, ACL_RT_STREAM_PRIORITY, &priority, 1) == ACL_ERROR_INVALID_PARAM);
  aclrtStream s = nullptr;
  REQUIRE(KEEL_C(aclrtCreateStreamV2)(&s, config) == ACL_SUCCESS);
  std::uint32_t got_flags = 0, got_priority = 0;
  CHECK(KEEL_C(aclrtStreamGetFlags)(s, &got_flags) == ACL_SUCCESS);
  CHECK(got_flags == ACL_STREAM_FAST_LAUNCH);
  CHECK(KEEL_C(aclrtStreamGetPriority)(s, &got_priority) == ACL_SUCCESS);
  CHECK(got_priority == 3u);  // the refused settings changed nothing
  CHECK(KEEL_C(aclrtDestroyStream)(s) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStreamConfigHandle)(config) == ACL_SUCCESS);

  aclrtStream first = nullptr, again = nullptr;
  REQUIRE(KEEL_C(aclrtCtxGetCurrentDefaultStream)(&first) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtCtxGetCurrentDefaultStream)(&again) == ACL_SUCCESS);
  CHECK(first != nullptr);
  CHECK(first == again);  // one per context
  aclrtContext made = nullptr, original = nullptr;
  REQUIRE(KEEL_C(aclrtGetCurrentContext)(&original) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtCreateContext)(&made, 0) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtCtxGetCurrentDefaultStream)(&again) == ACL_SUCCESS);
  CHECK(again != first);
  REQUIRE(KEEL_C(aclrtSetCurrentContext)(original) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyContext)(made) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtSynchronizeStream)(again) == ACL_ERROR_RT_INVALID_HANDLE);  // it went with its context
  REQUIRE(KEEL_C(aclrtCtxGetCurrentDefaultStream)(&again) == ACL_SUCCESS);
  CHECK(again == first);  // the default context's stays
}

TEST_CASE("acl C API: aclrtValueWait holds its stream until aclrtValueWrite makes the condition true",
          "[acl][families]") {
  keel_test::emulation_device().make_current();
  aclrtStream waiter = nullptr, writer = nullptr;
  REQUIRE(KEEL_C(aclrtCreateStream)(&waiter) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtCreateStream)(&writer) == ACL_SUCCESS);
  void* flag = nullptr;
  REQUIRE(KEEL_C(aclrtMalloc)(&flag, sizeof(std::uint64_t), ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtMemset)(flag, 8, 0, 8) == ACL_SUCCESS);
  std::atomic<int> after{0};

  CHECK(KEEL_C(aclrtValueWait)(flag, 5, 7, waiter) == ACL_ERROR_INVALID_PARAM);  // not a condition
  CHECK(KEEL_C(aclrtValueWrite)(flag, 5, 1, writer) == ACL_ERROR_INVALID_PARAM);  // flag is reserved: 0
  CHECK(KEEL_C(aclrtValueWrite)(static_cast<char*>(flag) + 1, 5, 0, writer) == ACL_ERROR_INVALID_PARAM);
  REQUIRE(KEEL_C(aclrtValueWait)(flag, 5, ACL_STREAM_WAIT_VALUE_EQ, waiter) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtLaunchHostFunc)(waiter, bump, &after) == ACL_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  aclrtStreamStatus status = ACL_STREAM_STATUS_COMPLETE;
  CHECK(KEEL_C(aclrtStreamQuery)(waiter, &status) == ACL_SUCCESS);
  CHECK(status == ACL_STREAM_STATUS_NOT_READY);
  CHECK(after == 0);
  REQUIRE(KEEL_C(aclrtValueWrite)(flag, 5, 0, writer) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtSynchronizeStream)(waiter) == ACL_SUCCESS);
  CHECK(after == 1);

  // The other conditions, on the value now 5 (0b101); a null stream is the context's default stream.
  REQUIRE(KEEL_C(aclrtValueWait)(flag, 3, ACL_STREAM_WAIT_VALUE_GEQ, nullptr) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtValueWait)(flag, 4, ACL_STREAM_WAIT_VALUE_AND, nullptr) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtValueWait)(flag, 2, ACL_STREAM_WAIT_VALUE_NOR, nullptr) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtValueWrite)(flag, 9, 0, nullptr) == ACL_SUCCESS);
  aclrtStream standard = nullptr;
  REQUIRE(KEEL_C(aclrtCtxGetCurrentDefaultStream)(&standard) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtSynchronizeStream)(standard) == ACL_SUCCESS);
  std::uint64_t now = 0;
  REQUIRE(KEEL_C(aclrtMemcpy)(&now, 8, flag, 8, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS);
  CHECK(now == 9u);

  CHECK(KEEL_C(aclrtFree)(flag) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(waiter) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(writer) == ACL_SUCCESS);
}

TEST_CASE("acl C API: aclrtReduceAsync combines element by element in stream order", "[acl][families]") {
  keel_test::emulation_device().make_current();
  aclrtStream s = nullptr;
  REQUIRE(KEEL_C(aclrtCreateStream)(&s) == ACL_SUCCESS);
  float dst[4] = {1, 5, 3, 8};
  const float src[4] = {2, 4, 6, 1};
  REQUIRE(KEEL_C(aclrtReduceAsync)(dst, src, sizeof dst, ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, ACL_FLOAT, s, nullptr) ==
          ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtReduceAsync)(dst, src, sizeof dst, ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX, ACL_FLOAT, s, nullptr) ==
          ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtSynchronizeStream)(s) == ACL_SUCCESS);
  CHECK(dst[0] == 3.0f);  // max(1 + 2, 2)
  CHECK(dst[3] == 9.0f);
  std::int16_t small[2] = {7, -3};
  const std::int16_t other[2] = {2, -9};
  REQUIRE(KEEL_C(aclrtReduceAsync)(small, other, sizeof small, ACL_RT_MEMCPY_SDMA_AUTOMATIC_MIN, ACL_INT16, s,
                                   nullptr) == ACL_SUCCESS);
  std::uint16_t half[1] = {KEEL_C(aclFloatToFloat16)(1.5f)};
  const std::uint16_t half_src[1] = {KEEL_C(aclFloatToFloat16)(0.25f)};
  REQUIRE(KEEL_C(aclrtReduceAsync)(half, half_src, sizeof half, ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, ACL_FLOAT16, s,
                                   nullptr) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtSynchronizeStream)(s) == ACL_SUCCESS);
  CHECK(small[0] == 2);
  CHECK(small[1] == -9);
  CHECK(KEEL_C(aclFloat16ToFloat)(half[0]) == 1.75f);

  CHECK(KEEL_C(aclrtReduceAsync)(dst, src, 6, ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, ACL_FLOAT, s, nullptr) ==
        ACL_ERROR_INVALID_PARAM);  // not whole elements
  CHECK(KEEL_C(aclrtReduceAsync)(dst, src, 8, ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, ACL_DOUBLE, s, nullptr) ==
        ACL_ERROR_INVALID_PARAM);
  CHECK(KEEL_C(aclrtReduceAsync)(dst, src, 8, ACL_RT_MEMCPY_SDMA_AUTOMATIC_EQUAL, ACL_FLOAT, s, nullptr) ==
        ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  CHECK(KEEL_C(aclrtDestroyStream)(s) == ACL_SUCCESS);
}

TEST_CASE("acl C API: an event's timestamp is when its record completed", "[acl][families]") {
  keel_test::emulation_device().make_current();
  aclrtStream s = nullptr;
  aclrtEvent timed = nullptr, plain = nullptr;
  REQUIRE(KEEL_C(aclrtCreateStream)(&s) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtCreateEvent)(&timed) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtCreateEventWithFlag)(&plain, ACL_EVENT_SYNC) == ACL_SUCCESS);
  std::uint64_t first = 0, second = 0;
  CHECK(KEEL_C(aclrtEventGetTimestamp)(timed, &first) == ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID);  // no record yet
  REQUIRE(KEEL_C(aclrtRecordEvent)(timed, s) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtSynchronizeStream)(s) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtEventGetTimestamp)(timed, &first) == ACL_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(KEEL_C(aclrtRecordEvent)(timed, s) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtSynchronizeStream)(s) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtEventGetTimestamp)(timed, &second) == ACL_SUCCESS);
  CHECK(second - first >= 5000u);  // microseconds
  REQUIRE(KEEL_C(aclrtRecordEvent)(plain, s) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtSynchronizeStream)(s) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtEventGetTimestamp)(plain, &first) == ACL_ERROR_INVALID_PARAM);  // cannot be timed
  CHECK(KEEL_C(aclrtDestroyEvent)(timed) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyEvent)(plain) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(s) == ACL_SUCCESS);
}

TEST_CASE("acl C API: ACL_STOP_ON_FAILURE stops a failed stream's host functions, for its whole context",
          "[acl][families]") {
  keel_test::emulation_device().make_current();
  aclrtContext original = nullptr;
  REQUIRE(KEEL_C(aclrtGetCurrentContext)(&original) == ACL_SUCCESS);
  const bool stop = GENERATE(false, true);
  INFO((stop ? "ACL_STOP_ON_FAILURE" : "ACL_CONTINUE_ON_FAILURE"));
  aclrtContext context = nullptr;
  REQUIRE(KEEL_C(aclrtCreateContext)(&context, 0) == ACL_SUCCESS);  // its own: the mode is the context's
  aclrtStream held = nullptr, moded = nullptr, failing = nullptr;
  REQUIRE(KEEL_C(aclrtCreateStream)(&held) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtCreateStream)(&moded) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtCreateStream)(&failing) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtSetStreamFailureMode)(moded, 2) == ACL_ERROR_INVALID_PARAM);
  REQUIRE(KEEL_C(aclrtSetStreamFailureMode)(moded, stop ? ACL_STOP_ON_FAILURE : ACL_CONTINUE_ON_FAILURE) ==
          ACL_SUCCESS);
  CHECK(KEEL_C(aclrtSetStreamFailureMode)(moded, ACL_CONTINUE_ON_FAILURE) == ACL_ERROR_INVALID_PARAM);  // once

  // `held` waits for a value nobody writes yet: an event it records stays
  // pending, and `failing`'s bounded wait on it fails the stream.
  alignas(8) static std::uint64_t gate = 0;
  __atomic_store_n(&gate, 0, __ATOMIC_RELEASE);
  aclrtEvent e = nullptr;
  REQUIRE(KEEL_C(aclrtCreateEvent)(&e) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtValueWait)(&gate, 1, ACL_STREAM_WAIT_VALUE_EQ, held) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtRecordEvent)(e, held) == ACL_SUCCESS);
  std::atomic<int> ran{0};
  REQUIRE(KEEL_C(aclrtStreamWaitEventWithTimeout)(failing, e, 1) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtLaunchHostFunc)(failing, bump, &ran) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtSynchronizeStream)(failing) == ACL_ERROR_RT_AICORE_EXCEPTION);
  CHECK(ran == (stop ? 0 : 1));  // the mode set on `moded` holds for `failing`, of the same context

  __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
  CHECK(KEEL_C(aclrtSynchronizeStream)(held) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyEvent)(e) == ACL_SUCCESS);
  for (aclrtStream s : {held, moded, failing}) CHECK(KEEL_C(aclrtDestroyStream)(s) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtSetCurrentContext)(original) == ACL_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyContext)(context) == ACL_SUCCESS);
}

TEST_CASE("acl C API: an operator goes to a stream of the current device", "[acl][families][multi_device]") {
  keel::acl::device& dev = keel_test::emulation_device();
  const keel::acl::api& a = dev.functions();
  REQUIRE(a.aclrtSetDevice(1) == ACL_SUCCESS);
  aclrtStream elsewhere = nullptr;
  REQUIRE(KEEL_C(aclrtCreateStream)(&elsewhere) == ACL_SUCCESS);
  REQUIRE(a.aclrtSetDevice(0) == ACL_SUCCESS);
  float x[2] = {1, 2}, y[2] = {3, 4}, out[2] = {0, 0}, one = 1;
  const std::int64_t shape[1] = {2}, stride[1] = {1};
  aclTensor* tx = KEEL_C(aclCreateTensor)(shape, 1, ACL_FLOAT, stride, 0, ACL_FORMAT_ND, shape, 1, x);
  aclTensor* ty = KEEL_C(aclCreateTensor)(shape, 1, ACL_FLOAT, stride, 0, ACL_FORMAT_ND, shape, 1, y);
  aclTensor* tout = KEEL_C(aclCreateTensor)(shape, 1, ACL_FLOAT, stride, 0, ACL_FORMAT_ND, shape, 1, out);
  aclScalar* alpha = KEEL_C(aclCreateScalar)(&one, ACL_FLOAT);
  std::uint64_t workspace = 0;
  aclOpExecutor* executor = nullptr;
  REQUIRE(KEEL_C(aclnnAddGetWorkspaceSize)(tx, ty, alpha, tout, &workspace, &executor) == ACLNN_SUCCESS);
  REQUIRE(workspace == 0u);
  (void)KEEL_C(aclrtGetLastError)(ACL_RT_THREAD_LEVEL);
  CHECK(KEEL_C(aclnnAdd)(nullptr, 0, executor, elsewhere) == ACLNN_ERR_RUNTIME_ERROR);
  CHECK(KEEL_C(aclrtGetLastError)(ACL_RT_THREAD_LEVEL) == ACL_ERROR_RT_STREAM_CONTEXT);
  CHECK(out[1] == 0.0f);
  CHECK(KEEL_C(aclDestroyAclOpExecutor)(executor) == ACLNN_SUCCESS);  // a refused launch did not consume it
  for (aclTensor* t : {tx, ty, tout}) CHECK(KEEL_C(aclDestroyTensor)(t) == ACLNN_SUCCESS);
  CHECK(KEEL_C(aclDestroyScalar)(alpha) == ACLNN_SUCCESS);
  CHECK(KEEL_C(aclrtDestroyStream)(elsewhere) == ACL_SUCCESS);
}

namespace {
// An inline parameter of a random-number task.
template <class T>
aclrtRandomParaInfo random_param(T value) {
  aclrtRandomParaInfo p{};
  std::memcpy(p.valueOrAddr, &value, sizeof value);
  p.size = sizeof value;
  return p;
}
}  // namespace

TEST_CASE("acl C API: aclrtRandomNumAsync draws from Philox4x32-10 and advances the counter", "[acl][families]") {
  keel_test::emulation_device().make_current();
  aclrtStream s = nullptr;
  REQUIRE(KEEL_C(aclrtCreateStream)(&s) == ACL_SUCCESS);
  alignas(16) std::uint64_t counter[2] = {0, 0};
  std::uint64_t words[4] = {};
  aclrtRandomNumTaskInfo task{};
  task.dataType = ACL_UINT64;
  task.randomNumFuncParaInfo.funcType = ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS;
  task.randomNumFuncParaInfo.paramInfo.uniformDisInfo.min = random_param<std::uint64_t>(0);
  task.randomNumFuncParaInfo.paramInfo.uniformDisInfo.max = random_param<std::uint64_t>(UINT64_MAX);
  task.randomResultAddr = words;
  task.randomCounterAddr = counter;
  task.randomSeed = random_param<std::uint64_t>(0);
  task.randomNum = random_param<std::uint64_t>(2);
  REQUIRE(KEEL_C(aclrtRandomNumAsync)(&task, s, nullptr) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtSynchronizeStream)(s) == ACL_SUCCESS);
  // Random123's known answer for Philox4x32-10, key 0, counter 0.
  CHECK(words[0] == 0x6627e8d5e169c58dULL);
  CHECK(words[1] == 0xbc57ac4c9b00dbd8ULL);
  CHECK(counter[0] == 1u);  // one block of four words drawn
  REQUIRE(KEEL_C(aclrtRandomNumAsync)(&task, s, nullptr) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtSynchronizeStream)(s) == ACL_SUCCESS);
  CHECK(words[0] != 0x6627e8d5e169c58dULL);  // the next block
  CHECK(counter[0] == 2u);

  // Normal numbers: mean and spread as asked; truncated ones within two deviations.
  float normal[4096] = {};
  task.dataType = ACL_FLOAT;
  task.randomNumFuncParaInfo.funcType = ACL_RT_RANDOM_NUM_FUNC_TYPE_TRUNCATED_NORMAL_DIS;
  task.randomNumFuncParaInfo.paramInfo.normalDisInfo.mean = random_param(3.0f);
  task.randomNumFuncParaInfo.paramInfo.normalDisInfo.stddev = random_param(2.0f);
  task.randomResultAddr = normal;
  task.randomNum = random_param<std::uint64_t>(4096);
  REQUIRE(KEEL_C(aclrtRandomNumAsync)(&task, s, nullptr) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtSynchronizeStream)(s) == ACL_SUCCESS);
  double sum = 0;
  bool within = true;
  for (float v : normal) {
    sum += v;
    within = within && v >= -1.0f && v <= 7.0f;
  }
  CHECK(within);
  CHECK(sum / 4096 == Approx(3.0).margin(0.15));

  // A dropout bitmask: one bit per element, kept with probability 1 - ratio.
  unsigned char mask[512] = {};
  task.randomNumFuncParaInfo.funcType = ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK;
  task.randomNumFuncParaInfo.paramInfo.dropoutBitmaskInfo.dropoutRation = random_param(0.25f);
  task.randomResultAddr = mask;
  REQUIRE(KEEL_C(aclrtRandomNumAsync)(&task, s, nullptr) == ACL_SUCCESS);
  REQUIRE(KEEL_C(aclrtSynchronizeStream)(s) == ACL_SUCCESS);
  int kept = 0;
  for (unsigned char byte : mask)
    for (int bit = 0; bit < 8; ++bit) kept += (byte >> bit) & 1;
  CHECK(kept / 4096.0 == Approx(0.75).margin(0.03));

  task.dataType = ACL_INT32;  // normal numbers and ratios are floating point
  CHECK(KEEL_C(aclrtRandomNumAsync)(&task, s, nullptr) == ACL_ERROR_INVALID_PARAM);
  task.dataType = ACL_DOUBLE;
  CHECK(KEEL_C(aclrtRandomNumAsync)(&task, s, nullptr) == ACL_ERROR_INVALID_PARAM);
  CHECK(KEEL_C(aclrtDestroyStream)(s) == ACL_SUCCESS);
}
