// SPDX-License-Identifier: Apache-2.0
// The reference operators, PyTorch's semantics: phase one (prepare_*)
// validates and returns an executor; the one-call forms run it at once.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/ops/dtype.hpp"
#include "keel/ops/executor.hpp"
#include "keel/ops/kernels/kernel_table.hpp"
#include "keel/ops/scalar.hpp"
#include "keel/ops/tensor.hpp"

namespace keel::ops {

/**
 * @brief torch.result_type over tensors (ATen's TensorIterator common dtype):
 * dimensioned tensors decide; zero-dim tensors count only when they are of a
 * higher category (bool < integer < floating). keel has no wrapped numbers:
 * scalar arguments (alpha, value, beta) never take part. Empty when the
 * result leaves keel's dtypes (int16, from int8 with uint8); an int16 on the
 * way is kept, so int8 and uint8 tensors with a 0-dim float32 give float32,
 * as in PyTorch.
 */
inline std::optional<dtype> result_type(std::initializer_list<const tensor*> tensors) noexcept {
  // A promotion result that may be int16 (which only int8 with uint8 makes).
  struct slot {
    bool set = false, int16 = false;
    dtype t = dtype::boolean;
    void add(dtype x) noexcept {
      if (!set) {
        set = true, t = x;
      } else if (int16) {  // int16 with bool, int8 or uint8 stays int16; wider types win
        if (x == dtype::int32 || x == dtype::int64 || is_floating(x)) int16 = false, t = x;
      } else if (auto p = promote_types(t, x)) {
        t = *p;
      } else {
        int16 = true;
      }
    }
    bool floating() const noexcept { return set && !int16 && is_floating(t); }
  };
  slot dim_result, zero_result;
  for (const tensor* t : tensors) (t->dim() == 0 ? zero_result : dim_result).add(t->type());
  slot r = dim_result.set ? dim_result : zero_result;
  // ATen's combine_categories(higher = dim, lower = zero-dim).
  if (dim_result.set && zero_result.set && !dim_result.floating()) {
    const bool dim_bool = !dim_result.int16 && dim_result.t == dtype::boolean;
    if (dim_bool || zero_result.floating()) {
      if (zero_result.int16) {
        r.add(dtype::int8), r.add(dtype::uint8);  // bool with int16: int16
      } else {
        r.add(zero_result.t);
      }
    }
  }
  if (!r.set || r.int16) return std::nullopt;
  return r.t;
}

namespace detail {

// ---------------------------------------------------------------- checks ---

inline void check_present(const char* api, const tensor& t, const char* name) {
  if (t.data() == nullptr && t.numel() != 0) {
    throw_error(errc::null_parameter, api, std::string(name) + " is null (no data pointer)");
  }
}

// The broadcast shape of the inputs, right-aligned as PyTorch does.
struct shape_buf {
  std::int64_t d[tensor::max_dims] = {};
  std::size_t n = 0;
};

inline shape_buf broadcast_shapes(const char* api, std::initializer_list<std::pair<const tensor*, const char*>> ins) {
  shape_buf out;
  for (const auto& in : ins) out.n = std::max(out.n, in.first->dim());
  for (std::size_t i = 0; i < out.n; ++i) out.d[i] = 1;
  for (const auto& [t, name] : ins) {
    const std::size_t off = out.n - t->dim();
    for (std::size_t i = 0; i < t->dim(); ++i) {
      std::int64_t& o = out.d[off + i];
      const std::int64_t s = t->size(i);
      if (s == o || s == 1) continue;
      if (o == 1) {
        o = s;
        continue;
      }
      std::string names;
      for (const auto& x : ins) names += std::string(names.empty() ? "" : ", ") + x.second + " " + x.first->shape_string();
      throw_error(errc::invalid_parameter, api,
                  "shapes are not broadcastable (" + names + "): " + name + " has size " + std::to_string(s) +
                      " where another input has " + std::to_string(o) + " at dimension " + std::to_string(off + i));
    }
  }
  return out;
}

inline void check_out_shape(const char* api, const tensor& out, const shape_buf& want, const std::string& what) {
  bool ok = out.dim() == want.n;
  for (std::size_t i = 0; ok && i < want.n; ++i) ok = out.size(i) == want.d[i];
  if (!ok) {
    std::string w = "[";
    for (std::size_t i = 0; i < want.n; ++i) w += (i ? ", " : "") + std::to_string(want.d[i]);
    throw_error(errc::invalid_parameter, api,
                "out has shape " + out.shape_string() + " but " + what + " is " + w + "]; keel does not resize out");
  }
}

// out may be exactly an input (in place) when `in_place_ok`; any other
// sharing of memory is an error, as is an out that writes one element twice.
inline void check_overlap(const char* api, const tensor& out, const tensor& in, const char* name, bool in_place_ok) {
  if (in_place_ok && same_view(out, in)) return;
  if (may_overlap(out, in)) {
    throw_error(errc::invalid_parameter, api,
                std::string("out overlaps ") + name +
                    (in_place_ok ? " without being exactly the same view (partial overlap)"
                                 : " (this operator cannot write over its input)"));
  }
}

// The bytes a view spans from its first element (what extent_of() adds to
// it), and whether two views are laid out alike (same_view() without the
// pointers): both fixed by dtype, shape and strides, so a plan can keep them.
inline std::uintptr_t span_bytes(const tensor& t) noexcept {
  if (t.numel() == 0) return 0;
  std::int64_t last = 0;
  for (std::size_t i = 0; i < t.dim(); ++i) last += (t.size(i) - 1) * t.stride(i);
  const auto es = static_cast<std::uintptr_t>(element_size(t.type()));
  return static_cast<std::uintptr_t>(last) * es + es;
}
inline bool same_layout(const tensor& a, const tensor& b) noexcept {
  if (a.type() != b.type() || a.dim() != b.dim()) return false;
  for (std::size_t i = 0; i < a.dim(); ++i) {
    if (a.size(i) != b.size(i) || (a.size(i) != 1 && a.stride(i) != b.stride(i))) return false;
  }
  return true;
}

inline void check_out_writable(const char* api, const tensor& out) {
  if (has_internal_overlap(out)) {
    throw_error(errc::invalid_parameter, api,
                "out has overlapping elements (a zero or too-small stride): one result would be written twice");
  }
}

// ---------------------------------------------------------- conversions ---

// Contiguous SIMD conversions where the table has them, scalar otherwise.
inline void convert_block(const kernel_table& k, void* dst, dtype dt, std::ptrdiff_t ds, const void* src, dtype st,
                          std::ptrdiff_t ss, std::size_t n) noexcept {
  if (ds == 1 && ss == 1) {
    if (dt == st) {
      std::memmove(dst, src, n * element_size(dt));  // in place, dst may equal src
      return;
    }
    if (st == dtype::float32 && dt == dtype::float16) {
      return k.f32_to_f16(static_cast<std::uint16_t*>(dst), static_cast<const float*>(src), n);
    }
    if (st == dtype::float16 && dt == dtype::float32) {
      return k.f16_to_f32(static_cast<float*>(dst), static_cast<const std::uint16_t*>(src), n);
    }
    if (st == dtype::float32 && dt == dtype::bfloat16) {
      return k.f32_to_bf16(static_cast<std::uint16_t*>(dst), static_cast<const float*>(src), n);
    }
    if (st == dtype::bfloat16 && dt == dtype::float32) {
      return k.bf16_to_f32(static_cast<float*>(dst), static_cast<const std::uint16_t*>(src), n);
    }
  }
  strided_convert(dst, dt, ds, src, st, ss, n);
}

// src (type st) -> via -> dst (type dt), rounding through `via` as PyTorch
// does when it converts an operand to the common dtype before computing in
// float32 (or a float32 result into the common dtype before out's). One
// conversion when via is either end; otherwise `scratch` holds the n
// intermediate elements (2 bytes each: via is float16 or bfloat16 here).
inline void convert_through(const kernel_table& k, void* dst, dtype dt, std::ptrdiff_t ds, const void* src, dtype st,
                            std::ptrdiff_t ss, std::size_t n, dtype via, void* scratch) noexcept {
  if (via == st || via == dt) return convert_block(k, dst, dt, ds, src, st, ss, n);
  convert_block(k, scratch, via, 1, src, st, ss, n);
  convert_block(k, dst, dt, ds, scratch, via, 1, n);
}

// Calls fn(pointer to first element of the row, element stride, length)
// for every innermost row of t, in row-major order.
template <class F>
void for_each_row(const tensor& t, F&& fn) {
  if (t.numel() == 0) return;
  const std::size_t nd = t.dim();
  const std::size_t es = element_size(t.type());
  if (nd == 0) return fn(t.first(), std::ptrdiff_t{0}, std::size_t{1});
  std::int64_t idx[tensor::max_dims] = {};
  const std::int64_t rows = t.numel() / t.size(nd - 1);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t off = 0;
    for (std::size_t i = 0; i + 1 < nd; ++i) off += idx[i] * t.stride(i);
    fn(t.first() + off * static_cast<std::int64_t>(es), static_cast<std::ptrdiff_t>(t.stride(nd - 1)),
       static_cast<std::size_t>(t.size(nd - 1)));
    for (std::size_t i = nd - 1; i-- > 0;) {
      if (++idx[i] < t.size(i)) break;
      idx[i] = 0;
    }
  }
}

// Splits `total` items into chunks for `workers` (a few per worker, so an
// uneven worker does not hold the others back), never under `min_items`.
inline std::size_t chunk_items(std::size_t total, std::size_t workers, std::size_t min_items) noexcept {
  if (workers <= 1 || total == 0) return std::max<std::size_t>(total, 1);
  // More parts than items (also when workers * 4 would wrap): one item each.
  if (workers > total / 4) return std::max<std::size_t>(min_items, 1);
  return std::max(min_items, (total + workers * 4 - 1) / (workers * 4));
}

// --------------------------------------------------------- elementwise ---

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
    // thread waiting in synchronize() competes with the workers for cores:
    // on 2 cores a 64K add took 15 us split and 10 us whole, while a 256K
    // add took 39 us split and 169 us whole).
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

}  // namespace detail

