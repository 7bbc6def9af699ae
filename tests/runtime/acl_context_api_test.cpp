// SPDX-License-Identifier: Apache-2.0
// The emulation's C API for contexts, stream configuration and host
// functions, called through keel's function table as a C program would call
// it: aclrtCreateContext / DestroyContext / SetCurrentContext /
// GetCurrentContext, aclrtResetDeviceForce, aclrtCreateStreamWithConfig,
// aclrtStreamGetId / GetFlags / GetPriority, aclrtDeviceGetStreamPriorityRange,
// aclrtDestroyStreamForce and aclrtLaunchHostFunc, with CANN's statuses.
// Its own executable: aclrtResetDeviceForce ends every thread's default
// context and destroys the streams made in it, which no other suite survives.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "keel/acl/backend.hpp"

#include "../support/acl_device.hpp"

namespace {
keel::acl::device& device() { return keel_test::emulation_device(); }
constexpr keel::acl::status ok = 0, invalid_param = 100000, context_null = 107002, invalid_handle = 107017,
                            invalid_device = 107001;

void bump(void* counter) { static_cast<std::atomic<int>*>(counter)->fetch_add(1); }
void hold(void* gate) {
  while (!static_cast<std::atomic<bool>*>(gate)->load()) std::this_thread::yield();
}
}  // namespace

TEST_CASE("acl C API: contexts are made, made current per thread, and destroyed with CANN's statuses",
          "[runtime][acl][context]") {
  const keel::acl::api& a = device().functions();
  keel::acl::context_handle original = nullptr;
  REQUIRE(a.aclrtGetCurrentContext(&original) == ok);  // aclrtSetDevice's default context
  REQUIRE(original != nullptr);
  keel::acl::context_handle made = nullptr;
  CHECK(a.aclrtCreateContext(nullptr, 0) == invalid_param);
  CHECK(a.aclrtCreateContext(&made, 5) == invalid_device);
  REQUIRE(a.aclrtCreateContext(&made, 0) == ok);
  keel::acl::context_handle now = nullptr;
  REQUIRE(a.aclrtGetCurrentContext(&now) == ok);
  CHECK(now == made);  // CANN: the new context is the thread's current one
  std::thread([&] {
    keel::acl::context_handle there = nullptr;
    CHECK(a.aclrtGetCurrentContext(&there) == context_null);  // no context on a new thread
    CHECK(a.aclrtSetCurrentContext(made) == ok);            // a context is shared by the process's threads
    CHECK(a.aclrtGetCurrentContext(&there) == ok);
    CHECK(there == made);
  }).join();
  CHECK(a.aclrtSetCurrentContext(nullptr) == invalid_param);
  CHECK(a.aclrtDestroyContext(original) == invalid_param);  // the default context is not destroyed
  REQUIRE(a.aclrtSetCurrentContext(original) == ok);
  REQUIRE(a.aclrtDestroyContext(made) == ok);
  CHECK(a.aclrtDestroyContext(made) == invalid_handle);
  CHECK(a.aclrtSetCurrentContext(made) == invalid_handle);
  REQUIRE(a.aclrtGetCurrentContext(&now) == ok);
  CHECK(now == original);  // a refused call changed nothing
}

TEST_CASE("acl C API: streams keep the flags and priority they were made with", "[runtime][acl][stream_options]") {
  const keel::acl::api& a = device().functions();
  std::int32_t least = -1, greatest = -1;
  REQUIRE(a.aclrtDeviceGetStreamPriorityRange(&least, &greatest) == ok);
  CHECK(least == 7);
  CHECK(greatest == 0);
  keel::acl::stream_handle s = nullptr, plain = nullptr, odd = nullptr;
  CHECK(a.aclrtCreateStreamWithConfig(&s, 8, 0) == invalid_param);
  REQUIRE(a.aclrtCreateStreamWithConfig(&s, 2, 0x4U | 0x1U) == ok);  // ACL_STREAM_PERSISTENT | ACL_STREAM_FAST_LAUNCH
  REQUIRE(a.aclrtCreateStream(&plain) == ok);
  REQUIRE(a.aclrtCreateStreamWithConfig(&odd, 1, 0x1000U) == ok);  // another value: a plain stream
  std::uint32_t flags = 99, priority = 99;
  REQUIRE(a.aclrtStreamGetFlags(s, &flags) == ok);
  REQUIRE(a.aclrtStreamGetPriority(s, &priority) == ok);
  CHECK(flags == 0x5U);
  CHECK(priority == 2U);
  REQUIRE(a.aclrtStreamGetFlags(plain, &flags) == ok);
  REQUIRE(a.aclrtStreamGetPriority(plain, &priority) == ok);
  CHECK(flags == 0U);
  CHECK(priority == 0U);
  REQUIRE(a.aclrtStreamGetFlags(odd, &flags) == ok);
  CHECK(flags == 0U);
  std::int32_t id_s = -1, id_plain = -1;
  REQUIRE(a.aclrtStreamGetId(s, &id_s) == ok);
  REQUIRE(a.aclrtStreamGetId(plain, &id_plain) == ok);
  CHECK(id_s != id_plain);
  CHECK(a.aclrtStreamGetId(s, nullptr) == invalid_param);
  REQUIRE(a.aclrtDestroyStream(odd) == ok);
  CHECK(a.aclrtStreamGetFlags(odd, &flags) == invalid_handle);
  REQUIRE(a.aclrtDestroyStream(s) == ok);
  REQUIRE(a.aclrtDestroyStream(plain) == ok);
}

