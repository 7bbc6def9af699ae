// SPDX-License-Identifier: Apache-2.0
// The plan of the element-wise operators (add, mul, addcmul, cast): broadcasting,
// ATen's promotion through a common dtype, dimension merging and chunking.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>

#include "keel/ops/detail/checks.hpp"
#include "keel/ops/detail/conversions.hpp"
#include "keel/ops/dtype.hpp"
#include "keel/ops/executor.hpp"
#include "keel/ops/kernels/kernel_table.hpp"
#include "keel/ops/scalar.hpp"
#include "keel/ops/tensor.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops::detail {

// A scalar in a plan's compute type (float for floating plans, int64 for
// integral ones): 8 bytes, so a launch can carry it beside the pointers.
union scalar_word {
  float f;
  std::int64_t i;
};

// The compute type of a common dtype (ATen's opmath_type): float32 for the
// floating types, the type itself for the integers.
inline dtype opmath_of(dtype t) noexcept { return is_floating(t) ? dtype::float32 : t; }

// The element-wise plan for add, addcmul and cast: operand 0 is out, the
// others are inputs broadcast to out's shape; dimensions of size one are
// dropped and dimensions that are contiguous for every operand are merged.
//
// Promotion, as ATen's TensorIterator with its common dtype: `common` is
// the result type of the inputs; every input is converted to `common` first
// (an int32 or a 0-dim float32 operand meeting a float16 tensor is rounded to
// float16), then widened to the compute type opmath_of(common); the result
// is rounded to `common` and only then converted to out's dtype.
class elementwise_plan final : public plan {
 public:
  static constexpr std::size_t max_operands = 4;
  // Staging block: big enough to amortize the kernel call, small enough
  // that all staged operands stay in L1 (4 x 256 x 8 bytes).
  static constexpr std::size_t block = 256;
  // The smallest chunk a split gives a worker (see the constructor).
  static constexpr std::size_t min_chunk_items = 65536;

  struct operand {
    dtype type = dtype::float32;
    std::int64_t stride[tensor::max_dims] = {};
  };

  // What changes from call to call under one key: each operand's first
  // element (0 = out, then the inputs in order) and the scalar (alpha or
  // value) in the compute type. The plan keeps its own; an executor cache
  // hit passes this call's to run_chunk_bound() instead of copying the plan.
  struct binding {
    char* ptr[max_operands] = {};
    scalar_word scalar{};
  };

