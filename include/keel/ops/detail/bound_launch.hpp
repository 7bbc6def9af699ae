// SPDX-License-Identifier: Apache-2.0
// The host operators' launch of a cached element-wise plan with one call's
// pointers and scalar carried in the task (exec() on a hit: nothing copied,
// nothing allocated).
#pragma once

#include <cstddef>
#include <utility>

#include "keel/ops/detail/elementwise_plan.hpp"
#include "keel/ops/detail/shared_plan.hpp"
#include "keel/ops/launch.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops::detail {


// The task body of an element-wise launch bound to a shared plan: this
// call's N operand pointers (out first) and scalar travel in the task, the
// plan is shared, so an executor cache hit copies nothing and allocates
// nothing: with N <= 4 the task (at most 48 bytes) fits a host stream's ring
// slot, and with N <= 3 a captured one fits a model's task in place too.
template <std::size_t N>
struct bound_elementwise_task {
  static_assert(N <= elementwise_plan::max_operands);
  shared_plan_ref plan;
  char* ptr[N];
  scalar_word scalar;

  template <class Context>
  void operator()(Context& ctx) const {
    const auto& p = static_cast<const elementwise_plan&>(plan->get());
    elementwise_plan::binding b;
    for (std::size_t i = 0; i < N; ++i) b.ptr[i] = ptr[i];
    b.scalar = scalar;
    run_stages(ctx, p, nullptr, plan->workers(),
               [&](std::size_t, std::size_t c, char*, char*) { p.run_chunk_bound(c, b); });
  }
};

// Whether this call might fail the checks a hit repeats (Op::check): a null
// pointer, or out overlapping an input other than exactly (in place).
// Decided on what element-wise plan p kept from its key, without walking
// the views' shapes; when true, Op::check decides and names the operand.
template <std::size_t N>
bool needs_full_check(const shared_plan_ref& p, const tensor& out, const tensor* const (&ins)[N]) noexcept {
  const auto& e = static_cast<const elementwise_plan&>(p->get());
  bool bad = out.data() == nullptr;  // null views are in the key, but a hit never trusts that alone
  for (std::size_t i = 0; i < N; ++i) bad = bad || ins[i]->data() == nullptr || e.overlaps_out(i + 1, out, *ins[i]);
  return bad;
}

// Enqueues an element-wise plan bound to this call (pointers out first).
// The task is built in one expression: built member by member and then
// moved, the move read back stores still in flight (a store-forwarding
// stall that showed in the profile).
template <std::size_t N, class Stream, std::size_t... I>
void launch_bound(const Stream& stream, shared_plan_ref p, const tensor* const (&operands)[N], const scalar* s,
                  std::index_sequence<I...>) {
  const auto& e = static_cast<const elementwise_plan&>(p->get());
  const kernel_kind kind = kind_of(e.op);
  const scalar_word w = e.scalar_for(s != nullptr ? *s : scalar());
  stream.launch(kind, bound_elementwise_task<N>{std::move(p), {operands[I]->first()...}, w});
}
template <std::size_t N, class Stream>
void launch_bound(const Stream& stream, shared_plan_ref p, const tensor* const (&operands)[N], const scalar* s) {
  launch_bound(stream, std::move(p), operands, s, std::make_index_sequence<N>{});
}


} KEEL_END_NAMESPACE  // namespace keel::ops::detail
