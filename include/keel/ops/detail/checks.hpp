// SPDX-License-Identifier: Apache-2.0
// The argument checks every operator's phase one shares (presence, broadcast
// shapes, out's shape, overlap, writability) and the keel::error messages
// they build, so one rule reads the same whichever operator breaks it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "keel/core/error.hpp"
#include "keel/ops/dtype.hpp"
#include "keel/ops/executor.hpp"
#include "keel/ops/result_type.hpp"
#include "keel/ops/tensor.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops::detail {

inline void check_present(const char* api, const tensor& t, const char* name) {
  if (t.data() == nullptr && t.numel() != 0) {
    ::keel::detail::throw_composed(errc::null_parameter, api, {name, " is null (no data pointer)"});
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
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {"shapes are not broadcastable (", names, "): ", name, " has size ", s,
                                      " where another input has ", o, " at dimension ", off + i});
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
    ::keel::detail::throw_composed(
        errc::invalid_parameter, api,
        {"out has shape ", out.shape_string(), " but ", what, " is ", w, "]; keel does not resize out"});
  }
}

// out may be exactly an input (in place) when `in_place_ok`; any other
// sharing of memory is an error, as is an out that writes one element twice.
inline void check_overlap(const char* api, const tensor& out, const tensor& in, const char* name, bool in_place_ok) {
  if (in_place_ok && same_view(out, in)) return;
  if (may_overlap(out, in)) {
    ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                   {"out overlaps ", name,
                                    in_place_ok ? " without being exactly the same view (partial overlap)"
                                                : " (this operator cannot write over its input)"});
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

// Phase one's last check: the whole workspace fits (plans check their parts).
inline void check_workspace(const char* api, const plan& p, std::size_t workers) {
  check_size(api, workspace_bytes(p, workers), [&] {
    return "the workspace (" + std::to_string(p.shared_bytes) + " shared bytes and " + std::to_string(workers) +
           " per-worker slices of " + std::to_string(p.scratch_bytes) + " bytes)";
  });
}

// A binary elementwise operator's (add, mul) checks before its own scalar
// rules: the three tensors present, self and other broadcast to out's shape,
// and a common dtype keel's kernels compute in (float32, float16, bfloat16,
// int32, int64), which it returns. @p op names the operator in the message.
inline dtype check_binary_operands(const char* api, const char* op, const tensor& self, const tensor& other,
                                   const tensor& out) {
  check_present(api, self, "self");
  check_present(api, other, "other");
  check_present(api, out, "out");
  const auto shape = broadcast_shapes(api, {{&self, "self"}, {&other, "other"}});
  check_out_shape(api, out, shape, "the broadcast shape of self and other");
  const auto rt = result_type({&self, &other});
  if (!rt) {
    ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                   {"self (", dtype_name(self.type()), ") and other (", dtype_name(other.type()),
                                    ") promote to int16, which keel does not have"});
  }
  const dtype compute = *rt;
  if (!(is_floating(compute) || compute == dtype::int32 || compute == dtype::int64)) {
    ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                   {"self and other promote to ", dtype_name(compute), "; ", op,
                                    " supports float32, float16, bfloat16, int32 and int64"});
  }
  return compute;
}

// A binary elementwise operator's checks of out, after its own scalar rules:
// the result type casts to out's dtype, out is writable, and out is self or
// other exactly (in place) or overlaps neither.
inline void check_binary_out(const char* api, dtype compute, const tensor& self, const tensor& other,
                             const tensor& out) {
  if (!can_cast(compute, out.type())) {
    ::keel::detail::throw_composed(
        errc::invalid_parameter, api,
        {"result type ", dtype_name(compute), " can't be cast to out's dtype ", dtype_name(out.type())});
  }
  check_out_writable(api, out);
  check_overlap(api, out, self, "self", true);
  check_overlap(api, out, other, "other", true);
}

} KEEL_END_NAMESPACE  // namespace keel::ops::detail