  elementwise_plan(op_kind kind, const kernel_table& k, const tensor& out, std::initializer_list<const tensor*> ins,
                   dtype common, std::size_t workers)
      : k_(&k), common_(common), opmath_(opmath_of(common)) {
    op = kind;
    // Operand strides in out's dimensions; broadcast dimensions get 0.
    std::int64_t shape[tensor::max_dims];
    std::size_t nd = out.dim();
    for (std::size_t i = 0; i < nd; ++i) shape[i] = out.size(i);
    auto fill = [&](std::size_t index, const tensor& t) {
      operand& o = ops_[index];
      bound_.ptr[index] = t.first();
      o.type = t.type();
      const std::size_t off = nd - t.dim();
      for (std::size_t i = 0; i < nd; ++i) {
        o.stride[i] = (i < off || t.size(i - off) == 1) ? 0 : t.stride(i - off);
      }
    };
    fill(0, out);
    n_ops_ = 1;
    for (const tensor* t : ins) fill(n_ops_++, *t);
    span_[0] = span_bytes(out);
    for (std::size_t o = 1; o < n_ops_; ++o) {
      const tensor& t = *ins.begin()[o - 1];
      span_[o] = span_bytes(t);
      like_out_[o] = same_layout(out, t);
    }
    // Drop size-1 dimensions, then merge neighbours that are contiguous for
    // all operands, so a contiguous tensor of any shape is one long row.
    std::size_t w = 0;
    for (std::size_t i = 0; i < nd; ++i) {
      if (shape[i] == 1) continue;
      shape[w] = shape[i];
      for (std::size_t o = 0; o < n_ops_; ++o) ops_[o].stride[w] = ops_[o].stride[i];
      ++w;
    }
    nd = w;
    w = 0;
    for (std::size_t i = 0; i < nd; ++i) {
      if (w > 0) {
        bool merge = true;
        for (std::size_t o = 0; o < n_ops_ && merge; ++o) merge = ops_[o].stride[w - 1] == ops_[o].stride[i] * shape[i];
        if (merge) {
          shape[w - 1] *= shape[i];
          for (std::size_t o = 0; o < n_ops_; ++o) ops_[o].stride[w - 1] = ops_[o].stride[i];
          continue;
        }
      }
      shape[w] = shape[i];
      for (std::size_t o = 0; o < n_ops_; ++o) ops_[o].stride[w] = ops_[o].stride[i];
      ++w;
    }
    if (w == 0) {  // a single element
      shape[0] = 1;
      for (std::size_t o = 0; o < n_ops_; ++o) ops_[o].stride[0] = 0;
      w = 1;
    }
    ndim_ = w;
    numel_ = 1;
    for (std::size_t i = 0; i < ndim_; ++i) {
      shape_[i] = shape[i];
      numel_ *= shape[i];
    }
    if (out.numel() == 0) numel_ = 0;
    // Sixteen chunks per worker rather than four: element-wise work is
    // memory-bound, so whichever worker finishes last runs its final chunk
    // alone at single-thread bandwidth; with 2 workers and 8 chunks of a
    // 16M add that tail could be an eighth of the work, with 32 it is at
    // most a thirty-second. A chunk still moves megabytes at that size, so
    // claiming it costs nothing measurable. One worker: one chunk, one
    // kernel call.
    //
    // No chunk under 64K elements (768 KB of an add): below that, handing
    // half the work to another core costs about what it saves (the other
    // core fetches the lines this one holds, and on the host device the
    // thread waiting in synchronize() competes with the workers for cores;
    // the ops benchmarks' add sweep across sizes shows where splitting
    // starts to pay).
    chunk_ = chunk_items(static_cast<std::size_t>(numel_),
                         workers <= 1 ? 1 : workers > SIZE_MAX / 4 ? SIZE_MAX : workers * 4, min_chunk_items);
    // Kernels decide per call whether to stream their output past the
    // caches (stream_store_min_bytes), and a call is one chunk: a large
    // operation split many ways would stop streaming. So its chunks are kept
    // at the threshold at least, whatever the number of workers.
    std::size_t bytes_per_item = element_size(ops_[0].type);
    for (std::size_t o = 1; o < n_ops_; ++o)
      if (ops_[o].stride[ndim_ - 1] != 0) bytes_per_item += element_size(ops_[o].type);
    // (numel * bytes_per_item >= the threshold, without the product that can wrap.)
    const std::size_t stream_items = (stream_store_min_bytes + bytes_per_item - 1) / bytes_per_item;
    if (static_cast<std::size_t>(numel_) >= stream_items) chunk_ = std::max(chunk_, stream_items);
    // One row whose operands all have the compute dtype and unit (or zero)
    // strides: every chunk is one kernel call, decided here once rather
    // than per call (tiny calls and their replays live here).
    if (ndim_ == 1 && op != op_kind::cast) {
      std::ptrdiff_t str[max_operands];
      for (std::size_t o = 0; o < n_ops_; ++o) str[o] = static_cast<std::ptrdiff_t>(ops_[o].stride[0]);
      flat_direct_ = true;
      for (std::size_t o = 0; o < n_ops_; ++o) flat_direct_ = flat_direct_ && direct(o, str);
    }
  }

  std::size_t chunk_count(std::size_t) const noexcept override {
    return numel_ == 0 ? 0 : (static_cast<std::size_t>(numel_) + chunk_ - 1) / chunk_;
  }

  void run_chunk(std::size_t, std::size_t chunk, char*, char*) const override { run_chunk_bound(chunk, bound_); }

  /** Runs chunk `chunk` on the memory and scalar in `b` (laid out as this plan's operands). */
  void run_chunk_bound(std::size_t chunk, const binding& b) const noexcept {
    const auto begin = static_cast<std::int64_t>(chunk * chunk_);
    const auto end = std::min<std::int64_t>(numel_, begin + static_cast<std::int64_t>(chunk_));
    if (flat_direct_) {
      void* in[max_operands - 1];
      std::ptrdiff_t str[max_operands - 1];
      for (std::size_t o = 1; o < n_ops_; ++o) {
        in[o - 1] = b.ptr[o] + begin * ops_[o].stride[0] * static_cast<std::int64_t>(element_size(ops_[o].type));
        str[o - 1] = static_cast<std::ptrdiff_t>(ops_[o].stride[0]);
      }
      compute(b.ptr[0] + begin * static_cast<std::int64_t>(element_size(ops_[0].type)), in, str,
              static_cast<std::size_t>(end - begin), b.scalar);
      return;
    }
    run_range(begin, end, b);
  }

