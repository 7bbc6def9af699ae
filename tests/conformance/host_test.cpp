// SPDX-License-Identifier: Apache-2.0
// The conformance suite on the host backend, with keel's reference operators.
// This file is the test program's one kernel unit (static target only).
#include "keel/host/host.hpp"
#include "keel/ops/kernels/static_dispatch.hpp"
#include "keel/ops/launch.hpp"
#include "keel/ops/operators.hpp"

#include <system_error>

namespace keel_conformance {
inline bool is(const std::error_code& code, keel::errc c);
}

namespace {

struct host_fixture {
  using backend = keel::host::backend;
  using executor = keel::ops::executor;

  static keel::host::device& device() {
    static keel::host::device dev{keel::host::device_options{2, 64, 8}};
    return dev;
  }
  static const keel::ops::kernel_table& k() { return keel::ops::static_kernels(); }

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
  static bool is_launch_error(const std::error_code& code, keel::errc rule) { return keel_conformance::is(code, rule); }
  static std::size_t workspace_size(const executor& ex) { return ex.workspace_size(); }
  static void run(keel::host::stream_ref s, executor& ex, const keel::memory_span& workspace) {
    keel::ops::run_on(s, ex, workspace);
  }
};

}  // namespace

#define KEEL_CONFORMANCE_FIXTURE host_fixture
#define KEEL_CONFORMANCE_TAG "[host]"
#include "conformance.hpp"
