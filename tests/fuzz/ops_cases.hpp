// SPDX-License-Identifier: Apache-2.0
// Operator calls decoded from fuzzer bytes: tensors with arbitrary shapes,
// strides, offsets and dtypes over buffers allocated to exactly the extent
// their views describe (so AddressSanitizer reports any access outside
// them), scalars, and the five operators' attributes.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "keel/ops/executor.hpp"
#include "keel/ops/kernels/kernel_table.hpp"
#include "keel/ops/operators.hpp"
#include "keel/ops/scalar.hpp"
#include "keel/ops/tensor.hpp"

namespace keel_fuzz {

namespace ko = keel::ops;

// The kernels, from the fuzz targets' one dispatch unit (kernels.cpp).
const ko::kernel_table& kernels();

constexpr std::int64_t max_elements = 1 << 16;  // larger views are validated, not run

struct tensor_desc {
  bool null = false;
  ko::dtype type = ko::dtype::float32;
  std::size_t nd = 0;
  std::int64_t shape[6] = {};
  std::int64_t strides[6] = {};
  bool contiguous = true;
  std::int64_t offset = 0;
  int buffer = -1;  // which buffer it views
};

struct call {
  int op = 0;  // keel::ops::op_kind
  tensor_desc t[4];  // inputs in operator order, then out last (index count-1)
  int count = 0;
  ko::scalar s1, s2;
  std::int64_t oh = 0, ow = 0;
  int workers = 1;
};

inline ko::scalar decode_scalar(input& in) {
  switch (in.below(6)) {
    case 0: return ko::scalar(0.0f);
    case 1: return ko::scalar(static_cast<float>(static_cast<std::int8_t>(in.byte())) / 4.0f);
    case 2: return ko::scalar(static_cast<std::int64_t>(static_cast<std::int8_t>(in.byte())));
    case 3: return ko::scalar(static_cast<std::int32_t>(static_cast<std::int8_t>(in.byte())));
    case 4: return ko::scalar(in.chance(128));
    default: {
      const std::uint32_t bits = in.u32();
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return ko::scalar(f);
    }
  }
}

// Huge dimensions, several per tensor, so shapes whose element count or
// extent overflows 64 bits are generated: keel::ops::tensor must reject them
// with invalid_parameter (this target found the unchecked product once:
// tests/fuzz/corpus/*/tensor_shape_overflow).
inline std::int64_t decode_size(input& in) {
  const unsigned b = in.byte();
  if (b < 8) return static_cast<std::int64_t>(1) << (20 + b % 24);  // huge: validation only
  if (b < 12) return 0;
  return 1 + b % 6;
}

inline tensor_desc decode_tensor(input& in) {
  tensor_desc d;
  d.null = in.chance(6);
  d.type = static_cast<ko::dtype>(in.below(9));  // 8 dtypes and one that is not
  d.nd = in.below(6);
  d.contiguous = in.chance(150);
  for (std::size_t i = 0; i < d.nd; ++i) {
    d.shape[i] = decode_size(in);
    d.strides[i] = in.chance(20) ? -1 : static_cast<std::int64_t>(in.below(12));
  }
  d.offset = in.chance(230) ? in.below(5) : -1;
  return d;
}

// Element count a view reaches from its base pointer (offset included), or
// -1 when larger than max_elements (or overflowing).
inline std::int64_t extent_elements(const ko::tensor& t) {
  for (std::size_t i = 0; i < t.dim(); ++i)
    if (t.size(i) == 0) return t.storage_offset();  // an empty view touches nothing
  // Many elements over little memory (zero strides) would be slow to run,
  // not wrong: validate only.
  std::int64_t numel = 1;
  for (std::size_t i = 0; i < t.dim(); ++i) {
    numel *= t.size(i);
    if (numel > max_elements) return -1;
  }
  // A constructed tensor's extent fits in 64 bits (its constructor checks),
  // so this sum cannot overflow.
  std::int64_t last = t.storage_offset();
  for (std::size_t i = 0; i < t.dim(); ++i) last += (t.size(i) - 1) * t.stride(i);
  if (last + 1 > max_elements) return -1;
  return last + 1;
}

// Owns the buffers of one call. A buffer is exactly as large as the largest
// view on it needs, filled with bytes from a seed.
struct arena {
  std::vector<std::unique_ptr<unsigned char[]>> buffers;
  std::vector<std::size_t> sizes;
  std::vector<ko::tensor> views;
  bool runnable = true;  // every view fits in max_elements
};

// Builds the tensors of a call. Returns false when a view is refused by the
// tensor constructor (invalid_parameter is its documented answer).
inline bool build(const call& c, arena& a, std::uint32_t fill_seed) {
  a.views.assign(static_cast<std::size_t>(c.count), ko::tensor());
  // First pass: views over a null base to learn the extents.
  std::vector<std::int64_t> need(4, 0);
  for (int i = 0; i < c.count; ++i) {
    const tensor_desc& d = c.t[i];
    if (d.null) continue;
    try {
      ko::tensor probe(nullptr, d.type, d.shape, d.nd, d.contiguous ? nullptr : d.strides, d.nd, d.offset);
      const std::int64_t e = extent_elements(probe);
      if (e < 0) {
        a.runnable = false;
        continue;
      }
      const auto b = static_cast<std::size_t>(d.buffer);
      need[b] = std::max<std::int64_t>(need[b], e * static_cast<std::int64_t>(ko::element_size(d.type)));
    } catch (const keel::error& e) {
      KEEL_FUZZ_REQUIRE(e.code() == keel::errc::invalid_parameter, "tensor constructor threw %s", e.what());
      return false;
    }
  }
  std::uint32_t x = fill_seed | 1;
  for (std::size_t b = 0; b < 4; ++b) {
    if (need[b] > max_elements * 8) {  // cannot happen by the caps above; never allocate more
      a.runnable = false;
      need[b] = 1;
    }
    const auto bytes = static_cast<std::size_t>(need[b]);
    a.buffers.emplace_back(new unsigned char[bytes]);
    a.sizes.push_back(bytes);
    for (std::size_t i = 0; i < bytes; ++i) {
      x ^= x << 13, x ^= x >> 17, x ^= x << 5;
      a.buffers.back()[i] = static_cast<unsigned char>(x >> 7);
    }
  }
  // Bool storage holds arbitrary bytes, as tensors from other frameworks
  // may: keel reads bool storage as bytes (any non-zero byte is true) on
  // every path, scalar and SIMD, which the sanitizer build checks.
  for (int i = 0; i < c.count; ++i) {
    const tensor_desc& d = c.t[i];
    if (d.null) continue;
    // A view too large to allocate gets a one-byte base: phase one may
    // accept it, but then the call is not run.
    a.views[static_cast<std::size_t>(i)] =
        ko::tensor(a.buffers[static_cast<std::size_t>(d.buffer)].get(), d.type, d.shape, d.nd,
                   d.contiguous ? nullptr : d.strides, d.nd, d.offset);
  }
  return true;
}

inline call decode_call(input& in) {
  call c;
  c.op = static_cast<int>(in.below(5));
  static const int counts[] = {3, 4, 2, 2, 4};  // inputs + out
  c.count = counts[c.op];
  for (int i = 0; i < c.count; ++i) {
    c.t[i] = decode_tensor(in);
    c.t[i].buffer = i;
  }
  // out: its own buffer, exactly an input (in place), or another view of an
  // input's buffer (overlap).
  const unsigned alias = in.below(8);
  tensor_desc& out = c.t[c.count - 1];
  if (alias == 1) {
    const int src = static_cast<int>(in.below(static_cast<unsigned>(c.count - 1)));
    out = c.t[src];
  } else if (alias == 2) {
    out.buffer = static_cast<int>(in.below(static_cast<unsigned>(c.count - 1)));
  }
  c.s1 = decode_scalar(in);
  c.s2 = decode_scalar(in);
  c.oh = static_cast<std::int64_t>(in.below(9)) - 1;
  c.ow = static_cast<std::int64_t>(in.below(9)) - 1;
  c.workers = 1 + static_cast<int>(in.below(3));
  return c;
}

inline ko::executor prepare(const call& c, const std::vector<ko::tensor>& v) {
  ko::prepare_options o;
  o.workers = static_cast<std::size_t>(c.workers);
  const auto& k = kernels();
  switch (c.op) {
    case 0: return ko::prepare_add(k, v[0], v[1], c.s1, v[2], o);
    case 1: return ko::prepare_addcmul(k, v[0], v[1], v[2], c.s1, v[3], o);
    case 2: return ko::prepare_cast(k, v[0], v[1], o);
    case 3: return ko::prepare_adaptive_avg_pool2d(k, v[0], c.oh, c.ow, v[1], o);
    default: return ko::prepare_baddbmm(k, v[0], v[1], v[2], c.s1, c.s2, v[3], o);
  }
}

// Phase two with a workspace of exactly the size asked for, spreading the
// chunks over the executor's workers (one thread, worker indices rotated).
inline void run_exactly(ko::executor& ex) {
  const std::size_t ws = ex.workspace_size();
  std::unique_ptr<unsigned char[]> workspace(ws ? new unsigned char[ws] : nullptr);
  const std::size_t workers = ex.workers();
  ex.run(workspace.get(), ws, [&](std::size_t count, auto&& body) {
    for (std::size_t i = 0; i < count; ++i) body(i, i % workers);
  });
}

}  // namespace keel_fuzz
