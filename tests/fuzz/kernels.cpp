// SPDX-License-Identifier: Apache-2.0
// The fuzz targets' one kernel unit: the kernels of the baseline target
// only (static dispatch), compiled once and linked into each target that
// needs them (Highway kernels are expensive to compile). It includes nothing
// of the targets, so editing them never recompiles the kernels.
#include "keel/ops/kernels/static_dispatch.hpp"

namespace keel_fuzz {
const keel::ops::kernel_table& kernels();  // declared in ops_cases.hpp
const keel::ops::kernel_table& kernels() { return keel::ops::static_kernels(); }
}  // namespace keel_fuzz
