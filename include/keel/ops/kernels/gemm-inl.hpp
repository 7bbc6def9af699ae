// SPDX-License-Identifier: Apache-2.0
// Per-target batched float32 GEMM for baddbmm: blocked, packed, with a
// register-tiled FMA micro-kernel. Re-included once per Highway target.

#if defined(KEEL_OPS_KERNELS_GEMM_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef KEEL_OPS_KERNELS_GEMM_INL_HPP_
#undef KEEL_OPS_KERNELS_GEMM_INL_HPP_
#else
#define KEEL_OPS_KERNELS_GEMM_INL_HPP_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "keel/ops/kernels/highway_config.hpp"  // first: see there
#include <hwy/highway.h>

#include "keel/ops/kernels/kernel_table.hpp"
#include "keel/ops/kernels/rounding-inl.hpp"

HWY_BEFORE_NAMESPACE();
#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE
namespace ops {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Blocking (Goto's scheme). A micro-tile is 6 rows by two vectors: 12
// accumulators plus 2 B vectors and a broadcast fit the 16 registers of
// AVX2 and leave room on AVX-512; 12 independent FMA chains cover 2 FMA
// ports times 4 cycles of latency with margin. A KC x NR sliver of packed B
// (32 KiB at AVX-512) stays in L1; the MC x KC block of packed A (96 KiB)
// and the KC x NC panel of packed B (256 KiB) stay in the 1 MiB L2.
constexpr std::size_t gemm_mr = 6;
constexpr std::size_t gemm_kc = 256;
constexpr std::size_t gemm_mc = 96;  // multiple of gemm_mr
constexpr std::size_t gemm_nc = 256;  // multiple of every target's NR (2 vectors, at most 2048 bits each)

inline std::size_t gemm_tile_count(const gemm_args& p) {
  const auto n_blocks = static_cast<std::size_t>((p.n + static_cast<std::int64_t>(gemm_nc) - 1) /
                                                 static_cast<std::int64_t>(gemm_nc));
  return static_cast<std::size_t>(p.batch) * n_blocks;
}

inline std::size_t gemm_workspace_floats() { return gemm_mc * gemm_kc + gemm_kc * gemm_nc; }

// acc (gemm_mr x nr, contiguous) = A panel (gemm_mr x kc) times packed B
// sliver (kc x nr). A is either packed (element (r, k) at pa[k * gemm_mr + r])
// or read in place from row-major rows lda apart (element (r, k) at
// pa[r * lda + k]): six sequential streams cache as well as a packed panel,
// and skipping the copy saves a pass over A per column block.
template <bool PackedA, class D>
HWY_INLINE void gemm_micro(D d, std::size_t kc, const float* HWY_RESTRICT pa, std::ptrdiff_t lda,
                           const float* HWY_RESTRICT pb, float* HWY_RESTRICT acc) {
  const std::size_t lanes = hn::Lanes(d);
  const std::ptrdiff_t rs = PackedA ? 1 : lda;  // row step
  const std::ptrdiff_t ks = PackedA ? static_cast<std::ptrdiff_t>(gemm_mr) : 1;  // k step
  auto c00 = hn::Zero(d), c01 = hn::Zero(d), c10 = hn::Zero(d), c11 = hn::Zero(d);
  auto c20 = hn::Zero(d), c21 = hn::Zero(d), c30 = hn::Zero(d), c31 = hn::Zero(d);
  auto c40 = hn::Zero(d), c41 = hn::Zero(d), c50 = hn::Zero(d), c51 = hn::Zero(d);
  for (std::size_t k = 0; k < kc; ++k) {
    const auto b0 = hn::LoadU(d, pb);
    const auto b1 = hn::LoadU(d, pb + lanes);
    auto a = hn::Set(d, pa[0]);
    c00 = mul_add(a, b0, c00);
    c01 = mul_add(a, b1, c01);
    a = hn::Set(d, pa[rs]);
    c10 = mul_add(a, b0, c10);
    c11 = mul_add(a, b1, c11);
    a = hn::Set(d, pa[2 * rs]);
    c20 = mul_add(a, b0, c20);
    c21 = mul_add(a, b1, c21);
    a = hn::Set(d, pa[3 * rs]);
    c30 = mul_add(a, b0, c30);
    c31 = mul_add(a, b1, c31);
    a = hn::Set(d, pa[4 * rs]);
    c40 = mul_add(a, b0, c40);
    c41 = mul_add(a, b1, c41);
    a = hn::Set(d, pa[5 * rs]);
    c50 = mul_add(a, b0, c50);
    c51 = mul_add(a, b1, c51);
    pa += ks;
    pb += 2 * lanes;
  }
  const std::size_t nr = 2 * lanes;
  hn::StoreU(c00, d, acc + 0 * nr);
  hn::StoreU(c01, d, acc + 0 * nr + lanes);
  hn::StoreU(c10, d, acc + 1 * nr);
  hn::StoreU(c11, d, acc + 1 * nr + lanes);
  hn::StoreU(c20, d, acc + 2 * nr);
  hn::StoreU(c21, d, acc + 2 * nr + lanes);
  hn::StoreU(c30, d, acc + 3 * nr);
  hn::StoreU(c31, d, acc + 3 * nr + lanes);
  hn::StoreU(c40, d, acc + 4 * nr);
  hn::StoreU(c41, d, acc + 4 * nr + lanes);
  hn::StoreU(c50, d, acc + 5 * nr);
  hn::StoreU(c51, d, acc + 5 * nr + lanes);
}

// out = alpha * acc + base, base = (first ? beta * self : out), for the
// valid part of a micro-tile: beta * self rounded, then alpha * acc + base
// rounded once (fused) on targets with FMA, twice elsewhere (mul_add), on the
// vector path and the scalar path alike and whatever the includer's flags.
// beta == 0 never reads self (base 0), so NaN in it stays out. Full tiles
// with unit column stride (the common case) use vectors; edge tiles and odd
// strides take one lane at a time. Either way the epilogue touches M*N
// elements once per KC block.
template <class D>
HWY_INLINE void gemm_store(D d, const gemm_args& p, std::int64_t b, std::size_t i0, std::size_t j0, std::size_t rows,
                           std::size_t cols, std::size_t nr, const float* acc, bool first) {
  float* out = p.out + b * p.out_stride[0];
  const float* self = p.self != nullptr ? p.self + b * p.self_stride[0] : nullptr;
  const bool self_vector = self == nullptr || p.self_stride[2] == 1 || p.self_stride[2] == 0;
  if (rows == gemm_mr && cols == nr && p.out_stride[2] == 1 && (!first || self_vector)) {
    const std::size_t lanes = hn::Lanes(d);
    const auto valpha = hn::Set(d, p.alpha);
    const auto vbeta = hn::Set(d, p.beta);
    for (std::size_t r = 0; r < gemm_mr; ++r) {
      const auto i = static_cast<std::int64_t>(i0 + r);
      float* o = out + i * p.out_stride[1] + static_cast<std::int64_t>(j0);
      for (std::size_t v = 0; v < cols; v += lanes) {
        const auto a = hn::LoadU(d, acc + r * nr + v);
        hn::Vec<D> base;
        if (!first) {
          base = hn::LoadU(d, o + v);
        } else if (self == nullptr) {
          base = hn::Zero(d);
        } else {
          const float* s = self + i * p.self_stride[1] + static_cast<std::int64_t>(j0 + v) * p.self_stride[2];
          base = hn::Mul(vbeta, p.self_stride[2] == 0 ? hn::Set(d, s[0]) : hn::LoadU(d, s));
        }
        hn::StoreU(mul_add(valpha, a, base), d, o + v);
      }
    }
    return;
  }
  // One lane of this target's vectors: the same instructions as above.
  const hn::CappedTag<float, 1> d1;
  const auto valpha = hn::Set(d1, p.alpha);
  const auto vbeta = hn::Set(d1, p.beta);
  for (std::size_t r = 0; r < rows; ++r) {
    const auto i = static_cast<std::int64_t>(i0 + r);
    for (std::size_t c = 0; c < cols; ++c) {
      const auto j = static_cast<std::int64_t>(j0 + c);
      float& o = out[i * p.out_stride[1] + j * p.out_stride[2]];
      auto base = hn::Zero(d1);
      if (!first) {
        base = hn::Set(d1, o);
      } else if (self != nullptr) {
        base = hn::Mul(vbeta, hn::Set(d1, self[i * p.self_stride[1] + j * p.self_stride[2]]));
      }
      o = hn::GetLane(mul_add(valpha, hn::Set(d1, acc[r * nr + c]), base));
    }
  }
}

// Tiles are (batch, NC column block): each packs its B panel once per KC
// block and sweeps all rows, so workers never share a written element.
inline void gemm_f32(const gemm_args& p, std::size_t tile_begin, std::size_t tile_end, float* scratch) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  const std::size_t nr = 2 * lanes;
  const bool a_direct = p.a_stride[2] == 1;
  const auto m = static_cast<std::size_t>(p.m), n = static_cast<std::size_t>(p.n), k = static_cast<std::size_t>(p.k);
  const std::size_t n_blocks = (n + gemm_nc - 1) / gemm_nc;
  float* pack_a = scratch;
  float* pack_b = scratch + gemm_mc * gemm_kc;
  HWY_ALIGN float acc[gemm_mr * 2 * (HWY_MAX_BYTES / sizeof(float))];
  for (std::size_t t = tile_begin; t < tile_end; ++t) {
    const auto b = static_cast<std::int64_t>(t / n_blocks);
    const std::size_t jc = (t % n_blocks) * gemm_nc;
    const std::size_t nc = std::min(gemm_nc, n - jc);
    const float* a_b = p.a + b * p.a_stride[0];
    const float* b_b = p.bm + b * p.b_stride[0];
    if (k == 0) {  // empty product: out = beta * self
      std::fill(acc, acc + gemm_mr * nr, 0.0f);
      for (std::size_t i = 0; i < m; i += gemm_mr) {
        for (std::size_t j = jc; j < jc + nc; j += nr) {
          gemm_store(d, p, b, i, j, std::min(gemm_mr, m - i), std::min(nr, jc + nc - j), nr, acc, true);
        }
      }
      continue;
    }
    for (std::size_t pc = 0; pc < k; pc += gemm_kc) {
      const std::size_t kc = std::min(gemm_kc, k - pc);
      // Pack B[pc:pc+kc, jc:jc+nc] as NR-wide slivers, zero-padded.
      for (std::size_t js = 0; js < nc; js += nr) {
        float* dst = pack_b + js * kc;
        const std::size_t cols = std::min(nr, nc - js);
        for (std::size_t kk = 0; kk < kc; ++kk) {
          const float* src = b_b + static_cast<std::int64_t>(pc + kk) * p.b_stride[1] +
                             static_cast<std::int64_t>(jc + js) * p.b_stride[2];
          std::size_t c = 0;
          if (p.b_stride[2] == 1 && cols == nr) {
            for (; c < nr; c += lanes) hn::StoreU(hn::LoadU(d, src + c), d, dst + kk * nr + c);
          } else if (p.b_stride[2] == 1) {
            for (; c < cols; ++c) dst[kk * nr + c] = src[c];
          } else {
            for (; c < cols; ++c) dst[kk * nr + c] = src[static_cast<std::int64_t>(c) * p.b_stride[2]];
          }
          for (; c < nr; ++c) dst[kk * nr + c] = 0.0f;
        }
      }
      for (std::size_t ic = 0; ic < m; ic += gemm_mc) {
        const std::size_t mc = std::min(gemm_mc, m - ic);
        // Pack A[ic:ic+mc, pc:pc+kc] as MR-tall panels, zero-padded, unless
        // its rows are contiguous (then full panels are read in place and
        // only a short last panel is packed).
        for (std::size_t is = 0; is < mc; is += gemm_mr) {
          const std::size_t rows = std::min(gemm_mr, mc - is);
          if (a_direct && rows == gemm_mr) continue;
          float* dst = pack_a + is * kc;
          for (std::size_t kk = 0; kk < kc; ++kk) {
            std::size_t r = 0;
            for (; r < rows; ++r) {
              dst[kk * gemm_mr + r] = a_b[static_cast<std::int64_t>(ic + is + r) * p.a_stride[1] +
                                          static_cast<std::int64_t>(pc + kk) * p.a_stride[2]];
            }
            for (; r < gemm_mr; ++r) dst[kk * gemm_mr + r] = 0.0f;
          }
        }
        for (std::size_t js = 0; js < nc; js += nr) {
          for (std::size_t is = 0; is < mc; is += gemm_mr) {
            const std::size_t rows = std::min(gemm_mr, mc - is);
            if (a_direct && rows == gemm_mr) {
              const float* a_panel = a_b + static_cast<std::int64_t>(ic + is) * p.a_stride[1] + static_cast<std::int64_t>(pc);
              gemm_micro<false>(d, kc, a_panel, static_cast<std::ptrdiff_t>(p.a_stride[1]), pack_b + js * kc, acc);
            } else {
              gemm_micro<true>(d, kc, pack_a + is * kc, 0, pack_b + js * kc, acc);
            }
            gemm_store(d, p, b, ic + is, jc + js, rows, std::min(nr, nc - js), nr, acc, pc == 0);
          }
        }
      }
    }
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace ops
KEEL_END_NAMESPACE  // namespace keel
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
