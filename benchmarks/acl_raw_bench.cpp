// SPDX-License-Identifier: Apache-2.0
// The ACL backend's baselines: the same work as acl_bench.cpp, written
// against the ACL C API itself (the emulation's headers, no keel header, the
// way examples/acl_capture_update.c calls it), in the same process and on the
// same emulated runtime, so the difference is what keel::acl adds per call.
#include <benchmark/benchmark.h>
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_add.h"

namespace {

constexpr std::int64_t elements = 64;
constexpr int tasks_per_model = 100;
constexpr int calls_per_synchronize = 64;  // tiny calls are synchronized in batches, on both sides

// The benchmark fails (and says which call) instead of measuring a refusal.
bool ok(benchmark::State& state, int status, const char* call) {
  if (status == 0) return true;
  const char* why = aclGetRecentErrMsg();
  state.SkipWithError((std::string(call) + " failed with " + std::to_string(status) + ": " +
                       (why != nullptr ? why : "(no message)"))
                          .c_str());
  return false;
}
#define KEEL_RAW_OK(call) ok(state, static_cast<int>(call), #call)

// aclInit once per process (keel's device accepts the repeat, and so does
// this), then the device on the benchmark's thread, as every ACL thread needs.
bool enter(benchmark::State& state) {
  const aclError init = aclInit(nullptr);
  if (init != ACL_SUCCESS && init != ACL_ERROR_REPEAT_INITIALIZE) return ok(state, init, "aclInit");
  return KEEL_RAW_OK(aclrtSetDevice(0));
}

// Three device tensors and a repeatable aclnnAdd executor over them: phase one once.
struct add_setup {
  void* memory[3] = {nullptr, nullptr, nullptr};
  aclTensor* tensors[3] = {nullptr, nullptr, nullptr};
  aclScalar* alpha = nullptr;
  aclOpExecutor* executor = nullptr;
  std::uint64_t workspace_size = 0;
  void* workspace = nullptr;

  bool make(benchmark::State& state) {
    const std::int64_t shape[1] = {elements}, strides[1] = {1};
    for (int i = 0; i < 3; ++i) {
      if (!KEEL_RAW_OK(aclrtMalloc(&memory[i], elements * sizeof(float), ACL_MEM_MALLOC_HUGE_FIRST))) return false;
      if (!KEEL_RAW_OK(aclrtMemset(memory[i], elements * sizeof(float), 0, elements * sizeof(float)))) return false;
      tensors[i] = aclCreateTensor(shape, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 1, memory[i]);
      if (tensors[i] == nullptr) return ok(state, -1, "aclCreateTensor");
    }
    const float alpha_value = 1.0f;
    alpha = aclCreateScalar(const_cast<float*>(&alpha_value), ACL_FLOAT);
    if (alpha == nullptr) return ok(state, -1, "aclCreateScalar");
    if (!KEEL_RAW_OK(aclnnAddGetWorkspaceSize(tensors[0], tensors[1], alpha, tensors[2], &workspace_size, &executor)))
      return false;
    if (!KEEL_RAW_OK(aclSetAclOpExecutorRepeatable(executor))) return false;
    if (workspace_size != 0 && !KEEL_RAW_OK(aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST)))
      return false;
    return true;
  }
  ~add_setup() {
    if (executor != nullptr) aclDestroyAclOpExecutor(executor);
    if (alpha != nullptr) aclDestroyScalar(alpha);
    for (aclTensor* t : tensors)
      if (t != nullptr) aclDestroyTensor(t);
    for (void* m : memory)
      if (m != nullptr) aclrtFree(m);
    if (workspace != nullptr) aclrtFree(workspace);
  }
};

struct raw_stream {
  aclrtStream native = nullptr;
  bool make(benchmark::State& state) { return KEEL_RAW_OK(aclrtCreateStream(&native)); }
  ~raw_stream() {
    if (native != nullptr) aclrtDestroyStream(native);
  }
};

void BM_acl_raw_aclnn_add(benchmark::State& state) {
  raw_stream s;
  add_setup add;
  if (!enter(state) || !s.make(state) || !add.make(state)) return;
  int n = 0;
  for (auto _ : state) {
    if (!KEEL_RAW_OK(aclnnAdd(add.workspace, add.workspace_size, add.executor, s.native))) break;
    if (++n % calls_per_synchronize == 0 && !KEEL_RAW_OK(aclrtSynchronizeStream(s.native))) break;
  }
  aclrtSynchronizeStream(s.native);
}
BENCHMARK(BM_acl_raw_aclnn_add)->UseRealTime();

