// SPDX-License-Identifier: Apache-2.0
// The call a plan was made for, as phase one (or a cache hit's bind) saw it:
// the operator and its tensors, scalars and integer parameters in parameter
// order, each with its parameter's name. What a dump reports of an operator
// task and what an operator task checks a new executor against. What the
// call's key fixes is shared; a cache hit's plan copies only the addresses
// and scalar values it binds, allocating nothing.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <type_traits>

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

// What a call's key fixes (the operator, its tensors' dtypes, shapes and
// strides, its scalars' dtypes, the parameters' names): made once at phase
// one and shared by every plan a cache hit binds from it. Sized for keel's
// operators (baddbmm: four tensors and two scalars); a row of the operator
// table with more must grow it.
struct call_signature {
  static constexpr std::size_t max_tensors = 4;
  static constexpr std::size_t max_values = 2;
  op_kind op = op_kind::add;
  std::uint8_t tensor_count = 0;
  std::uint8_t value_count = 0;  // scalars, and integer parameters held as int64 scalars
  std::array<const char*, max_tensors> tensor_names{};
  std::array<const char*, max_values> value_names{};
  std::array<tensor, max_tensors> tensors{};  // their views (the addresses are the record's)
};

// The call a plan was made for: its signature (shared) and what a cache hit
// binds anew, the tensors' addresses and the scalars' values (a few words
// a plan's copy carries cheaply).
struct call_record {
  std::shared_ptr<const call_signature> signature;
  std::array<const void*, call_signature::max_tensors> addresses{};  // each tensor's first element
  std::array<scalar, call_signature::max_values> values{};

  // Binds @p args' addresses and values, in parameter order. Throws: nothing.
  template <class... Args>
  void rebind(const Args&... args) noexcept {
    std::size_t t = 0, v = 0;
    (bind_one(t, v, args), ...);
  }

 private:
  void bind_one(std::size_t& t, std::size_t&, const tensor& x) noexcept {
    if (t < addresses.size()) addresses[t++] = x.data() == nullptr ? nullptr : x.first();
  }
  void bind_one(std::size_t&, std::size_t& v, const scalar& x) noexcept {
    if (v < values.size()) values[v++] = x;
  }
  void bind_one(std::size_t&, std::size_t& v, std::int64_t x) noexcept {
    if (v < values.size()) values[v++] = scalar(x);
  }
};

// Records @p args (tensors, scalars, integers, in @p op's parameter order)
// as the call @p c describes: phase one's signature, and the bindings.
// @throws std::bad_alloc.
template <class... Args>
void record_call(call_record& c, op_kind op, const Args&... args) {
  auto sig = std::make_shared<call_signature>();
  sig->op = op;
  const std::array<const char*, 6> names = parameter_names(op);
  std::size_t i = 0;
  auto put = [&](const auto& x) {
    const char* name = names[i < names.size() ? i : 0];
    ++i;
    using X = std::decay_t<decltype(x)>;
    if constexpr (std::is_same_v<X, tensor>) {
      if (sig->tensor_count == call_signature::max_tensors) return;
      sig->tensor_names[sig->tensor_count] = name;
      sig->tensors[sig->tensor_count++] = x;
    } else {
      if (sig->value_count == call_signature::max_values) return;
      sig->value_names[sig->value_count++] = name;
    }
  };
  (put(args), ...);
  c.rebind(args...);
  c.signature = std::move(sig);
}

// The record as the runtime's vocabulary (a dump, an operator task's refusal).
inline void describe_call(const call_record& c, std::string_view function, operator_call& out) {
  out.tensors.clear();
  out.scalars.clear();
  out.function = function;
  if (!c.signature) return;
  const call_signature& sig = *c.signature;
  out.op = op_name(sig.op);
  for (std::size_t i = 0; i < sig.tensor_count; ++i) {
    const tensor& t = sig.tensors[i];
    operator_tensor d;
    d.name = sig.tensor_names[i];
    d.address = c.addresses[i];
    d.dtype = dtype_name(t.type());
    d.shape.assign(t.sizes(), t.sizes() + t.dim());
    d.strides.assign(t.strides(), t.strides() + t.dim());
    out.tensors.push_back(std::move(d));
  }
  for (std::size_t i = 0; i < sig.value_count; ++i) {
    const scalar& v = c.values[i];
    operator_scalar d;
    d.name = sig.value_names[i];
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
