// SPDX-License-Identifier: Apache-2.0
// Test support: the kernel tables of every Highway target this build
// generated and the running CPU supports; kernel tests check each case on all of them.
#pragma once

#include <cstdint>
#include <vector>

#include "keel/ops/kernels/dynamic_dispatch.hpp"

#include <hwy/targets.h>  // after keel's headers, which configure Highway first

namespace keel_test {

inline std::vector<const keel::ops::kernel_table*> every_kernel_target() {
  std::vector<const keel::ops::kernel_table*> out;
  for (std::int64_t t : hwy::SupportedAndGeneratedTargets()) {
    if (const keel::ops::kernel_table* k = keel::ops::kernels_for_target(t)) out.push_back(k);
  }
  return out;
}

}  // namespace keel_test
