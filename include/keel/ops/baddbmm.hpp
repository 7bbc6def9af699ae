// SPDX-License-Identifier: Apache-2.0
// baddbmm: out = beta * self + alpha * (batch1 @ batch2) (torch.baddbmm):
// its plan, phase one and the one-call form.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "keel/core/error.hpp"
#include "keel/ops/detail/checks.hpp"
#include "keel/ops/detail/plan_key.hpp"
#include "keel/ops/detail/run_now.hpp"
#include "keel/ops/detail/shared_plan.hpp"
#include "keel/ops/operator_layer.hpp"
#include "keel/ops/detail/conversions.hpp"
#include "keel/ops/executor.hpp"
#include "keel/ops/kernels/kernel_table.hpp"
#include "keel/ops/scalar.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops {

namespace detail {

// Stages for float32: 0 = GEMM tiles. For the half types: 0 = widen the
// inputs into the shared workspace, 1 = GEMM into a float32 result there,
// 2 = round the result into out.
class baddbmm_plan final : public plan {
 public:
  baddbmm_plan(const kernel_table& k, const tensor& self, const tensor& b1, const tensor& b2, const tensor& out,
               float beta, float alpha, std::size_t workers)
      : k_(&k), self_(self), b1_(b1), b2_(b2), out_(out) {
    op = op_kind::baddbmm;
    half_ = out.type() != dtype::float32;
    args_.batch = b1.size(0);
    args_.m = b1.size(1);
    args_.k = b1.size(2);
    args_.n = b2.size(2);
    args_.alpha = alpha;
    args_.beta = beta;
    use_self_ = beta != 0.0f;
    tiles_ = out.numel() == 0 ? 0 : k.gemm_tile_count(args_);
    per_chunk_ = chunk_items(tiles_, workers, 1);
    scratch_bytes = k.gemm_workspace_floats() * sizeof(float);
    if (half_) {
      auto floats_of = [](const tensor& t) { return checked_size(static_cast<std::size_t>(t.numel())) * sizeof(float); };
      const checked_size b2_off = floats_of(b1).round_up(workspace_alignment);
      const checked_size self_off = b2_off + floats_of(b2).round_up(workspace_alignment);
      const checked_size out_off =
          self_off + (use_self_ ? floats_of(self).round_up(workspace_alignment) : checked_size(0));
      const checked_size shared = out_off + floats_of(out);
      check_size("keel::ops::baddbmm", shared, [&] {
        return "the shared workspace of a half-precision baddbmm (float32 copies of batch1 " + b1.shape_string() +
               ", batch2 " + b2.shape_string() + (use_self_ ? ", self " + self.shape_string() : std::string()) +
               " and the result " + out.shape_string() + ")";
      });
      b1_off_ = 0;
      b2_off_ = b2_off.value();
      self_off_ = self_off.value();
      out_off_ = out_off.value();
      shared_bytes = shared.value();
      out_rows_ = out.numel() == 0 ? 0 : static_cast<std::size_t>(out.numel() / out.size(2));
    }
  }

  std::size_t stage_count() const noexcept override { return half_ ? 3 : 1; }
  std::shared_ptr<plan> clone() const override { return std::make_shared<baddbmm_plan>(*this); }
  /** Binds another call; beta's zero-ness must match the plan's (it decides whether self is read). */
  void bind(const tensor& self, const tensor& b1, const tensor& b2, const tensor& out, float beta, float alpha) noexcept {
    self_ = self;
    b1_ = b1;
    b2_ = b2;
    out_ = out;
    args_.beta = beta;
    args_.alpha = alpha;
  }

  std::size_t chunk_count(std::size_t stage) const noexcept override {
    if (!half_ || stage == 1) return (tiles_ + per_chunk_ - 1) / per_chunk_;
    if (tiles_ == 0) return 0;
    return stage == 0 ? 3 : out_rows_;
  }

