// SPDX-License-Identifier: Apache-2.0
// The ACL backend's overhead: the work of acl_raw_bench.cpp through keel::acl
// over the same emulated runtime in the same run (an aclnn add through a
// cached executor, an event record + wait, a host callback, capture + end of
// a 100-task model, one execution of it). The emulation is far faster than a
// device, so the honest figure is what keel adds per call, in nanoseconds:
// held to 50 ns, or 10 % of the raw call where that is more.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "harness.hpp"
#include "keel/acl/backend.hpp"
#include "keel/acl/ops.hpp"
#include "keel/ops/launch.hpp"

namespace {

constexpr std::int64_t elements = 64;
constexpr int tasks_per_model = 100;
constexpr int calls_per_synchronize = 64;  // as acl_raw_bench.cpp

keel::acl::device& emulated_device() {
  static keel::acl::device dev{keel::acl::device_options{0, KEEL_BENCH_ACL_EMULATION_DIR}};
  return dev;
}

// Three device tensors and a repeatable aclnnAdd executor over them (keel's
// prepare_add makes every executor repeatable): phase one once, through the
// generic operator vocabulary (keel::ops::prepare_add on an acl::device).
struct add_setup {
  keel::acl::stream& s;
  keel::acl::device_buffer a{s, elements * sizeof(float)}, b{s, elements * sizeof(float)},
      out{s, elements * sizeof(float)};
  keel::acl::executor ex;
  keel::acl::device_buffer workspace;

  explicit add_setup(keel::acl::stream& stream) : s(stream) {
    const auto view = [](keel::acl::device_buffer& m) {
      return keel::ops::tensor(m.span().data, keel::ops::dtype::float32, {elements});
    };
    // Zeros, as the raw case's aclrtMemset: uninitialised memory may hold
    // subnormals, whose arithmetic is many times slower on x86.
    const std::vector<float> zeros(elements, 0.0f);
    for (keel::acl::device_buffer* m : {&a, &b, &out})
      s.copy_async(m->span(), keel::host_span(zeros.data(), zeros.size() * sizeof(float)));
    ex = keel::ops::prepare_add(emulated_device(), view(a), view(b), keel::ops::scalar(1.0f), view(out));
    if (ex.workspace_size() != 0) workspace = keel::acl::device_buffer{s, ex.workspace_size()};
    s.synchronize();
  }
  keel::memory_span workspace_span() const { return ex.workspace_size() != 0 ? workspace.span() : keel::memory_span{}; }
};

void BM_acl_keel_aclnn_add(benchmark::State& state) {
  keel::acl::stream s{emulated_device()};
  add_setup add{s};
  const keel::memory_span workspace = add.workspace_span();
  int n = 0;
  for (auto _ : state) {
    keel::ops::run_on(s, add.ex, workspace);  // phase two: counts the run, checks the workspace, one launch
    if (++n % calls_per_synchronize == 0) s.synchronize();
  }
  s.synchronize();
}
BENCHMARK(BM_acl_keel_aclnn_add)->UseRealTime();

void BM_acl_keel_event_record_wait(benchmark::State& state) {
  keel::acl::stream a{emulated_device()}, b{emulated_device()};
  keel::acl::event e{emulated_device()};
  int n = 0;
  for (auto _ : state) {
    e.record(a);
    b.wait(e);
    if (++n % calls_per_synchronize == 0) b.synchronize();
  }
  b.synchronize();
  a.synchronize();
}
BENCHMARK(BM_acl_keel_event_record_wait)->UseRealTime();

void BM_acl_keel_host_callback(benchmark::State& state) {
  keel::acl::stream s{emulated_device()};
  std::atomic<std::uint64_t> counter{0};
  s.launch_host([] {});  // warm: on the callback path (a runtime without aclrtLaunchHostFunc) this starts the reporting thread
  s.synchronize();
  int n = 0;
  for (auto _ : state) {
    s.launch_host([&counter] { counter.fetch_add(1, std::memory_order_relaxed); });
    if (++n % calls_per_synchronize == 0) s.synchronize();
  }
  s.synchronize();
}
BENCHMARK(BM_acl_keel_host_callback)->UseRealTime();

keel::acl::model capture(keel::acl::stream& s, add_setup& add) {
  keel::acl::capture_scope scope{s};  // global mode, as the raw case
  const keel::memory_span workspace = add.workspace_span();
  for (int i = 0; i < tasks_per_model; ++i) keel::ops::run_on(s, add.ex, workspace);
  return scope.end();
}

void BM_acl_keel_capture_100(benchmark::State& state) {
  keel::acl::stream s{emulated_device()};
  add_setup add{s};
  for (auto _ : state) {
    keel::acl::model m = capture(s, add);  // destroyed here, as the raw case destroys its model
  }
}
BENCHMARK(BM_acl_keel_capture_100)->UseRealTime();

void BM_acl_keel_execute_100(benchmark::State& state) {
  keel::acl::stream s{emulated_device()};
  add_setup add{s};
  keel::acl::model m = capture(s, add);
  for (auto _ : state) {
    m.execute(s);
    s.synchronize();
  }
}
BENCHMARK(BM_acl_keel_execute_100)->UseRealTime();

}  // namespace

// keel ns - raw ns per call: at most 50 ns, or 10 % of the raw call's time where that is more.
KEEL_BENCH_OVERHEAD("BM_acl_keel_aclnn_add", "BM_acl_raw_aclnn_add", 50.0, 0.10);
KEEL_BENCH_OVERHEAD("BM_acl_keel_event_record_wait", "BM_acl_raw_event_record_wait", 50.0, 0.10);
// keel's launch_host takes aclrtLaunchHostFunc when the runtime has it (the
// emulation has), so the raw host function is the baseline; the raw
// subscribed callback is printed beside it for users of the older path.
KEEL_BENCH_OVERHEAD("BM_acl_keel_host_callback", "BM_acl_raw_host_function", 50.0, 0.10);
KEEL_BENCH_COMPARE("BM_acl_keel_host_callback", "BM_acl_raw_host_callback", "informational: subscribed callback path");
KEEL_BENCH_OVERHEAD("BM_acl_keel_capture_100", "BM_acl_raw_capture_100", 50.0, 0.10);
KEEL_BENCH_OVERHEAD("BM_acl_keel_execute_100", "BM_acl_raw_execute_100", 50.0, 0.10);
