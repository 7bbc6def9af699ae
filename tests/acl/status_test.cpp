// SPDX-License-Identifier: Apache-2.0
// acl_category(): a message and CANN's symbol for every code the emulation
// headers document, keel::errc equivalences, and check().
#include <acl/acl.h>
#include <aclnn/acl_meta.h>

#include <catch2/catch.hpp>

#include <keel/acl/status.hpp>

#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace {

struct documented_code {
  int value;
  const char* symbol;
};

#define KEEL_TEST_CODE(symbol) documented_code{symbol, #symbol}
// Every aclError / aclnnStatus constant of the emulation headers (generated
// from them; ACLNN_ERR_INNER_KEY_CONFILICT, the deprecated alias of 561105,
// is reported under ACLNN_ERR_INNER_KEY_CONFLICT).
const std::vector<documented_code> documented = {
    KEEL_TEST_CODE(ACL_SUCCESS),
    KEEL_TEST_CODE(ACL_ERROR_INVALID_PARAM),
    KEEL_TEST_CODE(ACL_ERROR_UNINITIALIZE),
    KEEL_TEST_CODE(ACL_ERROR_REPEAT_INITIALIZE),
    KEEL_TEST_CODE(ACL_ERROR_INVALID_FILE),
    KEEL_TEST_CODE(ACL_ERROR_WRITE_FILE),
    KEEL_TEST_CODE(ACL_ERROR_INVALID_FILE_SIZE),
    KEEL_TEST_CODE(ACL_ERROR_PARSE_FILE),
    KEEL_TEST_CODE(ACL_ERROR_FILE_MISSING_ATTR),
    KEEL_TEST_CODE(ACL_ERROR_FILE_ATTR_INVALID),
    KEEL_TEST_CODE(ACL_ERROR_INVALID_DUMP_CONFIG),
    KEEL_TEST_CODE(ACL_ERROR_INVALID_PROFILING_CONFIG),
    KEEL_TEST_CODE(ACL_ERROR_INVALID_MODEL_ID),
    KEEL_TEST_CODE(ACL_ERROR_DESERIALIZE_MODEL),
    KEEL_TEST_CODE(ACL_ERROR_PARSE_MODEL),
    KEEL_TEST_CODE(ACL_ERROR_READ_MODEL_FAILURE),
    KEEL_TEST_CODE(ACL_ERROR_MODEL_SIZE_INVALID),
    KEEL_TEST_CODE(ACL_ERROR_MODEL_MISSING_ATTR),
    KEEL_TEST_CODE(ACL_ERROR_MODEL_INPUT_NOT_MATCH),
    KEEL_TEST_CODE(ACL_ERROR_MODEL_OUTPUT_NOT_MATCH),
    KEEL_TEST_CODE(ACL_ERROR_MODEL_NOT_DYNAMIC),
    KEEL_TEST_CODE(ACL_ERROR_OP_TYPE_NOT_MATCH),
    KEEL_TEST_CODE(ACL_ERROR_OP_INPUT_NOT_MATCH),
    KEEL_TEST_CODE(ACL_ERROR_OP_OUTPUT_NOT_MATCH),
    KEEL_TEST_CODE(ACL_ERROR_OP_ATTR_NOT_MATCH),
    KEEL_TEST_CODE(ACL_ERROR_OP_NOT_FOUND),
    KEEL_TEST_CODE(ACL_ERROR_OP_LOAD_FAILED),
    KEEL_TEST_CODE(ACL_ERROR_UNSUPPORTED_DATA_TYPE),
    KEEL_TEST_CODE(ACL_ERROR_FORMAT_NOT_MATCH),
    KEEL_TEST_CODE(ACL_ERROR_BIN_SELECTOR_NOT_REGISTERED),
    KEEL_TEST_CODE(ACL_ERROR_KERNEL_NOT_FOUND),
    KEEL_TEST_CODE(ACL_ERROR_BIN_SELECTOR_ALREADY_REGISTERED),
    KEEL_TEST_CODE(ACL_ERROR_KERNEL_ALREADY_REGISTERED),
    KEEL_TEST_CODE(ACL_ERROR_INVALID_QUEUE_ID),
    KEEL_TEST_CODE(ACL_ERROR_REPEAT_SUBSCRIBE),
    KEEL_TEST_CODE(ACL_ERROR_STREAM_NOT_SUBSCRIBE),
    KEEL_TEST_CODE(ACL_ERROR_THREAD_NOT_SUBSCRIBE),
    KEEL_TEST_CODE(ACL_ERROR_WAIT_CALLBACK_TIMEOUT),
    KEEL_TEST_CODE(ACL_ERROR_REPEAT_FINALIZE),
    KEEL_TEST_CODE(ACL_ERROR_NOT_STATIC_AIPP),
    KEEL_TEST_CODE(ACL_ERROR_COMPILING_STUB_MODE),
    KEEL_TEST_CODE(ACL_ERROR_GROUP_NOT_SET),
    KEEL_TEST_CODE(ACL_ERROR_GROUP_NOT_CREATE),
    KEEL_TEST_CODE(ACL_ERROR_PROF_ALREADY_RUN),
    KEEL_TEST_CODE(ACL_ERROR_PROF_NOT_RUN),
    KEEL_TEST_CODE(ACL_ERROR_DUMP_ALREADY_RUN),
    KEEL_TEST_CODE(ACL_ERROR_DUMP_NOT_RUN),
    KEEL_TEST_CODE(ACL_ERROR_PROF_REPEAT_SUBSCRIBE),
    KEEL_TEST_CODE(ACL_ERROR_PROF_API_CONFLICT),
    KEEL_TEST_CODE(ACL_ERROR_INVALID_MAX_OPQUEUE_NUM_CONFIG),
    KEEL_TEST_CODE(ACL_ERROR_INVALID_OPP_PATH),
    KEEL_TEST_CODE(ACL_ERROR_OP_UNSUPPORTED_DYNAMIC),
    KEEL_TEST_CODE(ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED),
    KEEL_TEST_CODE(ACL_ERROR_UNSUPPORTED_JPEG),
    KEEL_TEST_CODE(ACL_ERROR_INVALID_BUNDLE_MODEL_ID),
    KEEL_TEST_CODE(ACL_ERROR_BAD_ALLOC),
    KEEL_TEST_CODE(ACL_ERROR_API_NOT_SUPPORT),
    KEEL_TEST_CODE(ACL_ERROR_INVALID_DEVICE),
    KEEL_TEST_CODE(ACL_ERROR_MEMORY_ADDRESS_UNALIGNED),
    KEEL_TEST_CODE(ACL_ERROR_RESOURCE_NOT_MATCH),
    KEEL_TEST_CODE(ACL_ERROR_INVALID_RESOURCE_HANDLE),
    KEEL_TEST_CODE(ACL_ERROR_FEATURE_UNSUPPORTED),
    KEEL_TEST_CODE(ACL_ERROR_PROF_MODULES_UNSUPPORTED),
    KEEL_TEST_CODE(ACL_ERROR_STORAGE_OVER_LIMIT),
    KEEL_TEST_CODE(ACL_ERROR_INTERNAL_ERROR),
    KEEL_TEST_CODE(ACL_ERROR_FAILURE),
    KEEL_TEST_CODE(ACL_ERROR_GE_FAILURE),
    KEEL_TEST_CODE(ACL_ERROR_RT_FAILURE),
    KEEL_TEST_CODE(ACL_ERROR_DRV_FAILURE),
    KEEL_TEST_CODE(ACL_ERROR_PROFILING_FAILURE),
    KEEL_TEST_CODE(ACL_ERROR_RT_PARAM_INVALID),
    KEEL_TEST_CODE(ACL_ERROR_RT_INVALID_DEVICEID),
    KEEL_TEST_CODE(ACL_ERROR_RT_CONTEXT_NULL),
    KEEL_TEST_CODE(ACL_ERROR_RT_STREAM_CONTEXT),
    KEEL_TEST_CODE(ACL_ERROR_RT_MODEL_CONTEXT),
    KEEL_TEST_CODE(ACL_ERROR_RT_STREAM_MODEL),
    KEEL_TEST_CODE(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID),
    KEEL_TEST_CODE(ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL),
    KEEL_TEST_CODE(ACL_ERROR_RT_ADDR_UNALIGNED),
    KEEL_TEST_CODE(ACL_ERROR_RT_FILE_OPEN),
    KEEL_TEST_CODE(ACL_ERROR_RT_FILE_WRITE),
    KEEL_TEST_CODE(ACL_ERROR_RT_STREAM_SUBSCRIBE),
    KEEL_TEST_CODE(ACL_ERROR_RT_THREAD_SUBSCRIBE),
    KEEL_TEST_CODE(ACL_ERROR_RT_GROUP_NOT_SET),
    KEEL_TEST_CODE(ACL_ERROR_RT_GROUP_NOT_CREATE),
    KEEL_TEST_CODE(ACL_ERROR_RT_STREAM_NO_CB_REG),
    KEEL_TEST_CODE(ACL_ERROR_RT_INVALID_MEMORY_TYPE),
    KEEL_TEST_CODE(ACL_ERROR_RT_INVALID_HANDLE),
    KEEL_TEST_CODE(ACL_ERROR_RT_INVALID_MALLOC_TYPE),
    KEEL_TEST_CODE(ACL_ERROR_RT_WAIT_TIMEOUT),
    KEEL_TEST_CODE(ACL_ERROR_RT_TASK_TIMEOUT),
    KEEL_TEST_CODE(ACL_ERROR_RT_SYSPARAMOPT_NOT_SET),
    KEEL_TEST_CODE(ACL_ERROR_RT_DEVICE_TASK_ABORT),
    KEEL_TEST_CODE(ACL_ERROR_RT_STREAM_ABORT),
    KEEL_TEST_CODE(ACL_ERROR_RT_CAPTURE_DEPENDENCY),
    KEEL_TEST_CODE(ACL_ERROR_RT_STREAM_UNJOINED),
    KEEL_TEST_CODE(ACL_ERROR_RT_MODEL_CAPTURED),
    KEEL_TEST_CODE(ACL_ERROR_RT_STREAM_CAPTURED),
    KEEL_TEST_CODE(ACL_ERROR_RT_EVENT_CAPTURED),
    KEEL_TEST_CODE(ACL_ERROR_RT_STREAM_NOT_CAPTURED),
    KEEL_TEST_CODE(ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT),
    KEEL_TEST_CODE(ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT),
    KEEL_TEST_CODE(ACL_ERROR_STREAM_CAPTURE_CONFLICT),
    KEEL_TEST_CODE(ACL_ERROR_STREAM_TASK_GROUP_STATUS),
    KEEL_TEST_CODE(ACL_ERROR_STREAM_TASK_GROUP_INTR),
    KEEL_TEST_CODE(ACL_ERROR_RT_TASK_ABORT_STOP),
    KEEL_TEST_CODE(ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED),
    KEEL_TEST_CODE(ACL_ERROR_RT_MODEL_RUNNING),
    KEEL_TEST_CODE(ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD),
    KEEL_TEST_CODE(ACL_ERROR_RT_INSUFFICIENT_INPUT_ARRAY),
    KEEL_TEST_CODE(ACL_ERROR_RT_MODEL_UPDATE_FAILED),
    KEEL_TEST_CODE(ACL_ERROR_RT_CAPTURE_MODE_BLOCK_ASYNC),
    KEEL_TEST_CODE(ACL_ERROR_RT_FEATURE_NOT_SUPPORT),
    KEEL_TEST_CODE(ACL_ERROR_RT_MEMORY_ALLOCATION),
    KEEL_TEST_CODE(ACL_ERROR_RT_MEMORY_FREE),
    KEEL_TEST_CODE(ACL_ERROR_RT_AICORE_OVER_FLOW),
    KEEL_TEST_CODE(ACL_ERROR_RT_NO_DEVICE),
    KEEL_TEST_CODE(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL),
    KEEL_TEST_CODE(ACL_ERROR_RT_NO_PERMISSION),
    KEEL_TEST_CODE(ACL_ERROR_RT_NO_EVENT_RESOURCE),
    KEEL_TEST_CODE(ACL_ERROR_RT_NO_STREAM_RESOURCE),
    KEEL_TEST_CODE(ACL_ERROR_RT_NO_NOTIFY_RESOURCE),
    KEEL_TEST_CODE(ACL_ERROR_RT_NO_MODEL_RESOURCE),
    KEEL_TEST_CODE(ACL_ERROR_RT_NO_CDQ_RESOURCE),
    KEEL_TEST_CODE(ACL_ERROR_RT_OVER_LIMIT),
    KEEL_TEST_CODE(ACL_ERROR_RT_QUEUE_EMPTY),
    KEEL_TEST_CODE(ACL_ERROR_RT_QUEUE_FULL),
    KEEL_TEST_CODE(ACL_ERROR_RT_REPEATED_INIT),
    KEEL_TEST_CODE(ACL_ERROR_RT_AIVEC_OVER_FLOW),
    KEEL_TEST_CODE(ACL_ERROR_RT_OVER_FLOW),
    KEEL_TEST_CODE(ACL_ERROR_RT_DEVICE_OOM),
    KEEL_TEST_CODE(ACL_ERROR_RT_FEATURE_NOT_SUPPORT_UPDATE_OP),
    KEEL_TEST_CODE(ACL_ERROR_RT_TIMEOUT),
    KEEL_TEST_CODE(ACL_ERROR_RT_INTERNAL_ERROR),
    KEEL_TEST_CODE(ACL_ERROR_RT_TS_ERROR),
    KEEL_TEST_CODE(ACL_ERROR_RT_STREAM_TASK_FULL),
    KEEL_TEST_CODE(ACL_ERROR_RT_STREAM_TASK_EMPTY),
    KEEL_TEST_CODE(ACL_ERROR_RT_STREAM_NOT_COMPLETE),
    KEEL_TEST_CODE(ACL_ERROR_RT_END_OF_SEQUENCE),
    KEEL_TEST_CODE(ACL_ERROR_RT_EVENT_NOT_COMPLETE),
    KEEL_TEST_CODE(ACL_ERROR_RT_CONTEXT_RELEASE_ERROR),
    KEEL_TEST_CODE(ACL_ERROR_RT_SOC_VERSION),
    KEEL_TEST_CODE(ACL_ERROR_RT_TASK_TYPE_NOT_SUPPORT),
    KEEL_TEST_CODE(ACL_ERROR_RT_LOST_HEARTBEAT),
    KEEL_TEST_CODE(ACL_ERROR_RT_MODEL_EXECUTE),
    KEEL_TEST_CODE(ACL_ERROR_RT_REPORT_TIMEOUT),
    KEEL_TEST_CODE(ACL_ERROR_RT_SYS_DMA),
    KEEL_TEST_CODE(ACL_ERROR_RT_AICORE_TIMEOUT),
    KEEL_TEST_CODE(ACL_ERROR_RT_AICORE_EXCEPTION),
    KEEL_TEST_CODE(ACL_ERROR_RT_AICORE_TRAP_EXCEPTION),
    KEEL_TEST_CODE(ACL_ERROR_RT_AICPU_TIMEOUT),
    KEEL_TEST_CODE(ACL_ERROR_RT_AICPU_EXCEPTION),
    KEEL_TEST_CODE(ACL_ERROR_RT_AICPU_DATADUMP_RSP_ERR),
    KEEL_TEST_CODE(ACL_ERROR_RT_AICPU_MODEL_RSP_ERR),
    KEEL_TEST_CODE(ACL_ERROR_RT_PROFILING_ERROR),
    KEEL_TEST_CODE(ACL_ERROR_RT_IPC_ERROR),
    KEEL_TEST_CODE(ACL_ERROR_RT_MODEL_ABORT_NORMAL),
    KEEL_TEST_CODE(ACL_ERROR_RT_KERNEL_UNREGISTERING),
    KEEL_TEST_CODE(ACL_ERROR_RT_RINGBUFFER_NOT_INIT),
    KEEL_TEST_CODE(ACL_ERROR_RT_RINGBUFFER_NO_DATA),
    KEEL_TEST_CODE(ACL_ERROR_RT_KERNEL_LOOKUP),
    KEEL_TEST_CODE(ACL_ERROR_RT_KERNEL_DUPLICATE),
    KEEL_TEST_CODE(ACL_ERROR_RT_DEBUG_REGISTER_FAIL),
    KEEL_TEST_CODE(ACL_ERROR_RT_DEBUG_UNREGISTER_FAIL),
    KEEL_TEST_CODE(ACL_ERROR_RT_LABEL_CONTEXT),
    KEEL_TEST_CODE(ACL_ERROR_RT_PROGRAM_USE_OUT),
    KEEL_TEST_CODE(ACL_ERROR_RT_DEV_SETUP_ERROR),
    KEEL_TEST_CODE(ACL_ERROR_RT_VECTOR_CORE_TIMEOUT),
    KEEL_TEST_CODE(ACL_ERROR_RT_VECTOR_CORE_EXCEPTION),
    KEEL_TEST_CODE(ACL_ERROR_RT_VECTOR_CORE_TRAP_EXCEPTION),
    KEEL_TEST_CODE(ACL_ERROR_RT_CDQ_BATCH_ABNORMAL),
    KEEL_TEST_CODE(ACL_ERROR_RT_DIE_MODE_CHANGE_ERROR),
    KEEL_TEST_CODE(ACL_ERROR_RT_DIE_SET_ERROR),
    KEEL_TEST_CODE(ACL_ERROR_RT_INVALID_DIEID),
    KEEL_TEST_CODE(ACL_ERROR_RT_DIE_MODE_NOT_SET),
    KEEL_TEST_CODE(ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW),
    KEEL_TEST_CODE(ACL_ERROR_RT_AICORE_TRAP_WRITE_OVERFLOW),
    KEEL_TEST_CODE(ACL_ERROR_RT_VECTOR_CORE_TRAP_READ_OVERFLOW),
    KEEL_TEST_CODE(ACL_ERROR_RT_VECTOR_CORE_TRAP_WRITE_OVERFLOW),
    KEEL_TEST_CODE(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT),
    KEEL_TEST_CODE(ACL_ERROR_RT_EVENT_SYNC_TIMEOUT),
    KEEL_TEST_CODE(ACL_ERROR_RT_FFTS_PLUS_TIMEOUT),
    KEEL_TEST_CODE(ACL_ERROR_RT_FFTS_PLUS_EXCEPTION),
    KEEL_TEST_CODE(ACL_ERROR_RT_FFTS_PLUS_TRAP_EXCEPTION),
    KEEL_TEST_CODE(ACL_ERROR_RT_SEND_MSG),
    KEEL_TEST_CODE(ACL_ERROR_RT_COPY_DATA),
    KEEL_TEST_CODE(ACL_ERROR_RT_DEVICE_MEM_ERROR),
    KEEL_TEST_CODE(ACL_ERROR_RT_HBM_MULTI_BIT_ECC_ERROR),
    KEEL_TEST_CODE(ACL_ERROR_RT_SUSPECT_DEVICE_MEM_ERROR),
    KEEL_TEST_CODE(ACL_ERROR_RT_LINK_ERROR),
    KEEL_TEST_CODE(ACL_ERROR_RT_SUSPECT_REMOTE_ERROR),
    KEEL_TEST_CODE(ACL_ERROR_RT_DRV_INTERNAL_ERROR),
    KEEL_TEST_CODE(ACL_ERROR_RT_AICPU_INTERNAL_ERROR),
    KEEL_TEST_CODE(ACL_ERROR_RT_SOCKET_CLOSE),
    KEEL_TEST_CODE(ACL_ERROR_RT_AICPU_INFO_LOAD_RSP_ERR),
    KEEL_TEST_CODE(ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED),
    KEEL_TEST_CODE(ACL_ERROR_RT_COMM_OP_RETRY_FAIL),
    KEEL_TEST_CODE(ACL_ERROR_SNAPSHOT_LOCK_TIMEOUT),
    KEEL_TEST_CODE(ACL_ERROR_SNAPSHOT_LOCK_FAILED),
    KEEL_TEST_CODE(ACL_ERROR_SNAPSHOT_UNLOCK_FAILED),
    KEEL_TEST_CODE(ACL_ERROR_SNAPSHOT_BACKUP_FAILED),
    KEEL_TEST_CODE(ACL_ERROR_SNAPSHOT_RESTORE_FAILED),
    KEEL_TEST_CODE(ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED),
    KEEL_TEST_CODE(ACL_ERROR_HOST_MEMORY_NOT_REGISTERED),
    KEEL_TEST_CODE(ACL_ERROR_SNAPSHOT_CALLBACK_FAILED),
    KEEL_TEST_CODE(ACL_ERROR_SNAPSHOT_REGISTER_CALLBACK_FAILED),
    KEEL_TEST_CODE(ACL_ERROR_RT_L3_PORT_ERROR),
    KEEL_TEST_CODE(ACL_ERROR_RT_SYMBOL_NOT_FOUND),
    KEEL_TEST_CODE(ACLNN_ERR_PARAM_NULLPTR),
    KEEL_TEST_CODE(ACLNN_ERR_PARAM_INVALID),
    KEEL_TEST_CODE(ACLNN_ERR_RUNTIME_ERROR),
    KEEL_TEST_CODE(ACLNN_ERR_INNER),
    KEEL_TEST_CODE(ACLNN_ERR_INNER_INFERSHAPE_ERROR),
    KEEL_TEST_CODE(ACLNN_ERR_INNER_TILING_ERROR),
    KEEL_TEST_CODE(ACLNN_ERR_INNER_FIND_KERNEL_ERROR),
    KEEL_TEST_CODE(ACLNN_ERR_INNER_CREATE_EXECUTOR),
    KEEL_TEST_CODE(ACLNN_ERR_INNER_NOT_TRANS_EXECUTOR),
    KEEL_TEST_CODE(ACLNN_ERR_INNER_NULLPTR),
    KEEL_TEST_CODE(ACLNN_ERR_INNER_WRONG_ATTR_INFO_SIZE),
    KEEL_TEST_CODE(ACLNN_ERR_INNER_KEY_CONFLICT),
    KEEL_TEST_CODE(ACLNN_ERR_INNER_INVALID_IMPL_MODE),
};
#undef KEEL_TEST_CODE

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("status: every documented code has its CANN symbol and a message", "[acl][status]") {
  for (const auto& code : documented) {
    INFO(code.symbol << " = " << code.value);
    const char* name = keel::acl::status_name(code.value);
    REQUIRE(name != nullptr);
    CHECK(std::string(name) == code.symbol);
    const std::string message = keel::acl::make_status_code(code.value).message();
    CHECK(contains(message, code.symbol));
    CHECK_FALSE(contains(message, "unknown"));
  }
  CHECK(std::string(keel::acl::status_name(ACLNN_ERR_INNER_KEY_CONFILICT)) == "ACLNN_ERR_INNER_KEY_CONFLICT");
}

