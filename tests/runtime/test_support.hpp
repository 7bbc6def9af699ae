// SPDX-License-Identifier: Apache-2.0
// The fixtures keel's own backends run the conformance kit with
// (keel/testing/backend_conformance.hpp, registered in
// conformance_host_test.cpp and conformance_acl_test.cpp):
// `host` (keel's host backend) and, when the build has the ACL emulation,
// `acl` (keel's ACL backend over libascendcl.so from KEEL_ACL_EMULATION_DIR,
// loaded at run time). A fixture names the backend's handle types
// (KEEL_RUNTIME_HANDLE_ALIASES), a shared test device, and how the backend
// issues the suites' two kernels: axpy (out = tmp + alpha * other, one float)
// and copy (dst = src, one float). Test names end in " - host" or " - acl".
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <system_error>
#include <thread>

#include "keel/runtime.hpp"
#include "keel/testing/backend_conformance.hpp"

#include "../support/conditions.hpp"

#ifdef KEEL_ACL_EMULATION_DIR
#include "keel/acl/backend.hpp"
#include "keel/acl/ops.hpp"
#endif

namespace keel_test {

// The kit's checks under the names the host- and ACL-only tests use.
using keel::testing::contains;
using keel::testing::error_of;
using keel::testing::gate;
using keel::testing::matches;

constexpr keel::kernel_kind axpy_kind{"axpy"};
constexpr keel::kernel_kind copy_kind{"copy"};
constexpr keel::kernel_kind store_kind{"store"};

inline void axpy_kernel(keel::host::launch_context&, float* out, const float* tmp, const float* other, float alpha) {
  *out = *tmp + alpha * *other;
}
inline void copy_kernel(keel::host::launch_context&, float* dst, const float* src) { *dst = *src; }
inline void store_kernel(keel::host::launch_context&, std::atomic<int>* slot, int value) {
  slot->store(value, std::memory_order_relaxed);
}

inline keel::host::device& test_device() {
  static keel::host::device dev{keel::host::device_options{2, 16, 8}};
  return dev;
}

}  // namespace keel_test

// ---- the backends ------------------------------------------------------------

struct host : keel::testing::fixture_defaults {
  using backend = keel::host::backend;
  KEEL_RUNTIME_HANDLE_ALIASES(backend)
  static constexpr bool is_host = true;
  // Replays of one model may overlap on different streams: the suites'
  // store kernel writes an atomic.
  static constexpr bool replays_may_overlap = true;
  static constexpr int stress_ms = 1000;
  // Updating a task group whose model was destroyed: the host backend keeps
  // the group's record and says the group's state forbids it.
  static constexpr keel::errc dead_group_update = keel::errc::invalid_state;

  static keel::host::device& device() { return keel_test::test_device(); }
  static void synchronize_device() { keel::host::synchronize(device()); }
  static keel::capture_info thread_capture_status() { return keel::host::thread_capture_status(device()); }

  static void axpy(stream_ref s, float* out, const float* tmp, const float* other, float alpha) {
    s.launch(keel_test::axpy_kind, &keel_test::axpy_kernel, out, tmp, other, alpha);
  }
  static void copy(stream_ref s, float* dst, const float* src) {
    s.launch(keel_test::copy_kind, &keel_test::copy_kernel, dst, src);
  }
  using slot = std::atomic<int>;
  static void store(stream_ref s, slot* where, int value) {
    s.launch(keel_test::store_kind, &keel_test::store_kernel, where, value);
  }
  static int load(const slot& where) { return where.load(); }
};

#ifdef KEEL_ACL_EMULATION_DIR
struct acl : keel::testing::fixture_defaults {
  using backend = keel::acl::backend;
  KEEL_RUNTIME_HANDLE_ALIASES(backend)
  static constexpr bool is_host = false;
  // The kernels are aclnn operators writing plain floats: overlapping replays
  // of one model would race on its output (ThreadSanitizer says so).
  static constexpr bool replays_may_overlap = false;
  static constexpr int stress_ms = 300;
  // The kinds keel::acl::run_on launches aclnnAdd and aclnnCast with.
  static constexpr const char* axpy_kind_name = "aclnnAdd";
  static constexpr const char* copy_kind_name = "aclnnCast";

  static keel::acl::device& device() {
    static keel::acl::device dev{keel::acl::device_options{0, KEEL_ACL_EMULATION_DIR}};
    return dev;
  }
  static void synchronize_device() { backend::synchronize_device(device()); }
  static keel::capture_info thread_capture_status() { return backend::thread_capture_status(device()); }

  static keel::ops::tensor one(const float* p) {
    return keel::ops::tensor(const_cast<float*>(p), keel::ops::dtype::float32, {1});
  }
  // aclnnAdd: out = tmp + alpha * other.
  static void axpy(stream_ref s, float* out, const float* tmp, const float* other, float alpha) {
    keel::acl::run_on(s, keel::acl::prepare_add(device(), one(tmp), one(other), keel::ops::scalar(alpha), one(out)));
  }
  // aclnnCast float32 -> float32: another kind of kernel than axpy.
  static void copy(stream_ref s, float* dst, const float* src) {
    keel::acl::run_on(s, keel::acl::prepare_cast(device(), one(src), one(dst)));
  }
  using slot = float;
  static void store(stream_ref s, slot* where, int value) {
    static const float zero = 0.0f, unit = 1.0f;
    axpy(s, where, &zero, &unit, static_cast<float>(value));
  }
  static int load(const slot& where) { return static_cast<int>(where); }
  // is_launch_error keeps its default: aclnnXxx reports a runtime rule its
  // launch broke as ACLNN_ERR_RUNTIME_ERROR (361001); keel::acl::run_on reports
  // the runtime's own status under it (aclrtGetLastError), so the rule's
  // condition holds here as on the host.
};
#endif

// The fixture's handle types as plain names inside a test.
#define KEEL_USING_BACKEND(F) KEEL_TESTING_USING_ALL(F)

#define KEEL_REQUIRE_ERROR KEEL_TESTING_REQUIRE_ERROR

// A test written once for keel's own backends outside the kit (the misuse
// cases and others that are keel's guarantees more than a
// backend's): TestType is the fixture, names end in " - host" / " - acl".
#ifdef KEEL_ACL_EMULATION_DIR
#define KEEL_TEST_BACKENDS host, acl
#else
#define KEEL_TEST_BACKENDS host
#endif
#define KEEL_BACKEND_TEST(name, tags) TEMPLATE_TEST_CASE(name, tags, KEEL_TEST_BACKENDS)
