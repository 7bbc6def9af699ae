// SPDX-License-Identifier: Apache-2.0
// An operator with a workspace on every backend the runtime suites run:
// what the memory tests and the graph runner capture, update and drop, the
// way runners treat their attention operators.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "keel/ops.hpp"
#include "keel/ops/kernels/static_dispatch.hpp"
#include "test_support.hpp"

namespace keel_test {

// What each backend plans its operators against (the host: the kernels of
// the compiler's own target, compiled here: this program has no dispatch unit).
template <class F>
struct plan_target;
template <>
struct plan_target<host> {
  static const keel::ops::kernel_table& get() { return keel::ops::static_kernels(); }
};
#ifdef KEEL_ACL_EMULATION_DIR
template <>
struct plan_target<acl> {
  static keel::acl::device& get() { return acl::device(); }
};
#endif

// out = self + alpha * (b1 @ b2) in bfloat16, b1 ones and b2 halves over
// k = 8: every element 1 + 4 * alpha. Half-precision baddbmm takes a
// workspace (its float32 copies) on both backends.
struct bmm {
  static std::uint16_t bf(float f) { return keel::ops::float_to_bfloat16_bits(f); }
  std::vector<std::uint16_t> b1 = std::vector<std::uint16_t>(2 * 4 * 8, bf(1.0f));
  std::vector<std::uint16_t> b2 = std::vector<std::uint16_t>(2 * 8 * 4, bf(0.5f));
  std::vector<std::uint16_t> self = std::vector<std::uint16_t>(4, bf(1.0f));
  std::vector<std::uint16_t> out = std::vector<std::uint16_t>(2 * 4 * 4, 0);

  template <class F>
  auto prepare(float alpha) {
    using keel::ops::dtype;
    using keel::ops::tensor;
    return keel::ops::prepare_baddbmm(plan_target<F>::get(), tensor(self.data(), dtype::bfloat16, {4}),
                                      tensor(b1.data(), dtype::bfloat16, {2, 4, 8}),
                                      tensor(b2.data(), dtype::bfloat16, {2, 8, 4}), keel::ops::scalar(1.0f),
                                      keel::ops::scalar(alpha), tensor(out.data(), dtype::bfloat16, {2, 4, 4}));
  }
  bool all(float want) const {
    return std::all_of(out.begin(), out.end(),
                       [want](std::uint16_t v) { return keel::ops::bfloat16_bits_to_float(v) == want; });
  }
  void clear() { std::fill(out.begin(), out.end(), std::uint16_t{0}); }
};

}  // namespace keel_test