TEST_CASE("status: keel knows no code beyond the documented ones", "[acl][status]") {
  std::size_t known = 0;
  for (int value = -2; value < 600000; ++value) {
    if (keel::acl::status_name(value) != nullptr) ++known;
  }
  CHECK(known == documented.size());
  CHECK(keel::acl::status_name(123) == nullptr);
  CHECK(keel::acl::make_status_code(123).message() == "unknown ACL status 123");
  CHECK(keel::acl::make_status_code(-1).message() == "unknown ACL status -1");
}

TEST_CASE("status: the enum names the same codes, in acl_category()", "[acl][status]") {
  const std::error_code running = keel::acl::errc::rt_model_running;
  CHECK(running.category() == keel::acl::acl_category());
  CHECK(running.value() == ACL_ERROR_RT_MODEL_RUNNING);
  CHECK(running == keel::acl::make_status_code(107037));
  CHECK(static_cast<int>(keel::acl::errc::invalid_param) == ACL_ERROR_INVALID_PARAM);
  CHECK(static_cast<int>(keel::acl::errc::nn_param_nullptr) == ACLNN_ERR_PARAM_NULLPTR);
  CHECK(static_cast<int>(keel::acl::errc::stream_task_group_status) == ACL_ERROR_STREAM_TASK_GROUP_STATUS);
  CHECK(std::string(keel::acl::acl_category().name()) == "acl");
  CHECK(keel::acl::make_status_code(ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT).message() ==
        "the current capture mode does not allow this operation (ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT)");
}

