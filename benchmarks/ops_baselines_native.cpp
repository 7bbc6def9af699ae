// SPDX-License-Identifier: Apache-2.0
// The element-wise baselines and the STREAM triad again, built for this CPU
// (-O3 -march=native, see benchmarks/CMakeLists.txt) into
// keel_bench::baseline::native: one source, two builds, so the two sets
// cannot drift apart.
#define KEEL_BENCH_NATIVE_BASELINES 1
#include "ops_baselines.cpp"  // NOLINT(bugprone-suspicious-include)
