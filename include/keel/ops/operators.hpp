// SPDX-License-Identifier: Apache-2.0
// The reference operators, PyTorch's semantics: phase one (prepare_*)
// validates and returns an executor; the one-call forms run it at once.
// One header per operator; the checks they share are in detail/checks.hpp.
#pragma once

#include "keel/ops/adaptive_avg_pool2d.hpp"
#include "keel/ops/add.hpp"
#include "keel/ops/addcmul.hpp"
#include "keel/ops/mul.hpp"
#include "keel/ops/baddbmm.hpp"
#include "keel/ops/cast.hpp"
#include "keel/ops/result_type.hpp"