  void run_chunk(std::size_t stage, std::size_t chunk, char* shared, char* scratch) const override {
    if (!half_) return gemm(chunk, scratch, with_strides(self_, b1_, b2_, out_));
    if (stage == 0) {
      const tensor& t = chunk == 0 ? b1_ : chunk == 1 ? b2_ : self_;
      if (chunk == 2 && !use_self_) return;
      auto* dst = reinterpret_cast<float*>(shared + (chunk == 0 ? b1_off_ : chunk == 1 ? b2_off_ : self_off_));
      for_each_row(t, [&](const char* row, std::ptrdiff_t stride, std::size_t len) {
        convert_block(*k_, dst, dtype::float32, 1, row, t.type(), stride, len);
        dst += len;
      });
      return;
    }
    if (stage == 1) {
      const tensor b1(shared + b1_off_, dtype::float32, {b1_.size(0), b1_.size(1), b1_.size(2)});
      const tensor b2(shared + b2_off_, dtype::float32, {b2_.size(0), b2_.size(1), b2_.size(2)});
      const tensor self = use_self_ ? tensor(shared + self_off_, dtype::float32, self_.sizes(), self_.dim(), nullptr, 0)
                                    : tensor();
      const tensor out(shared + out_off_, dtype::float32, {out_.size(0), out_.size(1), out_.size(2)});
      return gemm(chunk, scratch, with_strides(self, b1, b2, out));
    }
    // stage 2: row `chunk` of the float32 result into out.
    const auto n = out_.size(2);
    const auto bi = static_cast<std::int64_t>(chunk) / out_.size(1), i = static_cast<std::int64_t>(chunk) % out_.size(1);
    const float* src = reinterpret_cast<const float*>(shared + out_off_) + static_cast<std::int64_t>(chunk) * n;
    char* dst = out_.first() + (bi * out_.stride(0) + i * out_.stride(1)) * static_cast<std::int64_t>(element_size(out_.type()));
    convert_block(*k_, dst, out_.type(), static_cast<std::ptrdiff_t>(out_.stride(2)), src, dtype::float32, 1,
                  static_cast<std::size_t>(n));
  }

 private:
  gemm_args with_strides(const tensor& self, const tensor& b1, const tensor& b2, const tensor& out) const noexcept {
    gemm_args a = args_;
    a.a = reinterpret_cast<const float*>(b1.first());
    a.bm = reinterpret_cast<const float*>(b2.first());
    a.out = reinterpret_cast<float*>(out.first());
    for (int i = 0; i < 3; ++i) {
      a.a_stride[i] = b1.stride(static_cast<std::size_t>(i));
      a.b_stride[i] = b2.stride(static_cast<std::size_t>(i));
      a.out_stride[i] = out.stride(static_cast<std::size_t>(i));
    }
    if (use_self_) {
      a.self = reinterpret_cast<const float*>(self.first());
      // self broadcasts to (batch, m, n), right-aligned.
      const std::size_t off = 3 - self.dim();
      for (std::size_t i = 0; i < 3; ++i) {
        a.self_stride[i] = (i < off || self.size(i - off) == 1) ? 0 : self.stride(i - off);
      }
    }
    return a;
  }

  void gemm(std::size_t chunk, char* scratch, const gemm_args& a) const noexcept {
    const std::size_t begin = chunk * per_chunk_, end = std::min(tiles_, begin + per_chunk_);
    k_->gemm_f32(a, begin, end, reinterpret_cast<float*>(scratch));
  }

  const kernel_table* k_;
  tensor self_, b1_, b2_, out_;
  gemm_args args_;
  bool half_ = false, use_self_ = false;
  std::size_t tiles_ = 0, per_chunk_ = 1, out_rows_ = 0;
  std::size_t b1_off_ = 0, b2_off_ = 0, self_off_ = 0, out_off_ = 0;
};

}  // namespace detail