TEST_CASE("status: codes are equivalent to keel's conditions where the meaning is the same", "[acl][status]") {
  using keel::acl::condition;
  using keel::acl::make_status_code;
  const auto is = [](int code, keel::errc expected) { return make_status_code(code) == condition(expected); };

  SECTION("parameters") {
    CHECK(is(ACL_ERROR_INVALID_PARAM, keel::errc::invalid_parameter));
    CHECK(is(ACL_ERROR_RT_PARAM_INVALID, keel::errc::invalid_parameter));
    CHECK(is(ACLNN_ERR_PARAM_INVALID, keel::errc::invalid_parameter));
    CHECK(is(ACLNN_ERR_PARAM_NULLPTR, keel::errc::null_parameter));
    CHECK_FALSE(is(ACLNN_ERR_PARAM_NULLPTR, keel::errc::invalid_parameter));
    CHECK_FALSE(is(ACLNN_ERR_INNER_NULLPTR, keel::errc::null_parameter));  // the operator's own bug
  }
  SECTION("support, capture and update rules, limits") {
    CHECK(is(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, keel::errc::not_supported));
    CHECK(is(ACL_ERROR_FEATURE_UNSUPPORTED, keel::errc::not_supported));
    CHECK(is(ACL_ERROR_API_NOT_SUPPORT, keel::errc::not_supported));
    CHECK(is(ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT, keel::errc::capture_violation));
    CHECK(is(ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED, keel::errc::capture_violation));
    CHECK(is(ACL_ERROR_STREAM_TASK_GROUP_STATUS, keel::errc::update_violation));
    CHECK(is(ACL_ERROR_RT_TASK_TYPE_NOT_SUPPORT, keel::errc::update_violation));
    CHECK(is(ACL_ERROR_RT_NO_MODEL_RESOURCE, keel::errc::resource_limit));
    CHECK(is(ACL_ERROR_RT_NO_EVENT_RESOURCE, keel::errc::resource_limit));
    CHECK(is(ACL_ERROR_RT_MODEL_RUNNING, keel::errc::invalid_state));
    CHECK(is(ACL_ERROR_RT_INVALID_HANDLE, keel::errc::invalid_handle));
    CHECK(is(ACL_ERROR_RT_SYMBOL_NOT_FOUND, keel::errc::symbol_not_found));
  }
  SECTION("memory, time, device failures") {
    CHECK(is(ACL_ERROR_RT_MEMORY_ALLOCATION, keel::errc::out_of_memory));
    CHECK(is(ACL_ERROR_BAD_ALLOC, keel::errc::out_of_memory));
    CHECK(is(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, keel::errc::timeout));
    CHECK(is(ACL_ERROR_RT_AICORE_EXCEPTION, keel::errc::task_failed));
    CHECK(is(ACL_SUCCESS, keel::errc::success));
  }
  SECTION("codes without a keel meaning stay in acl_category()") {
    for (const int code : {ACL_ERROR_RT_INTERNAL_ERROR, ACLNN_ERR_INNER, ACL_ERROR_PARSE_MODEL, 123}) {
      const std::error_condition own = make_status_code(code).default_error_condition();
      CHECK(own.category() == keel::acl::acl_category());
      CHECK(own.value() == code);
      CHECK_FALSE(make_status_code(code) == condition(keel::errc::invalid_parameter));
    }
  }
  SECTION("through keel's conditions, the portable std::errc ones hold too") {
    CHECK(make_status_code(ACL_ERROR_INVALID_PARAM) == std::errc::invalid_argument);
    CHECK(make_status_code(ACLNN_ERR_PARAM_NULLPTR) == std::errc::invalid_argument);
    CHECK(make_status_code(ACL_ERROR_RT_FEATURE_NOT_SUPPORT) == std::errc::function_not_supported);
    CHECK(make_status_code(ACL_ERROR_RT_DEVICE_OOM) == std::errc::not_enough_memory);
    CHECK(make_status_code(ACL_ERROR_RT_EVENT_SYNC_TIMEOUT) == std::errc::timed_out);
    CHECK_FALSE(make_status_code(ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT) == std::errc::invalid_argument);
    CHECK_FALSE(make_status_code(ACL_ERROR_RT_INTERNAL_ERROR) == std::errc::invalid_argument);
  }
}