  void run_range(std::int64_t begin, std::int64_t end, const binding& b) const noexcept {
    if (ndim_ == 1) {  // contiguous or one strided row: no index arithmetic (tiny calls live here)
      char* ptr[max_operands];
      std::ptrdiff_t str[max_operands];
      for (std::size_t o = 0; o < n_ops_; ++o) {
        ptr[o] = b.ptr[o] + begin * ops_[o].stride[0] * static_cast<std::int64_t>(element_size(ops_[o].type));
        str[o] = static_cast<std::ptrdiff_t>(ops_[o].stride[0]);
      }
      segment(ptr, str, static_cast<std::size_t>(end - begin), b.scalar);
      return;
    }
    std::int64_t idx[tensor::max_dims] = {};
    std::int64_t rem = begin;
    for (std::size_t i = ndim_; i-- > 0;) {
      idx[i] = rem % shape_[i];
      rem /= shape_[i];
    }
    const std::size_t last = ndim_ - 1;
    for (std::int64_t pos = begin; pos < end;) {
      const std::int64_t len = std::min(shape_[last] - idx[last], end - pos);
      char* ptr[max_operands];
      std::ptrdiff_t str[max_operands];
      for (std::size_t o = 0; o < n_ops_; ++o) {
        std::int64_t off = 0;
        for (std::size_t i = 0; i < ndim_; ++i) off += idx[i] * ops_[o].stride[i];
        ptr[o] = b.ptr[o] + off * static_cast<std::int64_t>(element_size(ops_[o].type));
        str[o] = static_cast<std::ptrdiff_t>(ops_[o].stride[last]);
      }
      segment(ptr, str, static_cast<std::size_t>(len), b.scalar);
      pos += len;
      idx[last] += len;
      for (std::size_t i = last; i > 0 && idx[i] >= shape_[i]; --i) {
        idx[i] = 0;
        ++idx[i - 1];
      }
    }
  }

  std::shared_ptr<plan> clone() const override { return std::make_shared<elementwise_plan>(*this); }
  /** Points operand `o` (0 = out, then the inputs in order) at t's memory; t has the planned dtype, shape and strides. */
  void bind(std::size_t o, const tensor& t) noexcept { bound_.ptr[o] = t.first(); }
  /** Sets the scalar (add's alpha, addcmul's value). */
  void bind(const scalar& s) noexcept { bound_.scalar = scalar_for(s); }
  /**
   * `s` in this plan's compute type: float for floating plans, int64 (wrapped
   * later) for integral ones. add's alpha is first converted to the common
   * dtype, as ATen's add kernel does (alpha.to<scalar_t>()): 1.0001 is 1 for a
   * float16 or bfloat16 add. addcmul's value stays float32 (ATen's
   * value.to<float>() for the half types).
   */
  scalar_word scalar_for(const scalar& s) const noexcept {
    scalar_word w;
    if (opmath_ == dtype::float32) {
      w.f = s.to_float();
      if (op == op_kind::add && common_ != opmath_) w.f = round_to(common_, w.f);
    } else {
      w.i = s.to_integer<std::int64_t>();
    }
    return w;
  }
  std::size_t operands() const noexcept { return n_ops_; }

  /**
   * check_overlap(api, out, in, name, true) for another call under this
   * plan's key, decided on what the plan kept: false when it would pass.
   * `o` is in's operand index. A hit runs this, and the full check only
   * to report the error.
   */
  bool overlaps_out(std::size_t o, const tensor& out, const tensor& in) const noexcept {
    const auto lo_out = reinterpret_cast<std::uintptr_t>(out.first());
    const auto lo_in = reinterpret_cast<std::uintptr_t>(in.first());
    if (like_out_[o] && lo_out == lo_in) return false;  // exactly out's view: in place
    if (span_[0] == 0 || span_[o] == 0) return false;
    return lo_out < lo_in + span_[o] && lo_in < lo_out + span_[0];
  }

 private:
  // Whether operand o is used in place: already in the compute type (so the
  // common dtype is the compute type too) with a unit or broadcast stride.
  bool direct(std::size_t o, const std::ptrdiff_t* str) const noexcept {
    return ops_[o].type == opmath_ && common_ == opmath_ && (o == 0 ? str[o] == 1 : (str[o] == 0 || str[o] == 1));
  }

  // f rounded to a half type and back.
  static float round_to(dtype half, float f) noexcept {
    return half == dtype::float16 ? half_bits_to_float(float_to_half_bits(f))
                                  : bfloat16_bits_to_float(float_to_bfloat16_bits(f));
  }