// ------------------------------------------------------------------ add ---

/**
 * @brief Phase one of out = self + alpha * other (torch.add(self, other,
 * alpha=alpha, out=out)): broadcasting, out of exactly the broadcast shape;
 * out may be self or other (in place).
 *
 * Promotion (ATen's TensorIterator): the common dtype is result_type(self,
 * other); both operands are converted to it, and so is alpha
 * (alpha.to<scalar_t>(): 1.0001 is 1 for a float16 or bfloat16 add).
 * Floating common dtypes compute in float32 (opmath) and round once into the
 * common dtype, then convert to out's; int32 and int64 compute in their own
 * type, wrapping. Rounding: self + alpha * other is one fused multiply-add on
 * targets with FMA (kernel_table::fused_multiply_add), as ATen's vec::fmadd;
 * two roundings on the others; the same whatever flags the includer uses.
 * Matches PyTorch 1.13 on CPU bit for bit on FMA targets, except where it
 * computes a float16 or bfloat16 add in c10::Half / c10::BFloat16 arithmetic
 * (float16, and the bfloat16 elements past its last full vector), which
 * rounds alpha * other first when alpha is not +-1; keel rounds once
 * everywhere (tests/ops/golden/README.md).
 * Refuses: a common dtype that is bool, int8, uint8 or int16; a bool alpha;
 * a floating alpha with integral operands; an out dtype the result cannot be
 * cast to (torch.can_cast); partial overlap of out with an input.
 * @throws keel::error null_parameter / invalid_parameter naming the tensor and rule.
 */
