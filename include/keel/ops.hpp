// SPDX-License-Identifier: Apache-2.0
// keel::ops umbrella: dtypes, scalars, tensor views, executors and the
// reference operators. The SIMD kernels are not included here (they compile
// once per target): take a kernel table from keel/ops/kernels/dynamic_dispatch.hpp
// (one dispatch unit per program) or keel/ops/kernels/static_dispatch.hpp.
#pragma once

#include "keel/ops/dtype.hpp"
#include "keel/ops/executor.hpp"
#include "keel/ops/kernels/dynamic_dispatch.hpp"
#include "keel/ops/kernels/kernel_table.hpp"
#include "keel/ops/operators.hpp"
#include "keel/ops/scalar.hpp"
#include "keel/ops/tensor.hpp"
