// SPDX-License-Identifier: Apache-2.0
// The call a plan was made for, as phase one (or a cache hit's bind) saw it:
// the operator and its tensors, scalars and integer parameters in parameter
// order, each with its parameter's name. What a dump reports of an operator
// task and what an operator task checks a new executor against. Fixed
// arrays: a cache hit copies it with the plan, allocating nothing.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "keel/ops/op_table.hpp"
#include "keel/ops/scalar.hpp"
#include "keel/ops/tensor.hpp"
#include "keel/runtime/model_tasks.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops::detail {

// Every operator's parameters after its phase-one target, in order (the
// prepare_<op> signatures).
inline constexpr std::array<const char*, 6> parameter_names(op_kind op) noexcept {
  switch (op) {
    case op_kind::add: return {"self", "other", "alpha", "out", "", ""};
    case op_kind::addcmul: return {"self", "tensor1", "tensor2", "value", "out", ""};
    case op_kind::cast: return {"self", "out", "", "", "", ""};
    case op_kind::adaptive_avg_pool2d: return {"self", "out_h", "out_w", "out", "", ""};
    case op_kind::baddbmm: return {"self", "batch1", "batch2", "beta", "alpha", "out"};
    case op_kind::mul: return {"self", "other", "out", "", "", ""};
  }
  return {"", "", "", "", "", ""};
}

struct call_record {
  static constexpr std::size_t max_tensors = 4;
  static constexpr std::size_t max_values = 2;
  op_kind op = op_kind::add;
  std::uint8_t tensor_count = 0;
  std::uint8_t value_count = 0;  // scalars, and integer parameters held as int64 scalars
  std::array<const char*, max_tensors> tensor_names{};
  std::array<const char*, max_values> value_names{};
  std::array<tensor, max_tensors> tensors{};
  std::array<scalar, max_values> values{};

  void put(const char* name, const tensor& t) noexcept {
    if (tensor_count == max_tensors) return;
    tensor_names[tensor_count] = name;
    tensors[tensor_count++] = t;
  }
  void put(const char* name, const scalar& v) noexcept {
    if (value_count == max_values) return;
    value_names[value_count] = name;
    values[value_count++] = v;
  }
  void put(const char* name, std::int64_t v) noexcept { put(name, scalar(v)); }

  // The same operator over tensors of the same shapes and dtypes (what an
  // operator task's new executor must keep); the first that differs in @p at
  // (-1: the operator or the number of tensors).
  bool same_signature(const call_record& o, long& at) const noexcept {
    at = -1;
    if (op != o.op || tensor_count != o.tensor_count) return false;
    for (std::size_t i = 0; i < tensor_count; ++i) {
      const tensor& a = tensors[i];
      const tensor& b = o.tensors[i];
      at = static_cast<long>(i);
      if (a.type() != b.type() || a.dim() != b.dim()) return false;
      for (std::size_t d = 0; d < a.dim(); ++d)
        if (a.size(d) != b.size(d)) return false;
    }
    at = -1;
    return true;
  }
};

// Records @p args (tensors, scalars, integers, in @p op's parameter order) as
// the call @p c describes. Throws: nothing.
template <class... Args>
void record_call(call_record& c, op_kind op, const Args&... args) noexcept {
  c.op = op;
  c.tensor_count = 0;
  c.value_count = 0;
  const std::array<const char*, 6> names = parameter_names(op);
  std::size_t i = 0;
  ((c.put(names[i < names.size() ? i : 0], args), ++i), ...);
}

// The record as the runtime's vocabulary (a dump, an operator task's refusal).
inline void describe_call(const call_record& c, std::string_view function, operator_call& out) {
  out.op = op_name(c.op);
  out.function = function;
  out.tensors.clear();
  out.scalars.clear();
  for (std::size_t i = 0; i < c.tensor_count; ++i) {
    const tensor& t = c.tensors[i];
    operator_tensor d;
    d.name = c.tensor_names[i];
    d.address = t.data() == nullptr ? nullptr : t.first();
    d.dtype = dtype_name(t.type());
    d.shape.assign(t.sizes(), t.sizes() + t.dim());
    d.strides.assign(t.strides(), t.strides() + t.dim());
    out.tensors.push_back(std::move(d));
  }
  for (std::size_t i = 0; i < c.value_count; ++i) {
    const scalar& v = c.values[i];
    operator_scalar d;
    d.name = c.value_names[i];
    d.dtype = dtype_name(v.type());
    d.is_floating = v.is_floating();
    if (d.is_floating) {
      d.floating = v.to_double();
    } else {
      d.integer = v.to_integer<std::int64_t>();
    }
    out.scalars.push_back(d);
  }
}

} KEEL_END_NAMESPACE  // namespace keel::ops::detail
