// SPDX-License-Identifier: Apache-2.0
// The randomized differential test of the host runtime: seeded call
// sequences from several threads, compared with the reference model of
// runtime_model.hpp; a mismatch prints the seed and a shrunk sequence.
//
//   keel_differential                      # CI: seeds 1..300
//   keel_differential --seeds 20000        # a longer run
//   keel_differential --minutes 10         # as many seeds as fit
//   keel_differential --seed 1234 --verbose   # replay one seed, print its calls
//   keel_differential --stats              # how often each call had each outcome
//   keel_differential --self-test          # planted model defects must be found
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "runtime_model.hpp"

namespace kr = keel_reliability;

int main(int argc, char** argv) {
  std::uint64_t first = 1, seeds = 150;
  double minutes = 0;
  int threads = 3;
  std::size_t length = 80;
  bool verbose = false, stats = false, self_test = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--seeds") seeds = std::strtoull(next(), nullptr, 10);
    else if (arg == "--first") first = std::strtoull(next(), nullptr, 10);
    else if (arg == "--seed") { first = std::strtoull(next(), nullptr, 10); seeds = 1; }
    else if (arg == "--minutes") { minutes = std::strtod(next(), nullptr); seeds = ~std::uint64_t{0}; }
    else if (arg == "--threads") threads = std::atoi(next());
    else if (arg == "--length") length = std::strtoull(next(), nullptr, 10);
    else if (arg == "--verbose") verbose = true;
    else if (arg == "--stats") stats = true;
    else if (arg == "--self-test") self_test = true;
    else {
      std::fprintf(stderr,
                   "usage: %s [--seeds N | --minutes M | --seed S] [--first S] [--threads T] [--length L] "
                   "[--verbose]\n",
                   argv[0]);
      return 2;
    }
  }
  if (threads < 1 || threads > 8) threads = 3;
  if (self_test) {
    // Each planted defect in the model must be found, and shrunk, within
    // a few hundred seeds: the comparison can fail.
    for (int mutation = 1; mutation <= kr::reference_mutations; ++mutation) {
      kr::reference_mutation() = mutation;
      bool found = false;
      for (std::uint64_t seed = first; seed < first + 400 && !found; ++seed) {
        kr::generator gen(seed, threads);
        const std::vector<kr::op> ops = gen.make(length);
        if (kr::check(ops, threads).empty()) continue;
        const std::vector<kr::op> small = kr::shrink(ops, threads);
        std::printf("planted defect %d: found at seed %llu, shrunk from %zu to %zu calls:\n", mutation,
                    static_cast<unsigned long long>(seed), ops.size(), small.size());
        for (std::size_t i = 0; i < small.size(); ++i) std::printf("  %3zu %s\n", i, kr::describe(small[i]).c_str());
        std::printf("%s", kr::check(small, threads).c_str());
        found = !kr::check(small, threads).empty();
      }
      if (!found) {
        std::printf("planted defect %d was NOT found\n", mutation);
        return 1;
      }
    }
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration<double, std::ratio<60>>(minutes);
  std::uint64_t ran = 0, calls = 0;
  for (std::uint64_t seed = first; seed - first < seeds; ++seed) {
    if (minutes > 0 && std::chrono::steady_clock::now() >= deadline) break;
    kr::generator gen(seed, threads);
    const std::vector<kr::op> ops = gen.make(length);
    if (verbose)
      for (std::size_t i = 0; i < ops.size(); ++i) std::printf("  %3zu %s\n", i, kr::describe(ops[i]).c_str());
    const std::string diff = kr::check(ops, threads);
    ++ran;
    calls += ops.size();
    if (diff.empty()) continue;
    std::printf("MISMATCH at seed %llu (%d threads, %zu calls):\n%s", static_cast<unsigned long long>(seed), threads,
                ops.size(), diff.c_str());
    const std::vector<kr::op> small = kr::shrink(ops, threads);
    std::printf("shrunk to %zu calls (replay: --seed %llu --threads %d --length %zu):\n", small.size(),
                static_cast<unsigned long long>(seed), threads, length);
    for (std::size_t i = 0; i < small.size(); ++i) std::printf("  %3zu %s\n", i, kr::describe(small[i]).c_str());
    std::printf("%s", kr::check(small, threads).c_str());
    return 1;
  }
  if (stats)
    for (const auto& [key, n] : kr::outcome_stats())
      std::printf("  %-14s %-32s %llu\n", kr::name_of(static_cast<kr::op_kind>(key.first)),
                  kr::errc_name(key.second).c_str(), static_cast<unsigned long long>(n));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("keel_differential: %llu seeds from %llu, %llu calls, %d threads, no mismatch (%.1f s)\n",
              static_cast<unsigned long long>(ran), static_cast<unsigned long long>(first),
              static_cast<unsigned long long>(calls), threads, secs);
  return 0;
}
