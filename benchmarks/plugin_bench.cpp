// SPDX-License-Identifier: Apache-2.0
// Plugin lifecycle and registry costs, each beside its baseline measured in
// the same run: leases against libc's dlopen + dlclose of a loaded library,
// registry reads against a bare shared_mutex, one thread against two.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>

#include "harness.hpp"
#include "keel/core/boost_mutex_policy.hpp"
#include "keel/core/checked_mutex.hpp"
#include "keel/core/mutex_policy.hpp"
#include "keel/plugin.hpp"

namespace {

const char* const library_path = KEEL_BENCH_PLAIN_LIBRARY;

// --- leases ---------------------------------------------------------------

// libc's own reference counting: dlopen + dlclose of a library that stays loaded.
void BM_dlopen_dlclose_baseline(benchmark::State& state) {
  keel::library_lease keep = keel::library_loader::global().acquire(library_path);
  for (auto _ : state) {
    void* handle = ::dlopen(library_path, RTLD_NOW | RTLD_LOCAL);
    benchmark::DoNotOptimize(handle);
    ::dlclose(handle);
  }
}
BENCHMARK(BM_dlopen_dlclose_baseline);

// A new user of a library that is already loaded: acquire by path, release.
void BM_lease_acquire_release(benchmark::State& state) {
  auto& loader = keel::library_loader::global();
  keel::library_lease keep = loader.acquire(library_path);
  for (auto _ : state) {
    keel::library_lease lease = loader.acquire(library_path);
    benchmark::DoNotOptimize(lease);
  }
}
BENCHMARK(BM_lease_acquire_release);

// Another holder of a lease one already has: copy, drop.
void BM_lease_share(benchmark::State& state) {
  keel::library_lease lease = keel::library_loader::global().acquire(library_path);
  for (auto _ : state) {
    keel::library_lease copy = lease;
    benchmark::DoNotOptimize(copy);
  }
}
BENCHMARK(BM_lease_share);

KEEL_BENCH_COMPARE("BM_lease_acquire_release", "BM_dlopen_dlclose_baseline", ">= 2x cheaper");
KEEL_BENCH_COMPARE("BM_lease_share", "BM_dlopen_dlclose_baseline", ">= 10x cheaper");

// --- registry ---------------------------------------------------------------

// About 200 ns of dependent arithmetic: the grain of a cheap pass.
std::uint64_t pass_body(std::uint64_t x) {
  for (int i = 0; i < 160; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    benchmark::DoNotOptimize(x);
  }
  return x;
}
using pass = std::uint64_t (*)(std::uint64_t);

template <class Policy>
struct registry_fixture {
  keel::registry<pass, Policy> reg;
  registry_fixture() {
    // A realistic handful of passes, so the lookup walks a real tree.
    for (const char* name : {"canonicalize", "eliminate_dead_code", "fold_constants", "fuse_elementwise",
                             "inline_calls", "lower_layout", "schedule"}) {
      reg.add(name, &pass_body);
    }
  }
};

template <class Policy>
registry_fixture<Policy>& fixture() {
  static registry_fixture<Policy> f;
  return f;
}

template <class Policy>
void BM_registry_run(benchmark::State& state) {
  auto& reg = fixture<Policy>().reg;
  std::uint64_t x = static_cast<std::uint64_t>(state.thread_index()) + 1;
  for (auto _ : state) x = reg.run("fold_constants", x);
  benchmark::DoNotOptimize(x);
  state.SetItemsProcessed(state.iterations());
}

template <class Policy>
void BM_registry_lookup(benchmark::State& state) {
  auto& reg = fixture<Policy>().reg;
  for (auto _ : state) {
    bool found = reg.visit("fold_constants", [](pass p) { benchmark::DoNotOptimize(p); });
    benchmark::DoNotOptimize(found);
  }
}

// The pass body alone: what a thread could do with no registry at all.
void BM_pass_body_baseline(benchmark::State& state) {
  std::uint64_t x = static_cast<std::uint64_t>(state.thread_index()) + 1;
  for (auto _ : state) x = pass_body(x);
  benchmark::DoNotOptimize(x);
  state.SetItemsProcessed(state.iterations());
}

// What a registry built on one std::shared_mutex would cost: every reader
// writes the mutex's reader count, one cache line for all threads.
struct single_mutex_registry {
  mutable std::shared_mutex mutex;
  std::map<std::string, pass, std::less<>> entries;
};
single_mutex_registry& single_mutex() {
  static single_mutex_registry r;
  return r;
}
void BM_single_shared_mutex_run_baseline(benchmark::State& state) {
  auto& r = single_mutex();
  std::uint64_t x = static_cast<std::uint64_t>(state.thread_index()) + 1;
  for (auto _ : state) {
    std::shared_lock<std::shared_mutex> lock(r.mutex);
    x = r.entries.find(std::string_view("fold_constants"))->second(x);
  }
  benchmark::DoNotOptimize(x);
  state.SetItemsProcessed(state.iterations());
}

// A bare lookup on one shared_mutex, for the contended comparison.
void BM_single_shared_mutex_lookup_baseline(benchmark::State& state) {
  auto& r = single_mutex();
  for (auto _ : state) {
    std::shared_lock<std::shared_mutex> lock(r.mutex);
    benchmark::DoNotOptimize(r.entries.find(std::string_view("fold_constants"))->second);
  }
}

template <class Policy>
void register_registry_benchmarks(bool threaded) {
  fixture<Policy>();  // build outside the timed, threaded region
  const std::string policy(Policy::name);
  auto* run = benchmark::RegisterBenchmark(("BM_registry_run/" + policy).c_str(), &BM_registry_run<Policy>);
  run->Threads(1);
  if (threaded) run->Threads(2);
  benchmark::RegisterBenchmark(("BM_registry_lookup/" + policy).c_str(), &BM_registry_lookup<Policy>);
  if (threaded) {
    benchmark::RegisterBenchmark(("BM_registry_lookup_contended/" + policy).c_str(), &BM_registry_lookup<Policy>)
        ->Threads(2);
  }
}

const bool registered = [] {
  register_registry_benchmarks<keel::std_shared_mutex_policy>(true);
  register_registry_benchmarks<keel::boost_shared_mutex_policy>(true);
  register_registry_benchmarks<keel::checked_mutex_policy>(true);
  register_registry_benchmarks<keel::null_mutex_policy>(false);  // single-threaded by definition
  single_mutex().entries.emplace("fold_constants", &pass_body);
  benchmark::RegisterBenchmark("BM_single_shared_mutex_run_baseline", &BM_single_shared_mutex_run_baseline)
      ->Threads(1)
      ->Threads(2);
  benchmark::RegisterBenchmark("BM_single_shared_mutex_lookup_baseline", &BM_single_shared_mutex_lookup_baseline)
      ->Threads(2);
  benchmark::RegisterBenchmark("BM_pass_body_baseline", &BM_pass_body_baseline)->Threads(1)->Threads(2);
  return true;
}();

// Two threads against one, same policy. Google Benchmark reports a threaded
// run's real time divided by the iterations of all threads, so the time
// ratio is the throughput gain.
KEEL_BENCH_COMPARE("BM_registry_run/std/threads:2", "BM_registry_run/std/threads:1", ">= 1.6x throughput of one thread");
KEEL_BENCH_COMPARE("BM_registry_run/boost/threads:2", "BM_registry_run/boost/threads:1", "(report)");
KEEL_BENCH_COMPARE("BM_single_shared_mutex_run_baseline/threads:2", "BM_single_shared_mutex_run_baseline/threads:1",
                   "(why the registry stripes its lock)");
KEEL_BENCH_COMPARE("BM_pass_body_baseline/threads:2", "BM_pass_body_baseline/threads:1", "(machine ceiling)");
// Bare lookups by two threads at once: striped lock against one shared_mutex.
KEEL_BENCH_COMPARE("BM_registry_lookup_contended/std", "BM_single_shared_mutex_lookup_baseline",
                   "(striping: no reader-count ping-pong)");
// The registry's cost over the bare body, one thread.
KEEL_BENCH_COMPARE("BM_registry_run/std/threads:1", "BM_pass_body_baseline/threads:1", "(overhead of lookup + lock)");

}  // namespace