TEST_CASE("acl C API: aclrtLaunchHostFunc runs in stream order without a subscribed thread, and is captured",
          "[runtime][acl][host_func]") {
  const keel::acl::api& a = device().functions();
  keel::acl::stream_handle s = nullptr;
  REQUIRE(a.aclrtCreateStream(&s) == ok);
  std::atomic<int> calls{0};
  CHECK(a.aclrtLaunchHostFunc(s, nullptr, &calls) == invalid_param);
  REQUIRE(a.aclrtLaunchHostFunc(s, &bump, &calls) == ok);
  REQUIRE(a.aclrtSynchronizeStream(s) == ok);
  CHECK(calls == 1);
  REQUIRE(a.aclmdlRICaptureBegin(s, keel::acl::capture_mode::global) == ok);
  REQUIRE(a.aclrtLaunchHostFunc(s, &bump, &calls) == ok);
  keel::acl::model_handle model = nullptr;
  REQUIRE(a.aclmdlRICaptureEnd(s, &model) == ok);
  CHECK(calls == 1);  // recorded, not run
  REQUIRE(a.aclmdlRIExecuteAsync(model, s) == ok);
  REQUIRE(a.aclmdlRIExecuteAsync(model, s) == ok);
  REQUIRE(a.aclrtSynchronizeStream(s) == ok);
  CHECK(calls == 3);
  REQUIRE(a.aclmdlRIDestroy(model) == ok);
  REQUIRE(a.aclrtDestroyStream(s) == ok);
}

TEST_CASE("acl C API: aclrtDestroyStreamForce drops the work the stream had not started", "[runtime][acl][stream_options]") {
  const keel::acl::api& a = device().functions();
  keel::acl::stream_handle s = nullptr;
  REQUIRE(a.aclrtCreateStream(&s) == ok);
  std::atomic<bool> gate{false};
  std::atomic<int> calls{0};
  void* mem = nullptr;
  REQUIRE(a.aclrtMalloc(&mem, 64, keel::acl::malloc_policy::huge_first) == ok);
  REQUIRE(a.aclrtMemset(mem, 64, 0, 64) == ok);
  REQUIRE(a.aclrtLaunchHostFunc(s, &hold, &gate) == ok);
  REQUIRE(a.aclrtMemsetAsync(mem, 64, 0x7F, 64, s) == ok);  // not started when the stream goes
  REQUIRE(a.aclrtLaunchHostFunc(s, &bump, &calls) == ok);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    gate = true;
  });
  REQUIRE(a.aclrtDestroyStreamForce(s) == ok);
  opener.join();
  unsigned char seen[64] = {1};
  REQUIRE(a.aclrtMemcpy(seen, 64, mem, 64, keel::acl::memcpy_kind::device_to_host) == ok);
  CHECK(seen[0] == 0);   // the memset was dropped
  CHECK(seen[63] == 0);
  CHECK(calls == 1);     // a host function still runs (it may own what args points at), as a callback does
  std::uint32_t flags = 0;
  CHECK(a.aclrtStreamGetFlags(s, &flags) == invalid_handle);  // the stream is gone
  REQUIRE(a.aclrtFree(mem) == ok);
}

TEST_CASE("acl C API: aclrtResetDeviceForce releases the default context and its streams, once",
          "[runtime][acl][context]") {
  const keel::acl::api& a = device().functions();
  REQUIRE(a.aclrtSetDevice(0) == ok);  // twice set on this thread: one forced reset releases both
  keel::acl::stream_handle s = nullptr;
  REQUIRE(a.aclrtCreateStream(&s) == ok);  // made in the default context
  keel::acl::context_handle own = nullptr;
  REQUIRE(a.aclrtCreateContext(&own, 0) == ok);
  keel::acl::stream_handle in_own = nullptr;
  REQUIRE(a.aclrtCreateStream(&in_own) == ok);
  keel::acl::context_handle def = nullptr;
  std::thread([&] {
    REQUIRE(a.aclrtSetDevice(0) == ok);
    REQUIRE(a.aclrtGetCurrentContext(&def) == ok);
  }).join();
  REQUIRE(a.aclrtSetCurrentContext(def) == ok);
  CHECK(a.aclrtResetDeviceForce(3) == invalid_device);
  REQUIRE(a.aclrtResetDeviceForce(0) == ok);
  std::uint32_t flags = 0;
  keel::acl::context_handle now = nullptr;
  CHECK(a.aclrtGetCurrentContext(&now) == context_null);  // the default context went
  CHECK(a.aclrtResetDeviceForce(0) == context_null);       // already reset
  CHECK(a.aclrtSetCurrentContext(def) == context_null);    // a reset device's context cannot come back
  REQUIRE(a.aclrtSetCurrentContext(own) == ok);             // an explicit context outlives it
  CHECK(a.aclrtStreamGetFlags(s, &flags) == invalid_handle);  // the default context's stream went
  REQUIRE(a.aclrtStreamGetFlags(in_own, &flags) == ok);        // the explicit context's stays
  REQUIRE(a.aclrtDestroyStream(in_own) == ok);
  REQUIRE(a.aclrtDestroyContext(own) == ok);
  REQUIRE(a.aclrtSetDevice(0) == ok);  // the device can be set again
  REQUIRE(a.aclrtGetCurrentContext(&now) == ok);
}
