// SPDX-License-Identifier: Apache-2.0
// The fuzz targets' one kernel unit: the kernels of the baseline target
// only (static dispatch), compiled once and linked into each target that
// needs them (Highway kernels are expensive to compile).
#include "keel/ops/kernels/static_dispatch.hpp"
#include "ops_cases.hpp"

namespace keel_fuzz {
const ko::kernel_table& kernels() { return ko::static_kernels(); }
}  // namespace keel_fuzz
