// SPDX-License-Identifier: Apache-2.0
// adaptive_avg_pool2d (torch.nn.functional.adaptive_avg_pool2d): its plan,
// phase one and the one-call form.
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

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops {

namespace detail {

class pool_plan final : public plan {
 public:
  pool_plan(const kernel_table& k, const tensor& self, const tensor& out, std::size_t workers) : k_(&k), self_(self), out_(out) {
    op = op_kind::adaptive_avg_pool2d;
    const std::size_t nd = self.dim();
    h_ = static_cast<std::size_t>(self.size(nd - 2));
    w_ = static_cast<std::size_t>(self.size(nd - 1));
    oh_ = static_cast<std::size_t>(out.size(nd - 2));
    ow_ = static_cast<std::size_t>(out.size(nd - 1));
    channels_ = static_cast<std::size_t>(self.size(nd - 3));
    planes_ = nd == 4 ? static_cast<std::size_t>(self.size(0)) * channels_ : channels_;
    if (oh_ * ow_ == 0) planes_ = 0;
    direct_in_ = self.type() == dtype::float32 && self.stride(nd - 1) == 1;
    direct_out_ = out.type() == dtype::float32 && (ow_ <= 1 || out.stride(nd - 1) == 1) &&
                  (oh_ <= 1 || out.stride(nd - 2) == static_cast<std::int64_t>(ow_));
    const checked_size scratch =
        (checked_size(pool_row_scratch_floats(w_)) + (direct_in_ ? checked_size(0) : checked_size(h_) * w_) +
         (direct_out_ ? checked_size(0) : checked_size(oh_) * ow_)) *
        sizeof(float);
    check_size("keel::ops::adaptive_avg_pool2d", scratch, [&] {
      return "the per-worker scratch for self " + self.shape_string() + " and out " + out.shape_string() +
             " (a padded row, a float32 copy of one self plane (H * W) unless self is float32 with unit column "
             "stride, and one out plane (oh * ow) unless out is contiguous float32)";
    });
    scratch_bytes = scratch.value();
    per_chunk_ = chunk_items(planes_, workers, 1);
  }

  std::size_t chunk_count(std::size_t) const noexcept override { return (planes_ + per_chunk_ - 1) / per_chunk_; }
  std::shared_ptr<plan> clone() const override { return std::make_shared<pool_plan>(*this); }
  void bind(const tensor& self, const tensor& out) noexcept {
    self_ = self;
    out_ = out;
  }

  void run_chunk(std::size_t, std::size_t chunk, char*, char* scratch) const override {
    const std::size_t nd = self_.dim();
    auto* row_sum = reinterpret_cast<float*>(scratch);
    float* in_buf = row_sum + pool_row_scratch_floats(w_);
    float* out_buf = in_buf + (direct_in_ ? 0 : h_ * w_);
    const std::size_t end = std::min(planes_, (chunk + 1) * per_chunk_);
    for (std::size_t p = chunk * per_chunk_; p < end; ++p) {
      const auto n = static_cast<std::int64_t>(p / channels_), c = static_cast<std::int64_t>(p % channels_);
      const std::int64_t in_off = (nd == 4 ? n * self_.stride(0) : 0) + c * self_.stride(nd - 3);
      const std::int64_t out_off = (nd == 4 ? n * out_.stride(0) : 0) + c * out_.stride(nd - 3);
      const std::size_t ies = element_size(self_.type()), oes = element_size(out_.type());
      const char* in = self_.first() + in_off * static_cast<std::int64_t>(ies);
      char* out = out_.first() + out_off * static_cast<std::int64_t>(oes);
      const float* plane = reinterpret_cast<const float*>(in);
      std::ptrdiff_t row_stride = static_cast<std::ptrdiff_t>(self_.stride(nd - 2));
      if (!direct_in_) {
        for (std::size_t r = 0; r < h_; ++r) {
          convert_block(*k_, in_buf + r * w_, dtype::float32, 1,
                        in + static_cast<std::int64_t>(r) * self_.stride(nd - 2) * static_cast<std::int64_t>(ies),
                        self_.type(), static_cast<std::ptrdiff_t>(self_.stride(nd - 1)), w_);
        }
        plane = in_buf;
        row_stride = static_cast<std::ptrdiff_t>(w_);
      }
      float* dst = direct_out_ ? reinterpret_cast<float*>(out) : out_buf;
      k_->adaptive_avg_pool2d_f32(plane, h_, w_, row_stride, dst, oh_, ow_, row_sum);
      if (!direct_out_) {
        for (std::size_t r = 0; r < oh_; ++r) {
          convert_block(*k_, out + static_cast<std::int64_t>(r) * out_.stride(nd - 2) * static_cast<std::int64_t>(oes),
                        out_.type(), static_cast<std::ptrdiff_t>(out_.stride(nd - 1)), out_buf + r * ow_,
                        dtype::float32, 1, ow_);
        }
      }
    }
  }

 private:
  const kernel_table* k_;
  tensor self_, out_;
  std::size_t h_ = 0, w_ = 0, oh_ = 0, ow_ = 0, channels_ = 0, planes_ = 0, per_chunk_ = 1;
  bool direct_in_ = false, direct_out_ = false;
};

}  // namespace detail

/**
 * @brief Phase one of torch.nn.functional.adaptive_avg_pool2d(self,
 * output_size) into out, for (N, C, H, W) and (C, H, W) inputs with non-zero
 * C, H, W: window rows [floor(i*H/oh), ceil((i+1)*H/oh)), columns likewise.
 * float32, float16, bfloat16 (accumulated in float32, divided by the window
 * size and rounded once); out has self's dtype and must not overlap self.
 * Output sizes may exceed the input's (windows then repeat elements).
 * Additions only (no multiply to fuse), in an order of keel's own (column
 * sums, then a pairwise row sum): it matches PyTorch 1.13 within
 * 2 gamma(n + 1) * mean|x| + 2u|mean| (n the window size, u = 2^-24), plus
 * one unit in the last place of a half out; bit for bit when no sum rounds.
 * Refuses: other ranks, an empty C, H or W, integral dtypes, a dtype mismatch.
 * @throws keel::error null_parameter / invalid_parameter naming the tensor and rule.
 */
inline executor prepare_adaptive_avg_pool2d(const kernel_table& k, const tensor& self, std::int64_t out_h,
                                            std::int64_t out_w, const tensor& out, const prepare_options& options = {}) {
  const char* api = "keel::ops::adaptive_avg_pool2d";
  detail::check_present(api, self, "self");
  detail::check_present(api, out, "out");
  const std::size_t nd = self.dim();
  if (nd != 3 && nd != 4) {
    ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                   {"self must be 3-D (C, H, W) or 4-D (N, C, H, W), got ", self.shape_string()});
  }
  for (std::size_t i = nd - 3; i < nd; ++i) {
    if (self.size(i) == 0) {
      ::keel::detail::throw_composed(
          errc::invalid_parameter, api,
          {"self ", self.shape_string(), " has an empty dimension ", i, "; only the batch dimension may be empty"});
    }
  }
  if (out_h < 0 || out_w < 0) {
    ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                   {"output_size (", out_h, ", ", out_w, ") must not be negative"});
  }
  if (!is_floating(self.type())) {
    ::keel::detail::throw_composed(
        errc::invalid_parameter, api,
        {"self is ", dtype_name(self.type()), "; adaptive_avg_pool2d supports float32, float16, bfloat16"});
  }
  if (out.type() != self.type()) {
    ::keel::detail::throw_composed(
        errc::invalid_parameter, api,
        {"out is ", dtype_name(out.type()), " but self is ", dtype_name(self.type()), "; they must match"});
  }
  detail::shape_buf want;
  want.n = nd;
  for (std::size_t i = 0; i < nd; ++i) want.d[i] = self.size(i);
  want.d[nd - 2] = out_h;
  want.d[nd - 1] = out_w;
  detail::check_out_shape(api, out, want, "self's leading dimensions followed by output_size");
  detail::check_out_writable(api, out);
  detail::check_overlap(api, out, self, "self", false);
  auto p = std::make_shared<detail::pool_plan>(k, self, out, options.workers);
  detail::check_workspace(api, *p, options.workers);
  detail::record_call(p->call, op_kind::adaptive_avg_pool2d, self, out_h, out_w, out);
  return executor(std::move(p), options);
}

