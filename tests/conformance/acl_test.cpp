// SPDX-License-Identifier: Apache-2.0
// The conformance suite on the ACL backend, over keel's host emulation of ACL
// (libascendcl.so built by emulation/acl), loaded at run time through library
// leases from the directory the build gives.
#include "keel/acl/backend.hpp"
#include "keel/acl/ops.hpp"

#ifndef KEEL_ACL_EMULATION_DIR
#error "KEEL_ACL_EMULATION_DIR: the directory of the emulation's libascendcl.so"
#endif

namespace {

struct acl_fixture {
  using backend = keel::acl::backend;
  using executor = keel::acl::executor;

  static keel::acl::device& device() {
    static keel::acl::device dev{keel::acl::device_options{0, KEEL_ACL_EMULATION_DIR}};
    return dev;
  }

  static executor prepare_add(const keel::ops::tensor& self, const keel::ops::tensor& other, keel::ops::scalar alpha,
                              const keel::ops::tensor& out) {
    return keel::acl::prepare_add(device(), self, other, alpha, out);
  }
  static executor prepare_addcmul(const keel::ops::tensor& self, const keel::ops::tensor& t1,
                                  const keel::ops::tensor& t2, keel::ops::scalar value, const keel::ops::tensor& out) {
    return keel::acl::prepare_addcmul(device(), self, t1, t2, value, out);
  }
  static executor prepare_cast(const keel::ops::tensor& self, const keel::ops::tensor& out) {
    return keel::acl::prepare_cast(device(), self, out);
  }
  static executor prepare_adaptive_avg_pool2d(const keel::ops::tensor& self, std::int64_t h, std::int64_t w,
                                              const keel::ops::tensor& out) {
    return keel::acl::prepare_adaptive_avg_pool2d(device(), self, h, w, out);
  }
  static executor prepare_baddbmm(const keel::ops::tensor& self, const keel::ops::tensor& b1,
                                  const keel::ops::tensor& b2, keel::ops::scalar beta, keel::ops::scalar alpha,
                                  const keel::ops::tensor& out) {
    return keel::acl::prepare_baddbmm(device(), self, b1, b2, beta, alpha, out);
  }
  // aclnnXxx reports a runtime rule its launch broke as ACLNN_ERR_RUNTIME_ERROR
  // (361001, "the operator's call into the runtime failed"), not the rule's own status.
  static bool is_launch_error(const std::error_code& code, keel::errc) {
    return code == keel::acl::make_status_code(361001);
  }
  static std::uint64_t workspace_size(const executor& ex) { return ex.workspace_size(); }
  static void run(keel::acl::stream_ref s, const executor& ex, const keel::memory_span& workspace) {
    keel::acl::run_on(s, ex, workspace.data);
  }
};

}  // namespace

#define KEEL_CONFORMANCE_FIXTURE acl_fixture
#define KEEL_CONFORMANCE_TAG "[acl]"
#include "conformance.hpp"

// ---- what only the ACL backend has ------------------------------------------

TEST_CASE("acl backend: statuses carry ACL's code, the function and ACL's message", "[acl]") {
  auto& dev = acl_fixture::device();
  keel::acl::stream s{dev};
  try {
    keel::acl::task_group_scope mark{s};
    FAIL("a task group outside capture was accepted");
  } catch (const keel::error& e) {
    CHECK(e.code().category() == keel::acl::acl_category());
    CHECK(e.code().value() == 107029);  // ACL_ERROR_RT_STREAM_NOT_CAPTURED
    CHECK(std::string(e.api()) == "aclmdlRICaptureTaskGrpBegin");
    CHECK(std::string(e.rule()).find("runtime says: aclmdlRICaptureTaskGrpBegin") != std::string::npos);
  }
  keel::ops::tensor none(nullptr, keel::ops::dtype::float32, {8});
  try {
    (void)acl_fixture::prepare_add(none, none, keel::ops::scalar(1.0f), none);
    FAIL("a null tensor was accepted");
  } catch (const keel::error& e) {
    CHECK(e.code().value() == 161001);  // ACLNN_ERR_PARAM_NULLPTR
    CHECK(std::string(e.api()) == "aclnnAddGetWorkspaceSize");
  }
}

TEST_CASE("acl backend: the recent error message is per thread", "[acl]") {
  const keel::acl::api& api = acl_fixture::device().functions();
  CHECK(api.aclrtSetDevice(7) == 107001);  // ACL_ERROR_RT_INVALID_DEVICEID
  const std::string here = api.aclGetRecentErrMsg();
  CHECK(here.find("aclrtSetDevice") != std::string::npos);
  std::string there = "unset";
  std::thread([&] {
    const char* m = api.aclGetRecentErrMsg();
    there = m == nullptr ? "null" : m;
  }).join();
  CHECK(there == "null");
}

TEST_CASE("acl backend: libraries come from the given directory, one file for all three", "[acl]") {
  auto& dev = acl_fixture::device();
  const auto& ascendcl = dev.lease(keel::acl::library::ascendcl);
  REQUIRE(ascendcl);
  CHECK(ascendcl.path().find("libascendcl.so") != std::string::npos);
  CHECK(dev.lease(keel::acl::library::opapi) == ascendcl);  // the emulation's links resolve to one file
  CHECK(dev.functions().missing().empty() == false);       // aclmdlRICaptureThreadExchangeMode is not emulated
  CHECK(std::string(dev.functions().missing().front()) == "aclmdlRICaptureThreadExchangeMode");
  keel::acl::stream s{dev};
  KEEL_CONFORMANCE_REQUIRE_ERRC(s.launch_host([] {}), keel::errc::not_supported);
  keel::acl::model m;
  {
    keel::acl::capture_scope capture{s};
    m = capture.end();
  }
  KEEL_CONFORMANCE_REQUIRE_ERRC((void)m.task_count(), keel::errc::not_supported);
  try {
    dev.functions().aclmdlRICaptureThreadExchangeMode(nullptr);
    FAIL("a missing function was called");
  } catch (const keel::error& e) {
    CHECK(keel_conformance::is(e.code(), keel::errc::not_supported));
    CHECK(std::string(e.api()) == "aclmdlRICaptureThreadExchangeMode");
  }
  CHECK_THROWS_AS(keel::acl::device(keel::acl::device_options{0, "/nonexistent"}), keel::error);
}
