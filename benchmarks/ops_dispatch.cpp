// SPDX-License-Identifier: Apache-2.0
// keel_benchmarks' one dispatch unit: every ops kernel, every Highway target.
#define KEEL_OPS_DISPATCH_IMPLEMENTATION
#include "keel/ops/kernels/dynamic_dispatch.hpp"