  void compute(void* out, void* const* in, const std::ptrdiff_t* s, std::size_t n, scalar_word sw) const noexcept {
    switch (op) {
      case op_kind::add:
        if (opmath_ == dtype::float32) {
          k_->add_f32(static_cast<float*>(out), static_cast<const float*>(in[0]), s[0], static_cast<const float*>(in[1]),
                      s[1], sw.f, n);
        } else if (opmath_ == dtype::int32) {
          k_->add_i32(static_cast<std::int32_t*>(out), static_cast<const std::int32_t*>(in[0]), s[0],
                      static_cast<const std::int32_t*>(in[1]), s[1], wrap_int<std::int32_t>(sw.i), n);
        } else {
          k_->add_i64(static_cast<std::int64_t*>(out), static_cast<const std::int64_t*>(in[0]), s[0],
                      static_cast<const std::int64_t*>(in[1]), s[1], sw.i, n);
        }
        break;
      case op_kind::mul:
        if (opmath_ == dtype::float32) {
          k_->mul_f32(static_cast<float*>(out), static_cast<const float*>(in[0]), s[0], static_cast<const float*>(in[1]),
                      s[1], n);
        } else if (opmath_ == dtype::int32) {
          k_->mul_i32(static_cast<std::int32_t*>(out), static_cast<const std::int32_t*>(in[0]), s[0],
                      static_cast<const std::int32_t*>(in[1]), s[1], n);
        } else {
          k_->mul_i64(static_cast<std::int64_t*>(out), static_cast<const std::int64_t*>(in[0]), s[0],
                      static_cast<const std::int64_t*>(in[1]), s[1], n);
        }
        break;
      case op_kind::addcmul:
        k_->addcmul_f32(static_cast<float*>(out), static_cast<const float*>(in[0]), s[0],
                        static_cast<const float*>(in[1]), s[1], static_cast<const float*>(in[2]), s[2], sw.f, n);
        break;
      default: break;
    }
  }

  void segment(char* const* ptr, const std::ptrdiff_t* str, std::size_t len, scalar_word sw) const noexcept {
    if (op == op_kind::cast) {
      convert_block(*k_, ptr[0], ops_[0].type, str[0], ptr[1], ops_[1].type, str[1], len);
      return;
    }
    const std::size_t n_in = n_ops_ - 1;
    bool all_direct = true;
    for (std::size_t o = 0; o < n_ops_; ++o) all_direct = all_direct && direct(o, str);
    if (all_direct) {
      void* in[max_operands - 1];
      for (std::size_t i = 0; i < n_in; ++i) in[i] = ptr[i + 1];
      compute(ptr[0], in, str + 1, len, sw);
      return;
    }
    // Mixed dtypes or odd strides: stage blocks in opmath (through the common
    // dtype), compute once, round into the common dtype, then out's. The
    // upper half of a staging block holds the common-dtype intermediate.
    alignas(64) unsigned char staged[max_operands][block * 8];
    constexpr std::size_t upper = block * 4;
    for (std::size_t b = 0; b < len; b += block) {
      const std::size_t n = std::min(block, len - b);
      void* in[max_operands - 1];
      std::ptrdiff_t s[max_operands - 1];
      for (std::size_t i = 0; i < n_in; ++i) {
        const std::size_t o = i + 1;
        const std::size_t oes = element_size(ops_[o].type);
        const char* src = ptr[o] + static_cast<std::ptrdiff_t>(b) * str[o] * static_cast<std::ptrdiff_t>(oes);
        if (direct(o, str)) {
          in[i] = const_cast<char*>(src);
          s[i] = str[o];
        } else {
          convert_through(*k_, staged[o], opmath_, 1, src, ops_[o].type, str[o], n, common_, staged[o] + upper);
          in[i] = staged[o];
          s[i] = 1;
        }
      }
      char* dst = ptr[0] + static_cast<std::ptrdiff_t>(b) * str[0] * static_cast<std::ptrdiff_t>(element_size(ops_[0].type));
      if (direct(0, str)) {
        compute(dst, in, s, n, sw);
      } else {
        compute(staged[0], in, s, n, sw);
        convert_through(*k_, dst, ops_[0].type, str[0], staged[0], opmath_, 1, n, common_, staged[0] + upper);
      }
    }
  }

  const kernel_table* k_;
  dtype common_;  // the inputs' result type (cast: out's dtype)
  dtype opmath_;  // opmath_of(common_)
  operand ops_[max_operands];
  std::size_t n_ops_ = 0;
  std::size_t ndim_ = 1;
  std::int64_t shape_[tensor::max_dims] = {};
  std::int64_t numel_ = 0;
  std::size_t chunk_ = 1;
  bool flat_direct_ = false;
  binding bound_;
  std::uintptr_t span_[max_operands] = {};  // span_bytes() of each operand as planned
  bool like_out_[max_operands] = {};        // same_layout() as out
};


} KEEL_END_NAMESPACE  // namespace keel::ops::detail
