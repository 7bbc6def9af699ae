// SPDX-License-Identifier: Apache-2.0
// Floating-point overflow detection (overflow.cpp), for the operators that
// compute on a stream (aclnn_operators.cpp).
#pragma once

#include "detail/state.hpp"
#include "keel/ops/tensor.hpp"

namespace keel::acl_emulation::detail {

// After an operator issued to `s` (the stream `stream` names): if the
// stream's overflow-detection switch is on, a task behind it on `s` looks
// at the floating-point result `out` and marks the overflow status when an
// element is infinite or NaN.
void check_overflow_after(aclrtStream stream, hb::stream_handle s, const keel::ops::tensor& out);

// The stream is destroyed: its switch goes with it.
void forget_overflow_switch(aclrtStream stream) noexcept;

}  // namespace keel::acl_emulation::detail