inline executor prepare_add(const kernel_table& k, const tensor& self, const tensor& other, const scalar& alpha,
                            const tensor& out, const prepare_options& options = {}) {
  const char* api = "keel::ops::add";
  detail::check_present(api, self, "self");
  detail::check_present(api, other, "other");
  detail::check_present(api, out, "out");
  const auto shape = detail::broadcast_shapes(api, {{&self, "self"}, {&other, "other"}});
  detail::check_out_shape(api, out, shape, "the broadcast shape of self and other");
  const auto rt = result_type({&self, &other});
  if (!rt) {
    throw_error(errc::invalid_parameter, api,
                std::string("self (") + dtype_name(self.type()) + ") and other (" + dtype_name(other.type()) +
                    ") promote to int16, which keel does not have");
  }
  const dtype compute = *rt;
  if (!(is_floating(compute) || compute == dtype::int32 || compute == dtype::int64)) {
    throw_error(errc::invalid_parameter, api,
                std::string("self and other promote to ") + dtype_name(compute) +
                    "; add supports float32, float16, bfloat16, int32 and int64");
  }
  if (alpha.type() == dtype::boolean) throw_error(errc::invalid_parameter, api, "alpha is bool; a boolean alpha needs a boolean result");
  if (!is_floating(compute) && alpha.is_floating()) {
    throw_error(errc::invalid_parameter, api,
                std::string("alpha is floating but the inputs are integral (") + dtype_name(compute) + "); alpha must be integral");
  }
  if (!can_cast(compute, out.type())) {
    throw_error(errc::invalid_parameter, api,
                std::string("result type ") + dtype_name(compute) + " can't be cast to out's dtype " +
                    dtype_name(out.type()));
  }
  detail::check_out_writable(api, out);
  detail::check_overlap(api, out, self, "self", true);
  detail::check_overlap(api, out, other, "other", true);
  auto p = std::make_shared<detail::elementwise_plan>(op_kind::add, k, out, std::initializer_list<const tensor*>{&self, &other},
                                                      compute, options.workers);
  p->bind(alpha);
  return executor(std::move(p), options);
}

