// SPDX-License-Identifier: Apache-2.0
// keel_benchmarks' main: runs Google Benchmark as a plain benchmark binary
// does (every --benchmark_* flag works; --benchmark_format=console|json|csv
// decides what stdout carries), then pairs each keel figure with its
// baseline from the same run. The ratio table goes to stderr (or to the
// file --keel_ratios_out names) and, as JSON, to the file --keel_ratios_json
// or else the environment's KEEL_RATIOS_JSON names, so a script can gate on
// it; with neither, no file is written (a run leaves nothing where it was
// started). --keel_require_targets makes a missed target the exit status.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness.hpp"

namespace keel_bench {

std::vector<comparison>& comparisons() {
  static std::vector<comparison> all;
  return all;
}

namespace {

// "16M" -> "/16777216", "64K" -> "/65536", "100" -> "/100".
std::string size_suffix(const std::string& words) {
  char* end = nullptr;
  const unsigned long long n = std::strtoull(words.c_str(), &end, 10);
  if (end == words.c_str()) return {};
  unsigned long long scale = 1;
  if (*end == 'K') scale = 1024;
  if (*end == 'M') scale = 1024 * 1024;
  return "/" + std::to_string(n * scale);
}

// Reads the rule from the target's words (see harness.hpp). A target that
// starts with '>' but does not say a number is a typo that would silently
// turn a held target informational: refuse it at start-up.
void parse_target(comparison& c) {
  const std::string& t = c.target;
  if (t.empty() || t[0] != '>') return;
  std::size_t pos = 1;
  c.strictly_above = !(pos < t.size() && t[pos] == '=');
  if (!c.strictly_above) ++pos;
  char* end = nullptr;
  c.min_ratio = std::strtod(t.c_str() + pos, &end);
  if (end == t.c_str() + pos || !(c.min_ratio > 0)) {
    std::fprintf(stderr, "keel_benchmarks: target \"%s\" of %s starts with '>' but names no ratio\n", t.c_str(),
                 c.keel_prefix.c_str());
    std::abort();
  }
  const std::size_t at = t.find(" at ");
  if (at != std::string::npos) c.held_at = size_suffix(t.substr(at + 4));
}

}  // namespace

bool compare(std::string keel_prefix, std::string baseline_prefix, std::string target, measure by) {
  comparison c;
  c.keel_prefix = std::move(keel_prefix);
  c.baseline_prefix = std::move(baseline_prefix);
  c.target = std::move(target);
  c.by = by;
  parse_target(c);
  comparisons().push_back(std::move(c));
  return true;
}

bool compare_overhead(std::string keel_prefix, std::string baseline_prefix, double max_added_ns,
                      double max_added_fraction, int calls) {
  // A pair registered with no calls would hold nothing (or divide by zero
  // in the per-call column): a typo in a benchmark file, refused at start-up.
  if (calls < 1) {
    std::fprintf(stderr, "keel_benchmarks: compare_overhead for %s names %d calls per iteration; it needs at least 1\n",
                 keel_prefix.c_str(), calls);
    std::abort();
  }
  char words[128];
  if (calls == 1)
    std::snprintf(words, sizeof words, "adds <= %g ns or %g%% of raw", max_added_ns, max_added_fraction * 100);
  else
    std::snprintf(words, sizeof words, "adds <= %g ns per call (%d calls) or %g%% of raw", max_added_ns, calls,
                  max_added_fraction * 100);
  comparison c;
  c.keel_prefix = std::move(keel_prefix);
  c.baseline_prefix = std::move(baseline_prefix);
  c.target = words;
  c.max_added_ns = max_added_ns;
  c.max_added_fraction = max_added_fraction;
  c.calls = calls;
  comparisons().push_back(std::move(c));
  return true;
}

namespace {

struct figure {
  double ns_per_unit = 0;        // real time per iteration, in ns
  double bytes_per_second = 0;   // 0 when the benchmark set no byte count
};

bool truthy(const char* value) {
  for (const char* no : {"", "0", "false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})
    if (std::strcmp(value, no) == 0) return false;
  return true;
}

// The reporter Google Benchmark itself would have made for the command line
// (it makes none once a display reporter is passed in), so stdout is what a
// plain benchmark binary prints: --benchmark_format, --benchmark_color
// (auto: only on a terminal) and --benchmark_counters_tabular.
std::unique_ptr<benchmark::BenchmarkReporter> reporter_for(int argc, char** argv) {
  std::string format = "console", color = "auto";
  bool tabular = false;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    auto value = [a](const char* flag) -> const char* {
      const std::size_t n = std::strlen(flag);
      return std::strncmp(a, flag, n) == 0 && a[n] == '=' ? a + n + 1 : nullptr;
    };
    if (const char* v = value("--benchmark_format")) format = v;
    if (const char* v = value("--benchmark_color")) color = v;
    if (const char* v = value("--benchmark_counters_tabular")) tabular = truthy(v);
  }
  if (format == "json") return std::make_unique<benchmark::JSONReporter>();
  if (format == "csv") {
    // Deprecated upstream, still what --benchmark_format=csv gives a plain binary.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    return std::make_unique<benchmark::CSVReporter>();
#pragma GCC diagnostic pop
  }
  const bool colored = color == "auto" ? isatty(STDOUT_FILENO) != 0 : truthy(color.c_str());
  int options = benchmark::ConsoleReporter::OO_None;
  if (colored) options |= benchmark::ConsoleReporter::OO_Color;
  if (tabular) options |= benchmark::ConsoleReporter::OO_Tabular;
  return std::make_unique<benchmark::ConsoleReporter>(static_cast<benchmark::ConsoleReporter::OutputOptions>(options));
}

// Forwards everything to the reporter the command line asked for and keeps
// each run's figures for the ratio table. With --benchmark_repetitions the
// figure is the median of the repetitions (it arrives after them and
// replaces them), not whichever repetition ran last, which on a loaded
// machine decided the ratio by the luck of one run.
class recording_reporter : public benchmark::BenchmarkReporter {
 public:
  explicit recording_reporter(std::unique_ptr<benchmark::BenchmarkReporter> shown) : shown_(std::move(shown)) {}

  bool ReportContext(const Context& context) override {
    shown_->SetOutputStream(&GetOutputStream());
    shown_->SetErrorStream(&GetErrorStream());
    return shown_->ReportContext(context);
  }

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
    shown_->ReportRuns(runs);
  }

  void Finalize() override { shown_->Finalize(); }

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
  std::unique_ptr<benchmark::BenchmarkReporter> shown_;
  std::map<std::string, figure> results_;
};

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// One line of the ratio table.
struct row {
  std::string keel, baseline, target;
  bool bandwidth = false;
  double keel_value = 0, baseline_value = 0;  // ns per iteration, or GB/s
  double ratio = 0;                           // above 1 favours keel
  std::optional<double> added_ns;             // keel ns - baseline ns, time rows only
  int calls = 1;                              // API calls per iteration (overhead rows)
  std::optional<bool> met;                    // empty: informational row
};

std::optional<bool> judge(const comparison& c, const std::string& suffix, const row& r) {
  if (c.max_added_ns >= 0) {
    if (!r.added_ns) return std::nullopt;
    return *r.added_ns <= std::max(c.calls * c.max_added_ns, c.max_added_fraction * r.baseline_value);
  }
  if (c.min_ratio <= 0) return std::nullopt;
  if (!c.held_at.empty()) {
    const bool same_size = starts_with(suffix, c.held_at) &&
                           (suffix.size() == c.held_at.size() || suffix[c.held_at.size()] == '/');
    if (!same_size) return std::nullopt;
  }
  return c.strictly_above ? r.ratio > c.min_ratio : r.ratio >= c.min_ratio;
}

// A keel run "BM_add_f32/65536" pairs with "BM_triad_baseline/65536" when that
// ran, else with the baseline prefix itself when it names one run.
std::vector<row> pair_up(const std::map<std::string, figure>& results) {
  std::vector<row> rows;
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
      row r;
      r.keel = name;
      r.baseline = base->first;
      r.target = c.target;
      r.bandwidth = c.by == measure::bandwidth && mine.bytes_per_second > 0 && theirs.bytes_per_second > 0;
      if (r.bandwidth) {
        r.keel_value = mine.bytes_per_second / 1e9;
        r.baseline_value = theirs.bytes_per_second / 1e9;
        r.ratio = mine.bytes_per_second / theirs.bytes_per_second;
      } else {
        // Ratio is speed-up: baseline time over keel time.
        r.keel_value = mine.ns_per_unit;
        r.baseline_value = theirs.ns_per_unit;
        r.ratio = theirs.ns_per_unit / mine.ns_per_unit;
        r.added_ns = mine.ns_per_unit - theirs.ns_per_unit;
      }
      r.calls = c.calls;
      r.met = judge(c, suffix, r);
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

const char* verdict(const row& r) { return !r.met ? "" : *r.met ? "met" : "MISSED"; }

void print_table(std::FILE* out, const std::vector<row>& rows) {
  std::fprintf(out, "\n%-52s %12s   %-40s %12s %9s %12s   %-6s %s\n", "keel benchmark", "keel", "baseline", "baseline",
               "ratio", "added", "", "target");
  for (const row& r : rows) {
    const char* unit = r.bandwidth ? "GB/s" : "ns";
    char added[32] = "";
    if (r.added_ns) std::snprintf(added, sizeof added, "%+.1f ns", *r.added_ns);
    char per_call[48] = "";
    if (r.added_ns && r.calls > 1) std::snprintf(per_call, sizeof per_call, " (%+.1f ns per call)", *r.added_ns / r.calls);
    std::fprintf(out, "%-52s %9.2f %-4s %-40s %9.2f %-4s %7.2fx %12s   %-6s %s%s\n", r.keel.c_str(), r.keel_value,
                 unit, r.baseline.c_str(), r.baseline_value, unit, r.ratio, added, verdict(r), r.target.c_str(),
                 per_call);
  }
  std::fprintf(out,
               "(ratio: time = baseline ns / keel ns; bandwidth = keel GB/s / baseline GB/s; above 1 favours keel;"
               " added = keel ns - baseline ns per iteration)\n");
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(ch)));
      out += esc;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char text[40];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

bool write_json(const std::string& path, const std::vector<row>& rows) {
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (!out) return false;
  bool all_met = true;
  for (const row& r : rows) all_met = all_met && r.met.value_or(true);
  std::fprintf(out, "{\n  \"all_targets_met\": %s,\n  \"ratios\": [", all_met ? "true" : "false");
  const char* sep = "\n";
  for (const row& r : rows) {
    const char* unit = r.bandwidth ? "GB/s" : "ns";
    std::fprintf(out,
                 "%s    {\"name\": %s, \"baseline\": %s, \"unit\": \"%s\", \"keel\": %s, \"baseline_figure\": %s, "
                 "\"ratio\": %s, \"added_ns\": %s, \"calls\": %d, \"target\": %s, \"met\": %s}",
                 sep, json_string(r.keel).c_str(), json_string(r.baseline).c_str(), unit,
                 json_number(r.keel_value).c_str(), json_number(r.baseline_value).c_str(), json_number(r.ratio).c_str(),
                 r.added_ns ? json_number(*r.added_ns).c_str() : "null", r.calls, json_string(r.target).c_str(),
                 !r.met ? "null" : *r.met ? "true" : "false");
    sep = ",\n";
  }
  std::fprintf(out, "\n  ]\n}\n");
  return std::fclose(out) == 0;
}

struct keel_flags {
  std::string ratios_out;                     // empty: stderr
  std::string ratios_json;                    // empty: none
  bool require_targets = false;
};

// Takes keel's own flags out of argv (after Google Benchmark took its own),
// so what is left over is really unrecognised.
keel_flags take_keel_flags(int& argc, char** argv) {
  keel_flags flags;
  if (const char* env = std::getenv("KEEL_RATIOS_JSON")) flags.ratios_json = env;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&a](const std::string& flag) -> std::optional<std::string> {
      if (a.compare(0, flag.size() + 1, flag + "=") == 0) return a.substr(flag.size() + 1);
      return std::nullopt;
    };
    if (auto v = value("--keel_ratios_out")) {
      flags.ratios_out = *v;
    } else if (auto v = value("--keel_ratios_json")) {
      flags.ratios_json = *v;
    } else if (a == "--keel_require_targets" || a == "--keel_require_targets=true") {
      flags.require_targets = true;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return flags;
}

void print_help() {
  benchmark::PrintDefaultHelp();
  std::fprintf(stdout,
               "keel's flags:\n"
               "          [--keel_ratios_out=<file>]   the ratio table (default: stderr)\n"
               "          [--keel_ratios_json=<file>]  the ratio table as JSON (default: $KEEL_RATIOS_JSON, else none)\n"
               "          [--keel_require_targets]     exit status 2 when a held target is missed\n");
}

}  // namespace
}  // namespace keel_bench

int main(int argc, char** argv) {
  keel_bench::recording_reporter reporter(keel_bench::reporter_for(argc, argv));
  benchmark::Initialize(&argc, argv, keel_bench::print_help);
  const keel_bench::keel_flags flags = keel_bench::take_keel_flags(argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  if (reporter.results().empty()) return 0;  // --benchmark_list_tests, or a filter that matched nothing
  const std::vector<keel_bench::row> rows = keel_bench::pair_up(reporter.results());
  std::FILE* table = flags.ratios_out.empty() ? stderr : std::fopen(flags.ratios_out.c_str(), "w");
  if (!table) {
    std::fprintf(stderr, "keel_benchmarks: cannot write the ratio table to %s\n", flags.ratios_out.c_str());
    return 1;
  }
  keel_bench::print_table(table, rows);
  if (table != stderr) std::fclose(table);
  if (!flags.ratios_json.empty() && !keel_bench::write_json(flags.ratios_json, rows)) {
    std::fprintf(stderr, "keel_benchmarks: cannot write %s\n", flags.ratios_json.c_str());
    return 1;
  }
  if (flags.require_targets) {
    for (const keel_bench::row& r : rows)
      if (r.met == false) return 2;
  }
  return 0;
}
