// SPDX-License-Identifier: Apache-2.0
// The keel benchmark harness: each benchmark file declares which keel
// benchmark compares with which baseline; main() prints every pair as a ratio
// after the run, so one command gives every figure beside its baseline.
// Baselines that depend on the environment say so in their file; the OpenBLAS
// sgemm baseline (ops_bench.cpp) needs OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
// unset: `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE keel_benchmarks ...`.
//
// A target is words, and the words are also the rule a row is checked
// against (keel_ratios.json's "met"): a target that starts with ">= X" or
// "> X" holds the ratio to X; "at 16M" (or 64K, 4K: K = 1024) holds only the
// row whose first argument is that size, the other sizes are informational.
// Any other target ("~1.0x", "(report)", "informational") is informational.
// compare_overhead() holds the added time instead of the ratio.
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
  // The target's rule, parsed from the words (see above) or set by compare_overhead.
  double min_ratio = 0;           // 0: no ratio rule
  bool strictly_above = false;    // "> X" rather than ">= X"
  std::string held_at;            // "/16777216": the rule holds for that first argument only
  double max_added_ns = -1;       // < 0: no overhead rule
  double max_added_fraction = 0;  // of the baseline's time, when that allows more than max_added_ns
  int calls = 1;                  // API calls one iteration makes: max_added_ns holds per call
};

/** All registered comparisons, in registration order. */
std::vector<comparison>& comparisons();

/** Registers a pair from a static initialiser; returns true. Aborts on a target it cannot read. */
bool compare(std::string keel_prefix, std::string baseline_prefix, std::string target,
             measure by = measure::time);

/**
 * Registers a pair held by what keel adds to the baseline's time: met when
 * keel ns - baseline ns per iteration <= max(calls * max_added_ns,
 * max_added_fraction * baseline ns), where an iteration makes @p calls API
 * calls (a capture of 100 launches: begin, 100 launches, end, the model's
 * destruction). Both sides are per call then: at most max_added_ns per
 * call, or the fraction of the raw calls' time where that is larger.
 * Returns true; aborts when @p calls is below 1.
 */
bool compare_overhead(std::string keel_prefix, std::string baseline_prefix, double max_added_ns,
                      double max_added_fraction, int calls = 1);

}  // namespace keel_bench

#define KEEL_BENCH_CONCAT_IMPL(a, b) a##b
#define KEEL_BENCH_CONCAT(a, b) KEEL_BENCH_CONCAT_IMPL(a, b)
/** KEEL_BENCH_COMPARE("BM_x", "BM_x_baseline", "target text"[, keel_bench::measure::bandwidth]); */
#define KEEL_BENCH_COMPARE(...) \
  [[maybe_unused]] static const bool KEEL_BENCH_CONCAT(keel_bench_pair_, __COUNTER__) = ::keel_bench::compare(__VA_ARGS__)
/** KEEL_BENCH_OVERHEAD("BM_x", "BM_x_raw", 50.0, 0.10[, calls per iteration]); */
#define KEEL_BENCH_OVERHEAD(...)                                                  \
  [[maybe_unused]] static const bool KEEL_BENCH_CONCAT(keel_bench_pair_, __COUNTER__) = \
      ::keel_bench::compare_overhead(__VA_ARGS__)