void BM_acl_raw_event_record_wait(benchmark::State& state) {
  raw_stream a, b;
  aclrtEvent e = nullptr;
  if (!enter(state) || !a.make(state) || !b.make(state) || !KEEL_RAW_OK(aclrtCreateEvent(&e))) return;
  int n = 0;
  for (auto _ : state) {
    if (!KEEL_RAW_OK(aclrtRecordEvent(e, a.native)) || !KEEL_RAW_OK(aclrtStreamWaitEvent(b.native, e))) break;
    if (++n % calls_per_synchronize == 0 && !KEEL_RAW_OK(aclrtSynchronizeStream(b.native))) break;
  }
  aclrtSynchronizeStream(b.native);
  aclrtSynchronizeStream(a.native);
  aclrtDestroyEvent(e);
}
BENCHMARK(BM_acl_raw_event_record_wait)->UseRealTime();

void count_call(void* counter) { static_cast<std::atomic<std::uint64_t>*>(counter)->fetch_add(1, std::memory_order_relaxed); }

// A host callback as CANN wants it: a thread subscribed to the stream runs
// aclrtProcessReport in a loop, and each aclrtLaunchCallback (blocking: the
// stream's later work waits for it) runs there.
void BM_acl_raw_host_callback(benchmark::State& state) {
  raw_stream s;
  if (!enter(state) || !s.make(state)) return;
  std::atomic<bool> stop{false}, subscribed{false};
  std::atomic<std::uint64_t> thread_id{0};
  std::thread reporter([&] {
    aclrtSetDevice(0);
    thread_id.store(static_cast<std::uint64_t>(pthread_self()), std::memory_order_release);
    while (!subscribed.load(std::memory_order_acquire)) std::this_thread::yield();
    while (!stop.load(std::memory_order_acquire)) aclrtProcessReport(100);
  });
  while (thread_id.load(std::memory_order_acquire) == 0) std::this_thread::yield();
  const bool subscribe_ok = KEEL_RAW_OK(aclrtSubscribeReport(thread_id.load(), s.native));
  subscribed.store(true, std::memory_order_release);
  std::atomic<std::uint64_t> counter{0};
  int n = 0;
  if (subscribe_ok) {
    for (auto _ : state) {
      if (!KEEL_RAW_OK(aclrtLaunchCallback(&count_call, &counter, ACL_CALLBACK_BLOCK, s.native))) break;
      if (++n % calls_per_synchronize == 0 && !KEEL_RAW_OK(aclrtSynchronizeStream(s.native))) break;
    }
    aclrtSynchronizeStream(s.native);
    aclrtUnSubscribeReport(thread_id.load(), s.native);
  }
  stop.store(true, std::memory_order_release);
  reporter.join();
}
BENCHMARK(BM_acl_raw_host_callback)->UseRealTime();

// The same host work as CANN's newer path wants it: aclrtLaunchHostFunc runs
// the function in stream order with no subscribed thread. keel::acl uses it
// when the runtime has it, so this (not the callback above, kept as a second,
// informational baseline) is what keel's launch_host is held to.
void BM_acl_raw_host_function(benchmark::State& state) {
  raw_stream s;
  if (!enter(state) || !s.make(state)) return;
  std::atomic<std::uint64_t> counter{0};
  int n = 0;
  for (auto _ : state) {
    if (!KEEL_RAW_OK(aclrtLaunchHostFunc(s.native, &count_call, &counter))) break;
    if (++n % calls_per_synchronize == 0 && !KEEL_RAW_OK(aclrtSynchronizeStream(s.native))) break;
  }
  aclrtSynchronizeStream(s.native);
}
BENCHMARK(BM_acl_raw_host_function)->UseRealTime();

bool capture(benchmark::State& state, aclrtStream s, const add_setup& add, aclmdlRI* model) {
  if (!KEEL_RAW_OK(aclmdlRICaptureBegin(s, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL))) return false;
  for (int i = 0; i < tasks_per_model; ++i)
    if (!KEEL_RAW_OK(aclnnAdd(add.workspace, add.workspace_size, add.executor, s))) return false;
  return KEEL_RAW_OK(aclmdlRICaptureEnd(s, model));
}

void BM_acl_raw_capture_100(benchmark::State& state) {
  raw_stream s;
  add_setup add;
  if (!enter(state) || !s.make(state) || !add.make(state)) return;
  for (auto _ : state) {
    aclmdlRI model = nullptr;
    if (!capture(state, s.native, add, &model) || !KEEL_RAW_OK(aclmdlRIDestroy(model))) break;
  }
}
BENCHMARK(BM_acl_raw_capture_100)->UseRealTime();

void BM_acl_raw_execute_100(benchmark::State& state) {
  raw_stream s;
  add_setup add;
  aclmdlRI model = nullptr;
  if (!enter(state) || !s.make(state) || !add.make(state) || !capture(state, s.native, add, &model)) return;
  for (auto _ : state) {
    if (!KEEL_RAW_OK(aclmdlRIExecuteAsync(model, s.native)) || !KEEL_RAW_OK(aclrtSynchronizeStream(s.native))) break;
  }
  aclmdlRIDestroy(model);
}
BENCHMARK(BM_acl_raw_execute_100)->UseRealTime();

}  // namespace