// -------------------------------------------------------------- addcmul ---

/**
 * @brief Phase one of out = self + value * tensor1 * tensor2
 * (torch.addcmul): broadcasting over all three, in place allowed.
 *
 * Promotion: the common dtype is result_type(self, tensor1, tensor2), which
 * must be floating; every operand is converted to it, then computed in
 * float32; value stays float32 (ATen's value.to<float>() for the half
 * types). Rounding: value * tensor1 is rounded, then (value * tensor1) *
 * tensor2 + self is one fused multiply-add on targets with FMA, two
 * roundings elsewhere, whatever the includer's flags: what ATen's
 * `self + value * t1 * t2` gives as GCC builds PyTorch's vectorized CPU
 * kernels (-ffp-contract=fast). The result is rounded once into the common
 * dtype, then converted to out's. Matches PyTorch 1.13 on CPU bit for bit on
 * FMA targets; its float16 addcmul is not implemented there, and its mixed
 * dtype calls stop on an internal assertion (keel follows the definition:
 * operands converted to the common dtype).
 * Refuses: an integral or bool common dtype (or int16); a bool value; an out
 * dtype the result cannot be cast to; partial overlap of out with an input.
 * @throws keel::error null_parameter / invalid_parameter naming the tensor and rule.
 */
inline executor prepare_addcmul(const kernel_table& k, const tensor& self, const tensor& tensor1, const tensor& tensor2,
                                const scalar& value, const tensor& out, const prepare_options& options = {}) {
  const char* api = "keel::ops::addcmul";
  detail::check_present(api, self, "self");
  detail::check_present(api, tensor1, "tensor1");
  detail::check_present(api, tensor2, "tensor2");
  detail::check_present(api, out, "out");
  const auto shape = detail::broadcast_shapes(api, {{&self, "self"}, {&tensor1, "tensor1"}, {&tensor2, "tensor2"}});
  detail::check_out_shape(api, out, shape, "the broadcast shape of self, tensor1 and tensor2");
  const auto rt = result_type({&self, &tensor1, &tensor2});
  if (!rt || !is_floating(*rt)) {
    throw_error(errc::invalid_parameter, api,
                std::string("self, tensor1 and tensor2 promote to ") + (rt ? dtype_name(*rt) : "int16") +
                    "; keel's addcmul supports float32, float16 and bfloat16");
  }
  if (value.type() == dtype::boolean) throw_error(errc::invalid_parameter, api, "value is bool; it must be a number");
  if (!can_cast(*rt, out.type())) {
    throw_error(errc::invalid_parameter, api,
                std::string("result type ") + dtype_name(*rt) + " can't be cast to out's dtype " + dtype_name(out.type()));
  }
  detail::check_out_writable(api, out);
  detail::check_overlap(api, out, self, "self", true);
  detail::check_overlap(api, out, tensor1, "tensor1", true);
  detail::check_overlap(api, out, tensor2, "tensor2", true);
  auto p = std::make_shared<detail::elementwise_plan>(
      op_kind::addcmul, k, out, std::initializer_list<const tensor*>{&self, &tensor1, &tensor2}, *rt,
      options.workers);
  p->bind(value);
  return executor(std::move(p), options);
}