TEST_CASE("status: check() does nothing on success and never asks for a message", "[acl][status]") {
  int asked = 0;
  const auto provider = [&asked]() -> const char* {
    ++asked;
    return "must not be read";
  };
  CHECK_NOTHROW(keel::acl::check(ACL_SUCCESS, "aclrtCreateStream", provider));
  CHECK_NOTHROW(keel::acl::check(ACL_SUCCESS, "aclrtCreateStream"));
  CHECK(asked == 0);
}

TEST_CASE("status: check() throws keel::error with the code, the function and the runtime's message",
          "[acl][status]") {
  int asked = 0;
  const auto provider = [&asked]() -> const char* {
    ++asked;
    return "EZ9999: capture mode global forbids aclrtMemcpy";
  };
  try {
    keel::acl::check(ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT, "aclrtMemcpy", provider);
    FAIL("check() did not throw");
  } catch (const keel::error& e) {
    CHECK(asked == 1);
    CHECK(e.code() == keel::acl::make_status_code(ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT));
    CHECK(e.code() == keel::acl::condition(keel::errc::capture_violation));
    CHECK(std::string(e.api()) == "aclrtMemcpy");
    CHECK(contains(e.rule(), "107030"));
    CHECK(contains(e.rule(), "EZ9999: capture mode global forbids aclrtMemcpy"));
    CHECK(contains(e.what(), "aclrtMemcpy"));
    CHECK(contains(e.what(), "ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT"));
  }
}