/**
 * @brief Phase one of out = beta * self + alpha * (batch1 @ batch2)
 * (torch.baddbmm): batch1 (B, M, K), batch2 (B, K, N), self broadcastable to
 * (B, M, N), all four of one dtype (float32, float16 or bfloat16; halves are
 * computed in float32 and rounded once). beta == 0 ignores self entirely
 * (NaN in it does not propagate, as in PyTorch; out is written, never read).
 * out may be self exactly; it must not overlap batch1 or batch2. No
 * promotion: all dtypes must match; beta and alpha are used as float32.
 * Rounding: the products accumulate with fused multiply-adds where the target
 * has FMA; then out = alpha * acc + beta * self, beta * self rounded and the
 * rest one fused multiply-add (two roundings without FMA), on every path and
 * whatever the includer's flags. Accurate within gamma(k + 2) *
 * (|alpha| sum|a||b| + |beta||self|) of the exact value, plus one rounding
 * into a half out; PyTorch 1.13 is within the same bound for float32 (its
 * bfloat16 baddbmm rounds partial sums to bfloat16; its float16 one does not
 * exist on CPU). k = 0 gives beta * self (0 with beta = 0).
 * Refuses: non-3-D batches, mismatched batch or inner sizes, self that does
 * not broadcast to (B, M, N), integral dtypes, mixed dtypes, overlap.
 * @throws keel::error null_parameter / invalid_parameter naming the tensor and rule.
 */
inline executor prepare_baddbmm(const kernel_table& k, const tensor& self, const tensor& batch1, const tensor& batch2,
                                const scalar& beta, const scalar& alpha, const tensor& out,
                                const prepare_options& options = {}) {
  const char* api = "keel::ops::baddbmm";
  detail::check_present(api, batch1, "batch1");
  detail::check_present(api, batch2, "batch2");
  detail::check_present(api, out, "out");
  const bool use_self = beta.to_double() != 0.0;
  if (use_self) detail::check_present(api, self, "self");
  if (batch1.dim() != 3)
    ::keel::detail::throw_composed(errc::invalid_parameter, api, {"batch1 must be 3-D, got ", batch1.shape_string()});
  if (batch2.dim() != 3)
    ::keel::detail::throw_composed(errc::invalid_parameter, api, {"batch2 must be 3-D, got ", batch2.shape_string()});
  if (batch1.size(0) != batch2.size(0)) {
    ::keel::detail::throw_composed(
        errc::invalid_parameter, api,
        {"batch1 ", batch1.shape_string(), " and batch2 ", batch2.shape_string(), " have different batch sizes"});
  }
  if (batch1.size(2) != batch2.size(1)) {
    ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                   {"batch1 ", batch1.shape_string(), " and batch2 ", batch2.shape_string(),
                                    " cannot be multiplied (batch1.size(2) != batch2.size(1))"});
  }
  if (self.dim() > 3)
    ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                   {"self must have at most 3 dimensions, got ", self.shape_string()});
  detail::shape_buf want;
  want.n = 3;
  want.d[0] = batch1.size(0);
  want.d[1] = batch1.size(1);
  want.d[2] = batch2.size(2);
  {
    const tensor target(nullptr, dtype::float32, {want.d[0], want.d[1], want.d[2]});
    const auto b = detail::broadcast_shapes(api, {{&self, "self"}, {&target, "batch1 @ batch2"}});
    if (b.n != 3 || b.d[0] != want.d[0] || b.d[1] != want.d[1] || b.d[2] != want.d[2]) {
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {"self ", self.shape_string(), " does not broadcast to the product's shape"});
    }
  }
  detail::check_out_shape(api, out, want, "(batch1.size(0), batch1.size(1), batch2.size(2))");
  const dtype t = batch1.type();
  if (!is_floating(t)) {
    ::keel::detail::throw_composed(
        errc::invalid_parameter, api,
        {"batch1 is ", dtype_name(t), "; keel's baddbmm supports float32, float16, bfloat16"});
  }
  // A null self (allowed when beta == 0) has no dtype to check.
  const bool self_present = use_self || self.data() != nullptr;
  if (batch2.type() != t || (self_present && self.type() != t) || out.type() != t) {
    ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                   {"dtypes must all match: self ", dtype_name(self.type()), ", batch1 ", dtype_name(t),
                                    ", batch2 ", dtype_name(batch2.type()), ", out ", dtype_name(out.type())});
  }
  detail::check_out_writable(api, out);
  detail::check_overlap(api, out, batch1, "batch1", false);
  detail::check_overlap(api, out, batch2, "batch2", false);
  if (use_self) detail::check_overlap(api, out, self, "self", true);
  auto p = std::make_shared<detail::baddbmm_plan>(k, self, batch1, batch2, out, beta.to_float(), alpha.to_float(),
                                                  options.workers);
  detail::check_workspace(api, *p, options.workers);
  detail::record_call(p->call, op_kind::baddbmm, self, batch1, batch2, beta, alpha, out);
  return executor(std::move(p), options);
}

