// SPDX-License-Identifier: Apache-2.0
// The operators-on-a-stream suite is written once over a backend fixture F
// and runs on every backend in KEEL_OPS_TEST_BACKENDS: `host` (keel's
// reference operators through the kernel table, keel::ops::run_on on a host
// stream) and, when the build has the ACL emulation, `acl` (the aclnn
// two-phase calls through keel::acl, over libascendcl.so loaded at run time
// from KEEL_ACL_EMULATION_DIR). Test names end in " - host" or " - acl".
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <system_error>

#include "keel/host/host.hpp"
#include "keel/ops/kernels/dynamic_dispatch.hpp"
#include "keel/ops/launch.hpp"
#include "keel/ops/operators.hpp"

#include "../support/conditions.hpp"

#ifdef KEEL_ACL_EMULATION_DIR
#include "keel/acl/backend.hpp"
#include "keel/acl/ops.hpp"
#endif

struct host {
  using backend = keel::host::backend;
  KEEL_RUNTIME_HANDLE_ALIASES(backend)
  using executor = keel::ops::executor;
  static constexpr bool is_host = true;

  static keel::host::device& device() {
    static keel::host::device dev{keel::host::device_options{2}};
    return dev;
  }
  static const keel::ops::kernel_table& k() { return keel::ops::dynamic_kernels(); }

  static executor prepare_add(const keel::ops::tensor& self, const keel::ops::tensor& other, keel::ops::scalar alpha,
                              const keel::ops::tensor& out) {
    return keel::ops::prepare_add(k(), self, other, alpha, out);
  }
  static executor prepare_addcmul(const keel::ops::tensor& self, const keel::ops::tensor& t1,
                                  const keel::ops::tensor& t2, keel::ops::scalar value, const keel::ops::tensor& out) {
    return keel::ops::prepare_addcmul(k(), self, t1, t2, value, out);
  }
  static executor prepare_cast(const keel::ops::tensor& self, const keel::ops::tensor& out) {
    return keel::ops::prepare_cast(k(), self, out);
  }
  static executor prepare_adaptive_avg_pool2d(const keel::ops::tensor& self, std::int64_t h, std::int64_t w,
                                              const keel::ops::tensor& out) {
    return keel::ops::prepare_adaptive_avg_pool2d(k(), self, h, w, out);
  }
  static executor prepare_baddbmm(const keel::ops::tensor& self, const keel::ops::tensor& b1,
                                  const keel::ops::tensor& b2, keel::ops::scalar beta, keel::ops::scalar alpha,
                                  const keel::ops::tensor& out) {
    return keel::ops::prepare_baddbmm(k(), self, b1, b2, beta, alpha, out);
  }
  static std::size_t workspace_size(const executor& ex) { return ex.workspace_size(); }
  static void run(stream_ref s, executor& ex, const keel::memory_span& workspace) { keel::ops::run_on(s, ex, workspace); }
};

#ifdef KEEL_ACL_EMULATION_DIR
struct acl {
  using backend = keel::acl::backend;
  KEEL_RUNTIME_HANDLE_ALIASES(backend)
  using executor = keel::acl::executor;
  static constexpr bool is_host = false;

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
  static std::uint64_t workspace_size(const executor& ex) { return ex.workspace_size(); }
  static void run(stream_ref s, const executor& ex, const keel::memory_span& workspace) {
    keel::acl::run_on(s, ex, workspace.data);
  }
};
#define KEEL_OPS_TEST_BACKENDS host, acl
#else
#define KEEL_OPS_TEST_BACKENDS host
#endif

#define KEEL_OPS_BACKEND_TEST(name, tags) TEMPLATE_TEST_CASE(name, tags, KEEL_OPS_TEST_BACKENDS)
