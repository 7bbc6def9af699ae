// SPDX-License-Identifier: Apache-2.0
// The ACL backend's pool hit against aclrtMalloc + aclrtFree through the
// emulation's C API (the same runtime in the process), 4 KiB to 64 MiB.
#include <benchmark/benchmark.h>

#include <cstddef>

#include "harness.hpp"
#include "keel/acl/memory_pool.hpp"

namespace {

keel::acl::device& pool_bench_device() {
  static keel::acl::device dev{keel::acl::device_options{0, KEEL_BENCH_ACL_EMULATION_DIR}};
  return dev;
}

void acl_pool_sizes(benchmark::internal::Benchmark* b) {
  for (std::int64_t size : {std::int64_t{4} << 10, std::int64_t{64} << 10, std::int64_t{1} << 20,
                            std::int64_t{16} << 20, std::int64_t{64} << 20})
    b->Arg(size);
}

void BM_acl_pool_hit(benchmark::State& state) {
  keel::acl::stream s{pool_bench_device()};
  keel::acl::memory_pool pool{pool_bench_device(), {"acl bench"}};
  const auto bytes = static_cast<std::size_t>(state.range(0));
  { auto warm = pool.allocate(s, bytes); }
  for (auto _ : state) {
    auto a = pool.allocate(s, bytes);
    benchmark::DoNotOptimize(a.data());
  }
  s.synchronize();
}
BENCHMARK(BM_acl_pool_hit)->Apply(acl_pool_sizes)->UseRealTime();

void BM_acl_malloc_free_raw(benchmark::State& state) {
  const keel::acl::api& api = pool_bench_device().functions();
  const auto bytes = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    void* p = nullptr;
    if (api.aclrtMalloc(&p, bytes, keel::acl::malloc_policy::huge_first) != 0) state.SkipWithError("aclrtMalloc");
    benchmark::DoNotOptimize(p);
    api.aclrtFree(p);
  }
}
BENCHMARK(BM_acl_malloc_free_raw)->Apply(acl_pool_sizes)->UseRealTime();

}  // namespace

KEEL_BENCH_COMPARE("BM_acl_pool_hit", "BM_acl_malloc_free_raw", ">= 10x faster than aclrtMalloc + aclrtFree");
KEEL_BENCH_OVERHEAD("BM_acl_pool_hit", "BM_empty_loop_baseline/real_time", 40, 0);  // at most 40 ns a hit