/** @brief prepare_baddbmm then run on the calling thread. */
inline void baddbmm(const kernel_table& k, const tensor& self, const tensor& b1, const tensor& b2, const scalar& beta,
                    const scalar& alpha, const tensor& out) {
  detail::run_now(prepare_baddbmm(k, self, b1, b2, beta, alpha, out));
}

/// @brief The tag of baddbmm (out = beta * self + alpha * b1 @ b2) for exec() and executor_cache.
struct baddbmm_op {
  // The protocol exec() and executor_cache call (key, prepare, check, bind, launch): internal.
  /// @cond KEEL_OP_PROTOCOL
  static constexpr op_kind kind = op_kind::baddbmm;
  static detail::plan_key key(const tensor& self, const tensor& b1, const tensor& b2, const scalar& beta,
                              const scalar& alpha, const tensor& out) {
    detail::plan_key k(kind);
    k.add(self), k.add(b1), k.add(b2), k.add(beta), k.add(alpha), k.add(out);
    k.put(beta.to_double() == 0.0);  // beta == 0 plans never read self
    return k;
  }
  static executor prepare(const kernel_table& k, const prepare_options& o, const tensor& self, const tensor& b1,
                          const tensor& b2, const scalar& beta, const scalar& alpha, const tensor& out) {
    return prepare_baddbmm(k, self, b1, b2, beta, alpha, out, o);
  }
  static std::shared_ptr<detail::plan> bind(const detail::plan& cached, const tensor& self, const tensor& b1,
                                            const tensor& b2, const scalar& beta, const scalar& alpha,
                                            const tensor& out) {
    const char* api = "keel::ops::baddbmm";
    const bool use_self = beta.to_double() != 0.0;
    if (use_self) detail::check_present(api, self, "self");
    detail::check_present(api, b1, "batch1");
    detail::check_present(api, b2, "batch2");
    detail::check_present(api, out, "out");
    detail::check_overlap(api, out, b1, "batch1", false);
    detail::check_overlap(api, out, b2, "batch2", false);
    if (use_self) detail::check_overlap(api, out, self, "self", true);
    auto p = cached.clone();
    static_cast<detail::baddbmm_plan&>(*p).bind(self, b1, b2, out, beta.to_float(), alpha.to_float());
    p->call.rebind(self, b1, b2, beta, alpha, out);
    return p;
  }
  /// @endcond
};

/**
 * @brief prepare_baddbmm on another operator layer's target (an acl::device:
 * aclnnBaddbmm): the same arguments, that layer's executor.
 * @throws keel::error as that layer's phase one.
 */
template <class Target, detail::if_other_target_t<Target> = 0>
executor_for_t<Target> prepare_baddbmm(Target& target, const tensor& self, const tensor& batch1, const tensor& batch2, const scalar& beta, const scalar& alpha, const tensor& out,
                        const prepare_options& options = {}) {
  return operator_layer_of_t<Target>::template prepare<baddbmm_op>(target, options, self, batch1, batch2, beta, alpha, out);
}

} KEEL_END_NAMESPACE  // namespace keel::ops
