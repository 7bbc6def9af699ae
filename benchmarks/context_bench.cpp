// SPDX-License-Identifier: Apache-2.0
// A context switch scope (keel::basic_context_scope: make a context current,
// restore the previous one) against what a hand-written switch costs in the
// same run: on the host backend, a thread-local pointer saved, set and put
// back; on the ACL backend, aclrtGetCurrentContext + two aclrtSetCurrentContext
// calls on the same emulated runtime. Held to 50 ns added per scope.
#include <benchmark/benchmark.h>

#include "harness.hpp"
#include "keel/host/host.hpp"
#ifdef KEEL_BENCH_ACL_EMULATION_DIR
#include "keel/acl/backend.hpp"
#endif

namespace {

struct plain_context {
  int device = 0;
};
plain_context*& plain_current() noexcept {
  thread_local plain_context* current = nullptr;
  return current;
}

void BM_context_switch_baseline(benchmark::State& state) {
  plain_context a, b;
  plain_current() = &a;
  for (auto _ : state) {
    plain_context* previous = plain_current();
    plain_current() = &b;
    benchmark::DoNotOptimize(plain_current());
    plain_current() = previous;
    benchmark::ClobberMemory();
  }
  plain_current() = nullptr;
}
BENCHMARK(BM_context_switch_baseline);

void BM_context_scope_host(benchmark::State& state) {
  keel::host::device& dev = keel::host::default_device();
  keel::host::context a{dev}, b{dev};
  keel::host::context_scope outer{a};
  for (auto _ : state) {
    keel::host::context_scope inner{b};
    benchmark::DoNotOptimize(&inner);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_context_scope_host);
KEEL_BENCH_OVERHEAD("BM_context_scope_host", "BM_context_switch_baseline", 50.0, 0.0);

#ifdef KEEL_BENCH_ACL_EMULATION_DIR
keel::acl::device& emulated() {
  static keel::acl::device dev{keel::acl::device_options{0, KEEL_BENCH_ACL_EMULATION_DIR}};
  return dev;
}

void BM_acl_context_switch_raw(benchmark::State& state) {
  const keel::acl::api& a = emulated().functions();
  keel::acl::context_handle first = nullptr, second = nullptr, previous = nullptr;
  if (a.aclrtCreateContext(&second, 0) != 0 || a.aclrtCreateContext(&first, 0) != 0) {
    state.SkipWithError("aclrtCreateContext failed");
    return;
  }
  for (auto _ : state) {
    (void)a.aclrtGetCurrentContext(&previous);
    (void)a.aclrtSetCurrentContext(second);
    benchmark::DoNotOptimize(previous);
    (void)a.aclrtSetCurrentContext(previous);
  }
  (void)a.aclrtDestroyContext(second);
  (void)a.aclrtDestroyContext(first);
  emulated().make_current();
}
BENCHMARK(BM_acl_context_switch_raw);

void BM_acl_context_scope(benchmark::State& state) {
  keel::acl::device& dev = emulated();
  keel::acl::context a{dev}, b{dev};
  keel::acl::context_scope outer{a};
  for (auto _ : state) {
    keel::acl::context_scope inner{b};
    benchmark::DoNotOptimize(&inner);
  }
}
BENCHMARK(BM_acl_context_scope);
KEEL_BENCH_OVERHEAD("BM_acl_context_scope", "BM_acl_context_switch_raw", 50.0, 0.0);
#endif

}  // namespace