/** @brief prepare_adaptive_avg_pool2d then run on the calling thread. */
inline void adaptive_avg_pool2d(const kernel_table& k, const tensor& self, std::int64_t out_h, std::int64_t out_w,
                                const tensor& out) {
  detail::run_now(prepare_adaptive_avg_pool2d(k, self, out_h, out_w, out));
}

// Pooling and baddbmm plans hold whole tensor views (hundreds of bytes) and
// do enough work that copying the plan on a hit does not show: exec()
// acquires an executor for them and runs it with a stream-ordered workspace.
/// @brief The tag of adaptive_avg_pool2d for exec() and executor_cache.
struct adaptive_avg_pool2d_op {
  // The protocol exec() and executor_cache call (key, prepare, check, bind, launch): internal.
  /// @cond KEEL_OP_PROTOCOL
  static constexpr op_kind kind = op_kind::adaptive_avg_pool2d;
  static detail::plan_key key(const tensor& self, std::int64_t oh, std::int64_t ow, const tensor& out) {
    detail::plan_key k(kind);
    k.add(self), k.put(static_cast<std::uint64_t>(oh)), k.put(static_cast<std::uint64_t>(ow)), k.add(out);
    return k;
  }
  static executor prepare(const kernel_table& k, const prepare_options& o, const tensor& self, std::int64_t oh,
                          std::int64_t ow, const tensor& out) {
    return prepare_adaptive_avg_pool2d(k, self, oh, ow, out, o);
  }
  static std::shared_ptr<detail::plan> bind(const detail::plan& cached, const tensor& self, std::int64_t oh,
                                            std::int64_t ow, const tensor& out) {
    const char* api = "keel::ops::adaptive_avg_pool2d";
    detail::check_present(api, self, "self");
    detail::check_present(api, out, "out");
    detail::check_overlap(api, out, self, "self", false);
    auto p = cached.clone();
    static_cast<detail::pool_plan&>(*p).bind(self, out);
    p->call.rebind(self, oh, ow, out);
    return p;
  }
  /// @endcond
};


/**
 * @brief prepare_adaptive_avg_pool2d on another operator layer's target (an acl::device:
 * aclnnAdaptiveAvgPool2d): the same arguments, that layer's executor.
 * @throws keel::error as that layer's phase one.
 */
template <class Target, detail::if_other_target_t<Target> = 0>
executor_for_t<Target> prepare_adaptive_avg_pool2d(Target& target, const tensor& self, std::int64_t out_h, std::int64_t out_w, const tensor& out,
                        const prepare_options& options = {}) {
  return operator_layer_of_t<Target>::template prepare<adaptive_avg_pool2d_op>(target, options, self, out_h, out_w, out);
}

} KEEL_END_NAMESPACE  // namespace keel::ops