TEST_CASE("status: check() reports the status even when no message is available", "[acl][status]") {
  const auto expect_plain = [](auto&& provider) {
    try {
      keel::acl::check(ACLNN_ERR_PARAM_NULLPTR, "aclnnAddGetWorkspaceSize", provider);
      FAIL("check() did not throw");
    } catch (const keel::error& e) {
      CHECK(e.code() == keel::acl::make_status_code(ACLNN_ERR_PARAM_NULLPTR));
      CHECK(std::string(e.api()) == "aclnnAddGetWorkspaceSize");
      CHECK(std::string(e.rule()) == "status 161001");
    }
  };
  SECTION("no provider") {
    try {
      keel::acl::check(ACLNN_ERR_PARAM_NULLPTR, "aclnnAddGetWorkspaceSize");
      FAIL("check() did not throw");
    } catch (const keel::error& e) {
      CHECK(std::string(e.rule()) == "status 161001");
    }
  }
  SECTION("nullptr") { expect_plain(nullptr); }
  SECTION("a null function pointer") {
    const char* (*missing)() = nullptr;
    expect_plain(missing);
  }
  SECTION("a provider that returns null or an empty text") {
    expect_plain([]() -> const char* { return nullptr; });
    expect_plain([]() -> const char* { return ""; });
  }
  SECTION("a provider that throws (an old runtime without aclGetRecentErrMsg)") {
    expect_plain([]() -> const char* { throw std::runtime_error("aclGetRecentErrMsg: not supported"); });
  }
}
