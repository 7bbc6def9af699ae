// SPDX-License-Identifier: Apache-2.0
// The test program's one dispatch unit: every kernel, every Highway target.
#define KEEL_OPS_DISPATCH_IMPLEMENTATION
#include "keel/ops/kernels/dynamic_dispatch.hpp"