// ----------------------------------------------------------------- cast ---

/**
 * @brief Phase one of out = self.to(out.dtype) for any pair of keel dtypes:
 * round to nearest even into float16 and bfloat16 (NaN and infinities
 * kept), float to integer truncates toward zero (NaN gives 0 and values out
 * of range saturate, where PyTorch is undefined; uint8 wraps through int64 as
 * PyTorch), integers wrap, anything to bool is `!= 0` (NaN is true, -0 is
 * false). Shapes must be equal. Matches Tensor.to(dtype) (PyTorch 1.13 CPU)
 * bit for bit wherever C++ defines the conversion; no arithmetic, so no
 * rounding choice. Refuses: a shape mismatch; partial overlap.
 * @throws keel::error null_parameter / invalid_parameter naming the tensor and rule.
 */
inline executor prepare_cast(const kernel_table& k, const tensor& self, const tensor& out,
                             const prepare_options& options = {}) {
  const char* api = "keel::ops::cast";
  detail::check_present(api, self, "self");
  detail::check_present(api, out, "out");
  detail::shape_buf want;
  want.n = self.dim();
  for (std::size_t i = 0; i < want.n; ++i) want.d[i] = self.size(i);
  detail::check_out_shape(api, out, want, "self's shape");
  detail::check_out_writable(api, out);
  detail::check_overlap(api, out, self, "self", true);
  auto p = std::make_shared<detail::elementwise_plan>(op_kind::cast, k, out, std::initializer_list<const tensor*>{&self},
                                                      out.type(), options.workers);
  return executor(std::move(p), options);
}

// ---------------------------------------------------- adaptive_avg_pool2d ---

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
    throw_error(errc::invalid_parameter, api, "self must be 3-D (C, H, W) or 4-D (N, C, H, W), got " + self.shape_string());
  }
  for (std::size_t i = nd - 3; i < nd; ++i) {
    if (self.size(i) == 0) {
      throw_error(errc::invalid_parameter, api,
                  "self " + self.shape_string() + " has an empty dimension " + std::to_string(i) +
                      "; only the batch dimension may be empty");
    }
  }
  if (out_h < 0 || out_w < 0) {
    throw_error(errc::invalid_parameter, api,
                "output_size (" + std::to_string(out_h) + ", " + std::to_string(out_w) + ") must not be negative");
  }
  if (!is_floating(self.type())) {
    throw_error(errc::invalid_parameter, api,
                std::string("self is ") + dtype_name(self.type()) + "; adaptive_avg_pool2d supports float32, float16, bfloat16");
  }
  if (out.type() != self.type()) {
    throw_error(errc::invalid_parameter, api,
                std::string("out is ") + dtype_name(out.type()) + " but self is " + dtype_name(self.type()) +
                    "; they must match");
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
  return executor(std::move(p), options);
}

