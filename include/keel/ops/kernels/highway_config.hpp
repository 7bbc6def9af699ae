// SPDX-License-Identifier: Apache-2.0
// Highway configuration keel needs before any Highway header is read. Every
// keel header that includes Highway includes this one first; a translation
// unit that includes Highway itself must include a keel kernel header (or
// this one) before it.
//
// Why: Highway 1.0.3 (Debian bookworm's libhwy-dev) cannot be compiled when
// the compiler's baseline already is its AVX3_DL target (-march=native on
// Zen 4/5 or Ice Lake and later, -march=znver4, -march=sapphirerapids, ...).
// detect_targets.h makes AVX3_DL attainable only when HWY_WANT_AVX3_DL is
// defined or `HWY_BASELINE & HWY_AVX3_DL` is set, but HWY_BASELINE is not a
// macro Highway defines (it meant HWY_BASELINE_TARGETS), so the test reads 0;
// the best baseline target then is not among the compiled ones and
// detect_targets.h stops with "Logic error: best baseline should be included
// in dynamic targets" (later Highway releases test HWY_BASELINE_TARGETS).
// Opting in to AVX3_DL when the flags already require every feature of it
// is exactly what that test meant to do: with that baseline Highway compiles
// the one AVX3_DL target and nothing changes for any other flags.
#pragma once

#if !defined(HWY_WANT_AVX3_DL) && !defined(HIGHWAY_HWY_DETECT_TARGETS_H_) && defined(__AVX512F__) &&       \
    defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && defined(__AVXVNNI__) &&       \
    defined(__VAES__) && defined(__VPCLMULQDQ__) && defined(__AVX512VBMI__) && defined(__AVX512VBMI2__) && \
    defined(__AVX512VPOPCNTDQ__) && defined(__AVX512BITALG__)
#define HWY_WANT_AVX3_DL 1
#endif
