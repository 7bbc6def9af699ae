// SPDX-License-Identifier: Apache-2.0
// keel_benchmarks' main: runs Google Benchmark as usual (all its flags work,
// JSON output included), then prints each keel figure beside its baseline.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "harness.hpp"

namespace keel_bench {

std::vector<comparison>& comparisons() {
  static std::vector<comparison> all;
  return all;
}

bool compare(std::string keel_prefix, std::string baseline_prefix, std::string target, measure by) {
  comparisons().push_back({std::move(keel_prefix), std::move(baseline_prefix), std::move(target), by});
  return true;
}

namespace {

struct figure {
  double ns_per_unit = 0;        // real time per iteration, in ns
  double bytes_per_second = 0;   // 0 when the benchmark set no byte count
};

// Forwards everything to the normal console reporter and keeps each run's
// figures for the ratio table. With --benchmark_repetitions the figure is
// the median of the repetitions (it arrives after them and replaces them),
// not whichever repetition ran last, which on a loaded machine decided the
// ratio by the luck of one run.
class recording_reporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (!median && (run.run_type != Run::RT_Iteration || run.aggregate_name.size() != 0)) continue;
      figure f;
      f.ns_per_unit = run.GetAdjustedRealTime() * to_ns(run.time_unit);
      auto bytes = run.counters.find("bytes_per_second");
      if (bytes != run.counters.end()) f.bytes_per_second = bytes->second.value;
      results_[run.run_name.str()] = f;  // without the aggregate's suffix
    }
    ConsoleReporter::ReportRuns(runs);
  }

  const std::map<std::string, figure>& results() const { return results_; }

 private:
  static double to_ns(benchmark::TimeUnit unit) {
    switch (unit) {
      case benchmark::kNanosecond: return 1;
      case benchmark::kMicrosecond: return 1e3;
      case benchmark::kMillisecond: return 1e6;
      case benchmark::kSecond: return 1e9;
    }
    return 1;
  }
  std::map<std::string, figure> results_;
};

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// A keel run "BM_add_f32/65536" pairs with "BM_triad_baseline/65536" when that
// ran, else with the baseline prefix itself when it names one run.
void print_ratios(const std::map<std::string, figure>& results) {
  std::printf("\n%-52s %12s   %-40s %12s %9s   %s\n", "keel benchmark", "keel", "baseline", "baseline",
              "ratio", "target");
  for (const comparison& c : comparisons()) {
    for (const auto& [name, mine] : results) {
      if (!starts_with(name, c.keel_prefix)) continue;
      const std::string suffix = name.substr(c.keel_prefix.size());
      if (!suffix.empty() && suffix[0] != '/') continue;  // BM_add_f32 must not match BM_add_f32_scalar
      auto base = results.find(c.baseline_prefix + suffix);
      // A wall-clock run ("/65536/real_time") also pairs with a CPU-time
      // baseline of the same arguments ("/65536").
      const std::string wall = "/real_time";
      if (base == results.end() && suffix.size() > wall.size() &&
          suffix.compare(suffix.size() - wall.size(), wall.size(), wall) == 0)
        base = results.find(c.baseline_prefix + suffix.substr(0, suffix.size() - wall.size()));
      if (base == results.end()) base = results.find(c.baseline_prefix);
      if (base == results.end()) continue;
      const figure& theirs = base->second;
      if (c.by == measure::bandwidth && mine.bytes_per_second > 0 && theirs.bytes_per_second > 0) {
        std::printf("%-52s %9.2f GB/s %-40s %9.2f GB/s %8.2fx   %s\n", name.c_str(), mine.bytes_per_second / 1e9,
                    base->first.c_str(), theirs.bytes_per_second / 1e9,
                    mine.bytes_per_second / theirs.bytes_per_second, c.target.c_str());
      } else {
        // Ratio is speed-up: baseline time over keel time, above 1 means keel is faster.
        std::printf("%-52s %9.2f ns %-40s %9.2f ns %8.2fx   %s\n", name.c_str(), mine.ns_per_unit,
                    base->first.c_str(), theirs.ns_per_unit, theirs.ns_per_unit / mine.ns_per_unit,
                    c.target.c_str());
      }
    }
  }
  std::printf("(ratio: time = baseline ns / keel ns; bandwidth = keel GB/s / baseline GB/s; above 1 favours keel)\n");
}

}  // namespace
}  // namespace keel_bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  keel_bench::recording_reporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  keel_bench::print_ratios(reporter.results());
  benchmark::Shutdown();
  return 0;
}