// -------------------------------------------------------------- baddbmm ---

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
  if (batch1.dim() != 3) throw_error(errc::invalid_parameter, api, "batch1 must be 3-D, got " + batch1.shape_string());
  if (batch2.dim() != 3) throw_error(errc::invalid_parameter, api, "batch2 must be 3-D, got " + batch2.shape_string());
  if (batch1.size(0) != batch2.size(0)) {
    throw_error(errc::invalid_parameter, api,
                "batch1 " + batch1.shape_string() + " and batch2 " + batch2.shape_string() + " have different batch sizes");
  }
  if (batch1.size(2) != batch2.size(1)) {
    throw_error(errc::invalid_parameter, api,
                "batch1 " + batch1.shape_string() + " and batch2 " + batch2.shape_string() +
                    " cannot be multiplied (batch1.size(2) != batch2.size(1))");
  }
  if (self.dim() > 3) throw_error(errc::invalid_parameter, api, "self must have at most 3 dimensions, got " + self.shape_string());
  detail::shape_buf want;
  want.n = 3;
  want.d[0] = batch1.size(0);
  want.d[1] = batch1.size(1);
  want.d[2] = batch2.size(2);
  {
    const tensor target(nullptr, dtype::float32, {want.d[0], want.d[1], want.d[2]});
    const auto b = detail::broadcast_shapes(api, {{&self, "self"}, {&target, "batch1 @ batch2"}});
    if (b.n != 3 || b.d[0] != want.d[0] || b.d[1] != want.d[1] || b.d[2] != want.d[2]) {
      throw_error(errc::invalid_parameter, api,
                  "self " + self.shape_string() + " does not broadcast to the product's shape");
    }
  }
  detail::check_out_shape(api, out, want, "(batch1.size(0), batch1.size(1), batch2.size(2))");
  const dtype t = batch1.type();
  if (!is_floating(t)) {
    throw_error(errc::invalid_parameter, api,
                std::string("batch1 is ") + dtype_name(t) + "; keel's baddbmm supports float32, float16, bfloat16");
  }
  // A null self (allowed when beta == 0) has no dtype to check.
  const bool self_present = use_self || self.data() != nullptr;
  if (batch2.type() != t || (self_present && self.type() != t) || out.type() != t) {
    throw_error(errc::invalid_parameter, api,
                std::string("dtypes must all match: self ") + dtype_name(self.type()) + ", batch1 " + dtype_name(t) +
                    ", batch2 " + dtype_name(batch2.type()) + ", out " + dtype_name(out.type()));
  }
  detail::check_out_writable(api, out);
  detail::check_overlap(api, out, batch1, "batch1", false);
  detail::check_overlap(api, out, batch2, "batch2", false);
  if (use_self) detail::check_overlap(api, out, self, "self", true);
  auto p = std::make_shared<detail::baddbmm_plan>(k, self, batch1, batch2, out, beta.to_float(), alpha.to_float(),
                                                  options.workers);
  detail::check_workspace(api, *p, options.workers);
  return executor(std::move(p), options);
}

// ------------------------------------------------------ one-call forms ---

namespace detail {
inline void run_now(executor ex) {
  std::unique_ptr<unsigned char[]> ws(ex.workspace_size() ? new unsigned char[ex.workspace_size()] : nullptr);
  ex.run(ws.get(), ex.workspace_size());
}
}  // namespace detail

/** @brief prepare_add then run on the calling thread. */
inline void add(const kernel_table& k, const tensor& self, const tensor& other, const scalar& alpha, const tensor& out) {
  detail::run_now(prepare_add(k, self, other, alpha, out));
}
/** @brief prepare_addcmul then run on the calling thread. */
inline void addcmul(const kernel_table& k, const tensor& self, const tensor& t1, const tensor& t2, const scalar& value,
                    const tensor& out) {
  detail::run_now(prepare_addcmul(k, self, t1, t2, value, out));
}
/** @brief prepare_cast then run on the calling thread. */
inline void cast(const kernel_table& k, const tensor& self, const tensor& out) { detail::run_now(prepare_cast(k, self, out)); }
/** @brief prepare_adaptive_avg_pool2d then run on the calling thread. */
inline void adaptive_avg_pool2d(const kernel_table& k, const tensor& self, std::int64_t out_h, std::int64_t out_w,
                                const tensor& out) {
  detail::run_now(prepare_adaptive_avg_pool2d(k, self, out_h, out_w, out));
}
/** @brief prepare_baddbmm then run on the calling thread. */
inline void baddbmm(const kernel_table& k, const tensor& self, const tensor& b1, const tensor& b2, const scalar& beta,
                    const scalar& alpha, const tensor& out) {
  detail::run_now(prepare_baddbmm(k, self, b1, b2, beta, alpha, out));
}

}  // namespace keel::ops
