// SPDX-License-Identifier: Apache-2.0
// The keel benchmark harness: each benchmark file declares which keel
// benchmark compares with which baseline; main() prints every pair as a ratio
// after the run, so one command gives every figure beside its baseline.
// Baselines that depend on the environment say so in their file; the OpenBLAS
// sgemm baseline (ops_bench.cpp) needs OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
// unset: `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE keel_benchmarks ...`.
#pragma once

#include <string>
#include <vector>

namespace keel_bench {

/** How a pair is read: by time per unit (lower is better) or by bytes per second. */
enum class measure { time, bandwidth };

struct comparison {
  std::string keel_prefix;      // e.g. "BM_add_f32"
  std::string baseline_prefix;  // e.g. "BM_triad_baseline"
  std::string target;           // the target, in words, e.g. ">= 0.9 at 16M"
  measure by = measure::time;
};

/** All registered comparisons, in registration order. */
std::vector<comparison>& comparisons();

/** Registers a pair from a static initialiser; returns true. */
bool compare(std::string keel_prefix, std::string baseline_prefix, std::string target,
             measure by = measure::time);

}  // namespace keel_bench

#define KEEL_BENCH_CONCAT_IMPL(a, b) a##b
#define KEEL_BENCH_CONCAT(a, b) KEEL_BENCH_CONCAT_IMPL(a, b)
/** KEEL_BENCH_COMPARE("BM_x", "BM_x_baseline", "target text"[, keel_bench::measure::bandwidth]); */
#define KEEL_BENCH_COMPARE(...) \
  [[maybe_unused]] static const bool KEEL_BENCH_CONCAT(keel_bench_pair_, __COUNTER__) = ::keel_bench::compare(__VA_ARGS__)
