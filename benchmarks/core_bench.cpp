// SPDX-License-Identifier: Apache-2.0
// Core costs: a scope guard against the hand-written cleanup it replaces, and
// a guarded read under each mutex policy with one and two threads.
#include <benchmark/benchmark.h>

#include <keel/core/checked_mutex.hpp>
#include <keel/core/guarded.hpp>
#include <keel/core/mutex_policy.hpp>
#include <keel/core/scope_guard.hpp>
#if __has_include(<boost/thread/shared_mutex.hpp>)
#include <keel/core/boost_mutex_policy.hpp>
#define KEEL_BENCH_WITH_BOOST 1
#endif

#include <array>

#include "harness.hpp"

namespace {

// A resource that must be released on every path: the shape scope guards are for.
struct resource_counter {
  int open = 0;
  void acquire() noexcept { ++open; }
  void release() noexcept { --open; }
};

// The hand-written version: cleanup repeated on each early exit.
__attribute__((noinline)) int work_by_hand(resource_counter& r, int input) {
  r.acquire();
  benchmark::DoNotOptimize(input);
  if (input == 1) {
    r.release();
    return 1;
  }
  const int result = input * 3;
  benchmark::DoNotOptimize(result);
  r.release();
  return result;
}

__attribute__((noinline)) int work_with_guard(resource_counter& r, int input) {
  r.acquire();
  keel::scope_exit release{[&r]() noexcept { r.release(); }};
  benchmark::DoNotOptimize(input);
  if (input == 1) return 1;
  const int result = input * 3;
  benchmark::DoNotOptimize(result);
  return result;
}

void BM_guard_baseline(benchmark::State& state) {
  resource_counter r;
  int input = 2;
  for (auto _ : state) benchmark::DoNotOptimize(work_by_hand(r, input));
  if (r.open != 0) state.SkipWithError("cleanup was lost");
}
BENCHMARK(BM_guard_baseline);

void BM_guard_scope_exit(benchmark::State& state) {
  resource_counter r;
  int input = 2;
  for (auto _ : state) benchmark::DoNotOptimize(work_with_guard(r, input));
  if (r.open != 0) state.SkipWithError("cleanup was lost");
}
BENCHMARK(BM_guard_scope_exit);

KEEL_BENCH_COMPARE("BM_guard_scope_exit", "BM_guard_baseline", "~1.0x: the guard costs nothing measurable");

// A small table read under the policy's shared lock, the registry's hot path.
template <class Policy>
void BM_guarded_read(benchmark::State& state) {
  static keel::guarded<std::array<int, 16>, Policy> table{std::array<int, 16>{1, 2, 3, 4, 5, 6, 7, 8}};
  long sum = 0;
  for (auto _ : state) {
    sum += table.read([](const std::array<int, 16>& t) { return t[3]; });
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_TEMPLATE(BM_guarded_read, keel::null_mutex_policy)->Name("BM_guarded_read/null")->Threads(1)->UseRealTime();
BENCHMARK_TEMPLATE(BM_guarded_read, keel::std_shared_mutex_policy)
    ->Name("BM_guarded_read/std")->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_guarded_read, keel::checked_mutex_policy)
    ->Name("BM_guarded_read/checked")->Threads(1)->Threads(2)->UseRealTime();
#if defined(KEEL_BENCH_WITH_BOOST)
BENCHMARK_TEMPLATE(BM_guarded_read, keel::boost_shared_mutex_policy)
    ->Name("BM_guarded_read/boost")->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_guarded_read, keel::boost_upgrade_mutex_policy)
    ->Name("BM_guarded_read/upgrade")->Threads(1)->Threads(2)->UseRealTime();
#endif

// Baseline: the same read with the policy's mutex locked by hand, to show
// that guarded adds nothing over the lock itself.
template <class Policy>
void BM_raw_shared_lock(benchmark::State& state) {
  static typename Policy::mutex_type mutex;
  static std::array<int, 16> table{1, 2, 3, 4, 5, 6, 7, 8};
  long sum = 0;
  for (auto _ : state) {
    mutex.lock_shared();
    sum += table[3];
    mutex.unlock_shared();
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_TEMPLATE(BM_raw_shared_lock, keel::std_shared_mutex_policy)
    ->Name("BM_raw_shared_lock/std")->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_raw_shared_lock, keel::checked_mutex_policy)
    ->Name("BM_raw_shared_lock/checked")->Threads(1)->Threads(2)->UseRealTime();
#if defined(KEEL_BENCH_WITH_BOOST)
BENCHMARK_TEMPLATE(BM_raw_shared_lock, keel::boost_shared_mutex_policy)
    ->Name("BM_raw_shared_lock/boost")->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_raw_shared_lock, keel::boost_upgrade_mutex_policy)
    ->Name("BM_raw_shared_lock/upgrade")->Threads(1)->Threads(2)->UseRealTime();
#endif

KEEL_BENCH_COMPARE("BM_guarded_read/null", "BM_guarded_read/null", "reference: no lock at all");
KEEL_BENCH_COMPARE("BM_guarded_read/std", "BM_raw_shared_lock/std", "~1.0x: guarded adds nothing to the lock");
KEEL_BENCH_COMPARE("BM_guarded_read/boost", "BM_raw_shared_lock/boost", "~1.0x");
KEEL_BENCH_COMPARE("BM_guarded_read/upgrade", "BM_raw_shared_lock/upgrade", "~1.0x");
KEEL_BENCH_COMPARE("BM_guarded_read/checked", "BM_raw_shared_lock/checked", "~1.0x (debug policy)");

}  // namespace
