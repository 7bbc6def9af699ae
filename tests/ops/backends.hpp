// SPDX-License-Identifier: Apache-2.0
// The operators-on-a-stream suite is written once over a backend fixture F
// and runs on every backend in KEEL_OPS_TEST_BACKENDS: `host` (keel's
// reference operators through the kernel table, on a host stream) and, when
// the build has the ACL emulation, `acl` (the aclnn two-phase calls, over
// libascendcl.so loaded at run time from KEEL_ACL_EMULATION_DIR), both
// through keel::ops::prepare_*(F::target(), ...), run_on, exec and
// executor_cache_for. Test names end in " - host" or " - acl".
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <system_error>

#include "keel/host/host.hpp"
#include "keel/ops/kernels/dynamic_dispatch.hpp"
#include "keel/ops/executor_cache.hpp"
#include "keel/ops/launch.hpp"
#include "keel/ops/operators.hpp"

#include "../support/conditions.hpp"

#ifdef KEEL_ACL_EMULATION_DIR
#include "keel/acl/backend.hpp"
#include "keel/acl/ops.hpp"
#endif

// What differs per backend is only the backend and the phase-one target
// (keel::ops::prepare_*, run_on, exec and the executor caches are the
// library's, generic over the operator layer).
struct host {
  using backend = keel::host::backend;
  KEEL_RUNTIME_HANDLE_ALIASES(backend)
  static constexpr bool is_host = true;

  static keel::host::device& device() {
    static keel::host::device dev{keel::host::device_options{2}};
    return dev;
  }
  static const keel::ops::kernel_table& target() { return keel::ops::dynamic_kernels(); }
};

#ifdef KEEL_ACL_EMULATION_DIR
struct acl {
  using backend = keel::acl::backend;
  KEEL_RUNTIME_HANDLE_ALIASES(backend)
  static constexpr bool is_host = false;

  static keel::acl::device& device() {
    static keel::acl::device dev{keel::acl::device_options{0, KEEL_ACL_EMULATION_DIR}};
    return dev;
  }
  static keel::acl::device& target() { return device(); }
};
#define KEEL_OPS_TEST_BACKENDS host, acl
#else
#define KEEL_OPS_TEST_BACKENDS host
#endif

#define KEEL_OPS_BACKEND_TEST(name, tags) TEMPLATE_TEST_CASE(name, tags, KEEL_OPS_TEST_BACKENDS)
