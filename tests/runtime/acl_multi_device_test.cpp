// SPDX-License-Identifier: Apache-2.0
// Several devices: the emulation with eight (KEEL_ACL_EMULATION_DEVICES=8,
// set before the emulation is loaded), called through keel's function table
// as a C program calls it (a current device per thread, streams and events
// of one device, peer access per direction, copies between devices, each
// device's own memory), and keel's backends with eight devices each.
// Its own executable: the number of devices is read once per process, and
// the other suites run with the default of one.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "keel/acl/backend.hpp"
#include "keel/host/host.hpp"
#include "keel/runtime.hpp"

#include "../support/acl_device.hpp"

namespace {

// Before main, so before keel loads the emulation: eight devices.
const bool eight_devices = [] { return ::setenv("KEEL_ACL_EMULATION_DEVICES", "8", 1) == 0; }();

constexpr int device_count = 8;
constexpr keel::acl::status ok = 0, invalid_param = 100000, invalid_device = 107001, stream_context = 107003;

keel::acl::device& device0() { return keel_test::emulation_device(); }
const keel::acl::api& api() { return device0().functions(); }

// A thread of its own on @p id, as a C program's worker thread would be.
template <class F>
void on_device(std::int32_t id, F&& body) {
  std::thread([&] {
    REQUIRE(api().aclrtSetDevice(id) == ok);
    body();
  }).join();
}

// Device memory on device @p id, freed on that device.
struct device_memory {
  device_memory(std::int32_t on, std::size_t bytes) : id(on) {
    REQUIRE(api().aclrtSetDevice(id) == ok);
    REQUIRE(api().aclrtMalloc(&pointer, bytes, keel::acl::malloc_policy::huge_first) == ok);
  }
  ~device_memory() {
    (void)api().aclrtSetDevice(id);
    (void)api().aclrtFree(pointer);
  }
  device_memory(const device_memory&) = delete;
  device_memory& operator=(const device_memory&) = delete;
  std::int32_t id;
  void* pointer = nullptr;
};

}  // namespace

TEST_CASE("acl C API: KEEL_ACL_EMULATION_DEVICES devices, a current device per thread", "[acl][multi_device]") {
  REQUIRE(eight_devices);
  const keel::acl::api& a = api();
  std::uint32_t count = 0;
  REQUIRE(a.aclrtGetDeviceCount(&count) == ok);
  CHECK(count == static_cast<std::uint32_t>(device_count));
  CHECK(a.aclrtSetDevice(device_count) == invalid_device);
  CHECK(a.aclrtSetDevice(-1) == invalid_device);

  // Each thread its own device; setting one on a thread changes no other thread's.
  REQUIRE(a.aclrtSetDevice(0) == ok);
  std::vector<std::thread> threads;
  std::vector<std::int32_t> seen(device_count, -1);
  for (std::int32_t id = 0; id < device_count; ++id)
    threads.emplace_back([&, id] {
      if (a.aclrtSetDevice(id) == ok) (void)a.aclrtGetDevice(&seen[static_cast<std::size_t>(id)]);
    });
  for (auto& t : threads) t.join();
  for (std::int32_t id = 0; id < device_count; ++id) CHECK(seen[static_cast<std::size_t>(id)] == id);
  std::int32_t mine = -1;
  REQUIRE(a.aclrtGetDevice(&mine) == ok);
  CHECK(mine == 0);

  // Each device has its own default context.
  keel::acl::context_handle c0 = nullptr, c1 = nullptr;
  REQUIRE(a.aclrtGetCurrentContext(&c0) == ok);
  REQUIRE(a.aclrtSetDevice(1) == ok);
  REQUIRE(a.aclrtGetCurrentContext(&c1) == ok);
  CHECK(c0 != c1);
  REQUIRE(a.aclrtSetCurrentContext(c0) == ok);
  REQUIRE(a.aclrtGetDevice(&mine) == ok);
  CHECK(mine == 0);  // a context carries its device
}

TEST_CASE("acl C API: streams and events serve their own device only", "[acl][multi_device]") {
  const keel::acl::api& a = api();
  REQUIRE(a.aclrtSetDevice(0) == ok);
  keel::acl::stream_handle s0 = nullptr, s1 = nullptr;
  keel::acl::event_handle e0 = nullptr, e1 = nullptr;
  REQUIRE(a.aclrtCreateStream(&s0) == ok);
  REQUIRE(a.aclrtCreateEvent(&e0) == ok);
  REQUIRE(a.aclrtSetDevice(1) == ok);
  REQUIRE(a.aclrtCreateStream(&s1) == ok);
  REQUIRE(a.aclrtCreateEvent(&e1) == ok);

  // dev_guide/05_multi_device_programming.md: an event and a stream of two
  // devices neither record nor wait; a copy goes on a stream of the current device.
  CHECK(a.aclrtRecordEvent(e0, s1) == stream_context);
  CHECK(a.aclrtStreamWaitEvent(s1, e0) == stream_context);
  CHECK(a.aclrtStreamWaitEventWithTimeout(s1, e0, 10) == stream_context);
  int host_in = 7, host_out = 0;
  CHECK(a.aclrtMemcpyAsync(&host_out, sizeof host_out, &host_in, sizeof host_in,
                           keel::acl::memcpy_kind::host_to_host, s0) == stream_context);
  CHECK(host_out == 0);

  // ... while their own device's work goes through, and an event of another
  // device may still be synchronized and queried from here.
  REQUIRE(a.aclrtRecordEvent(e1, s1) == ok);
  REQUIRE(a.aclrtStreamWaitEvent(s1, e1) == ok);
  REQUIRE(a.aclrtMemcpyAsync(&host_out, sizeof host_out, &host_in, sizeof host_in,
                             keel::acl::memcpy_kind::host_to_host, s1) == ok);
  REQUIRE(a.aclrtSynchronizeStream(s1) == ok);
  CHECK(host_out == 7);
  on_device(0, [&] { REQUIRE(a.aclrtRecordEvent(e0, s0) == ok); });
  CHECK(a.aclrtSynchronizeEvent(e0) == ok);
  keel::acl::event_recorded_status st = keel::acl::event_recorded_status::not_ready;
  CHECK(a.aclrtQueryEventStatus(e0, &st) == ok);
  CHECK(st == keel::acl::event_recorded_status::complete);

  CHECK(a.aclrtDestroyEvent(e0) == ok);
  CHECK(a.aclrtDestroyEvent(e1) == ok);
  CHECK(a.aclrtDestroyStream(s0) == ok);
  CHECK(a.aclrtDestroyStream(s1) == ok);
}

TEST_CASE("acl C API: peer access is enabled per direction and P2P copies need it", "[acl][multi_device]") {
  const keel::acl::api& a = api();
  std::int32_t can = 0;
  REQUIRE(a.aclrtDeviceCanAccessPeer(&can, 0, 1) == ok);
  CHECK(can == 1);
  CHECK(a.aclrtDeviceCanAccessPeer(&can, 2, 2) == invalid_param);  // CANN: the two ids differ
  CHECK(a.aclrtDeviceCanAccessPeer(&can, 0, device_count) == invalid_device);

  device_memory zero(0, 64), one(1, 64);
  REQUIRE(a.aclrtMemset(zero.pointer, 64, 0x5a, 64) == ok);  // current device: 1 (one's constructor)
  REQUIRE(a.aclrtMemset(one.pointer, 64, 0, 64) == ok);
  REQUIRE(a.aclrtSetDevice(1) == ok);
  CHECK(a.aclrtDeviceEnablePeerAccess(1, 0) == invalid_param);  // not the current device itself
  CHECK(a.aclrtDeviceEnablePeerAccess(device_count, 0) == invalid_device);
  CHECK(a.aclrtDeviceEnablePeerAccess(0, 1) == invalid_param);  // flags is reserved: 0
  CHECK(a.aclrtDeviceDisablePeerAccess(0) == invalid_param);    // not enabled

  // Without access from device 1 to device 0, the copy is refused and nothing is written.
  CHECK(a.aclrtMemcpy(one.pointer, 64, zero.pointer, 64, keel::acl::memcpy_kind::device_to_device) ==
        invalid_param);
  unsigned char back[64] = {};
  REQUIRE(a.aclrtMemcpy(back, 64, one.pointer, 64, keel::acl::memcpy_kind::device_to_host) == ok);
  CHECK(back[0] == 0);  // the copy did not run

  // One direction: 1 -> 0 enabled, 0 -> 1 still not.
  REQUIRE(a.aclrtDeviceEnablePeerAccess(0, 0) == ok);
  std::int32_t status = -1;
  REQUIRE(a.aclrtDevicePeerAccessStatus(1, 0, &status) == ok);
  CHECK(status == 1);
  REQUIRE(a.aclrtDevicePeerAccessStatus(0, 1, &status) == ok);
  CHECK(status == 0);
  REQUIRE(a.aclrtMemcpy(one.pointer, 64, zero.pointer, 64, keel::acl::memcpy_kind::device_to_device) == ok);
  REQUIRE(a.aclrtMemcpy(back, 64, one.pointer, 64, keel::acl::memcpy_kind::device_to_host) == ok);
  CHECK(back[63] == 0x5a);

  // Stream-ordered: on a stream of device 1 (the destination's), as on device 0's
  // only with access from 0 to 1.
  keel::acl::stream_handle s1 = nullptr;
  REQUIRE(a.aclrtCreateStream(&s1) == ok);
  REQUIRE(a.aclrtMemcpyAsync(zero.pointer, 64, one.pointer, 64, keel::acl::memcpy_kind::device_to_device, s1) == ok);
  REQUIRE(a.aclrtSynchronizeStream(s1) == ok);
  on_device(0, [&] {
    keel::acl::stream_handle s0 = nullptr;
    REQUIRE(a.aclrtCreateStream(&s0) == ok);
    CHECK(a.aclrtMemcpyAsync(one.pointer, 64, zero.pointer, 64, keel::acl::memcpy_kind::device_to_device, s0) ==
          invalid_param);
    REQUIRE(a.aclrtDeviceEnablePeerAccess(1, 0) == ok);
    CHECK(a.aclrtMemcpyAsync(one.pointer, 64, zero.pointer, 64, keel::acl::memcpy_kind::device_to_device, s0) == ok);
    CHECK(a.aclrtSynchronizeStream(s0) == ok);
    CHECK(a.aclrtDeviceDisablePeerAccess(1) == ok);
    CHECK(a.aclrtDestroyStream(s0) == ok);
  });
  // A copy between devices 0 and 1 made by device 2 is on neither's stream.
  on_device(2, [&] {
    REQUIRE(a.aclrtDeviceEnablePeerAccess(0, 0) == ok);
    REQUIRE(a.aclrtDeviceEnablePeerAccess(1, 0) == ok);
    CHECK(a.aclrtMemcpy(one.pointer, 64, zero.pointer, 64, keel::acl::memcpy_kind::device_to_device) ==
          stream_context);
    CHECK(a.aclrtDeviceDisablePeerAccess(0) == ok);
    CHECK(a.aclrtDeviceDisablePeerAccess(1) == ok);
  });
  REQUIRE(a.aclrtDeviceDisablePeerAccess(0) == ok);
  CHECK(a.aclrtMemcpy(one.pointer, 64, zero.pointer, 64, keel::acl::memcpy_kind::device_to_device) ==
        invalid_param);
  CHECK(a.aclrtDestroyStream(s1) == ok);
}

TEST_CASE("acl C API: each device counts its own memory", "[acl][multi_device]") {
  const keel::acl::api& a = api();
  constexpr std::size_t mib = std::size_t{1} << 20;
  std::size_t free0 = 0, total0 = 0, free3 = 0, total3 = 0, after0 = 0, after3 = 0, total = 0;
  REQUIRE(a.aclrtSetDevice(0) == ok);
  REQUIRE(a.aclrtGetMemInfo(keel::acl::mem_attr::hbm, &free0, &total0) == ok);
  REQUIRE(a.aclrtSetDevice(3) == ok);
  REQUIRE(a.aclrtGetMemInfo(keel::acl::mem_attr::hbm, &free3, &total3) == ok);
  CHECK(total0 == total3);
  std::int64_t reported = 0;
  REQUIRE(a.aclrtGetDeviceInfo(3, keel::acl::device_attribute::total_global_mem_size, &reported) == ok);
  CHECK(static_cast<std::size_t>(reported) == total3);
  {
    device_memory held(3, 4 * mib);
    REQUIRE(a.aclrtGetMemInfo(keel::acl::mem_attr::hbm, &after3, &total) == ok);
    CHECK(free3 - after3 == 4 * mib);
    REQUIRE(a.aclrtSetDevice(0) == ok);
    REQUIRE(a.aclrtGetMemInfo(keel::acl::mem_attr::hbm, &after0, &total) == ok);
    CHECK(after0 == free0);  // device 0 holds none of it
  }
  REQUIRE(a.aclrtSetDevice(3) == ok);
  REQUIRE(a.aclrtGetMemInfo(keel::acl::mem_attr::hbm, &after3, &total) == ok);
  CHECK(after3 == free3);
  // More than a device has is that device's out-of-memory, whatever the others hold.
  void* p = nullptr;
  CHECK(a.aclrtMalloc(&p, total3 + 1, keel::acl::malloc_policy::huge_first) == 207001);
  CHECK(p == nullptr);
}

// ---- keel's backends with eight devices ---------------------------------------

namespace {
struct host {
  using backend = keel::host::backend;
  KEEL_RUNTIME_HANDLE_ALIASES(backend)
  static keel::host::device& device(int id) {
    static std::unique_ptr<keel::host::device> made[device_count];
    static const bool filled = [] {
      for (auto& d : made) d = std::make_unique<keel::host::device>(keel::host::device_options{1});
      return true;
    }();
    (void)filled;
    return *made[id];
  }
};
struct acl {
  using backend = keel::acl::backend;
  KEEL_RUNTIME_HANDLE_ALIASES(backend)
  static keel::acl::device& device(int id) {
    static std::unique_ptr<keel::acl::device> made[device_count];
    static const bool filled = [] {
      made[0].reset();  // device 0 is the one the C API tests share
      for (int i = 1; i < device_count; ++i)
        made[i] = std::make_unique<keel::acl::device>(keel::acl::device_options{i, KEEL_ACL_EMULATION_DIR});
      return true;
    }();
    (void)filled;
    return id == 0 ? device0() : *made[id];
  }
};
}  // namespace

TEMPLATE_TEST_CASE("several devices: each runs its own streams, from its own thread and from one", "[multi_device]",
                   host, acl) {
  using stream = typename TestType::stream;
  using event = typename TestType::event;
  using device_buffer = typename TestType::device_buffer;
  std::vector<std::thread> threads;
  std::vector<std::vector<int>> back(device_count, std::vector<int>(16, 0));
  for (int id = 0; id < device_count; ++id)
    threads.emplace_back([&, id] {
      stream s{TestType::device(id)};
      device_buffer buffer(s, 16 * sizeof(int));
      std::vector<int> values(16, id + 1);
      s.copy_async(buffer.data(), values.data(), buffer.size(), keel::copy_kind::host_to_device);
      event done{TestType::device(id)};
      done.record(s);
      stream reader{TestType::device(id)};
      reader.wait(done);
      reader.copy_async(back[static_cast<std::size_t>(id)].data(), buffer.data(), buffer.size(),
                        keel::copy_kind::device_to_host);
      reader.synchronize();
    });
  for (auto& t : threads) t.join();
  for (int id = 0; id < device_count; ++id) CHECK(back[static_cast<std::size_t>(id)][15] == id + 1);

  // One thread driving two devices in turn (keel makes each current as it calls).
  stream first{TestType::device(1)}, second{TestType::device(2)};
  device_buffer on_first(first, sizeof(int)), on_second(second, sizeof(int));
  const int seven = 7, eight = 8;
  int from_first = 0, from_second = 0;
  first.copy_async(on_first.data(), &seven, sizeof seven, keel::copy_kind::host_to_device);
  second.copy_async(on_second.data(), &eight, sizeof eight, keel::copy_kind::host_to_device);
  first.copy_async(&from_first, on_first.data(), sizeof from_first, keel::copy_kind::device_to_host);
  second.copy_async(&from_second, on_second.data(), sizeof from_second, keel::copy_kind::device_to_host);
  first.synchronize();
  second.synchronize();
  CHECK(from_first == 7);
  CHECK(from_second == 8);
}

TEST_CASE("acl C API: a notify orders two streams of its device", "[acl][multi_device]") {
  const keel::acl::api& a = api();
  REQUIRE(a.aclrtSetDevice(0) == ok);
  keel::acl::notify_handle n = nullptr, other = nullptr;
  CHECK(a.aclrtCreateNotify(&n, 2) == invalid_param);  // ACL_NOTIFY_DEFAULT or ACL_NOTIFY_DEVICE_USE_ONLY
  REQUIRE(a.aclrtCreateNotify(&n, 0) == ok);
  REQUIRE(a.aclrtCreateNotify(&other, 1) == ok);
  std::uint32_t id = 0, other_id = 0;
  REQUIRE(a.aclrtGetNotifyId(n, &id) == ok);
  REQUIRE(a.aclrtGetNotifyId(other, &other_id) == ok);
  CHECK(id != other_id);

  keel::acl::stream_handle producer = nullptr, consumer = nullptr;
  REQUIRE(a.aclrtCreateStream(&producer) == ok);
  REQUIRE(a.aclrtCreateStream(&consumer) == ok);
  alignas(8) std::uint64_t value = 0;
  // The consumer waits for the notify, then reads what the producer wrote before recording it.
  REQUIRE(a.aclrtWaitAndResetNotify(n, consumer, 0) == ok);
  int seen = -1;
  REQUIRE(a.aclrtMemcpyAsync(&seen, sizeof seen, &value, sizeof seen, keel::acl::memcpy_kind::host_to_host,
                             consumer) == ok);
  keel::acl::stream_status status = keel::acl::stream_status::complete;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE(a.aclrtStreamQuery(consumer, &status) == ok);
  CHECK(status == keel::acl::stream_status::not_ready);  // held by the wait
  REQUIRE(a.aclrtValueWrite(&value, 42, 0, producer) == ok);
  REQUIRE(a.aclrtRecordNotify(n, producer) == ok);
  REQUIRE(a.aclrtSynchronizeStream(consumer) == ok);
  CHECK(seen == 42);

  // The wait reset it: a second wait times out (1 s) and fails its stream.
  REQUIRE(a.aclrtWaitAndResetNotify(n, consumer, 1) == ok);
  CHECK(a.aclrtSynchronizeStream(consumer) == 507015);  // ACL_ERROR_RT_AICORE_EXCEPTION
  // A record, then a batch reset: the next wait would wait again.
  REQUIRE(a.aclrtRecordNotify(other, producer) == ok);
  REQUIRE(a.aclrtSynchronizeStream(producer) == ok);
  keel::acl::notify_handle both[2] = {n, other};
  CHECK(a.aclrtNotifyBatchReset(both, 0) == invalid_param);
  REQUIRE(a.aclrtNotifyBatchReset(both, 2) == ok);
  REQUIRE(a.aclrtWaitAndResetNotify(other, consumer, 1) == ok);
  CHECK(a.aclrtSynchronizeStream(consumer) == 507015);

  // A notify serves its own device's streams.
  on_device(1, [&] {
    keel::acl::stream_handle there = nullptr;
    REQUIRE(a.aclrtCreateStream(&there) == ok);
    CHECK(a.aclrtRecordNotify(n, there) == stream_context);
    CHECK(a.aclrtDestroyStream(there) == ok);
  });
  CHECK(a.aclrtDestroyNotify(n) == ok);
  CHECK(a.aclrtDestroyNotify(n) == 107017);  // ACL_ERROR_RT_INVALID_HANDLE
  CHECK(a.aclrtRecordNotify(n, producer) == 107017);
  CHECK(a.aclrtDestroyNotify(other) == ok);
  CHECK(a.aclrtDestroyStream(producer) == ok);
  CHECK(a.aclrtDestroyStream(consumer) == ok);
}

TEST_CASE("acl C API: each device has its own core limits for the process", "[acl][multi_device]") {
  const keel::acl::api& a = api();
  std::uint32_t cores = 0;
  REQUIRE(a.aclrtGetDeviceResLimit(2, keel::acl::device_resource::vector_core, &cores) == ok);
  CHECK(cores == 40u);  // the device's own, without a limit
  CHECK(a.aclrtSetDeviceResLimit(2, keel::acl::device_resource::vector_core, 41) == invalid_param);
  CHECK(a.aclrtSetDeviceResLimit(2, keel::acl::device_resource::vector_core, 0) == invalid_param);
  CHECK(a.aclrtSetDeviceResLimit(device_count, keel::acl::device_resource::vector_core, 8) == invalid_device);
  REQUIRE(a.aclrtSetDeviceResLimit(2, keel::acl::device_resource::vector_core, 8) == ok);
  REQUIRE(a.aclrtSetDeviceResLimit(2, keel::acl::device_resource::cube_core, 4) == ok);
  REQUIRE(a.aclrtGetDeviceResLimit(2, keel::acl::device_resource::vector_core, &cores) == ok);
  CHECK(cores == 8u);
  REQUIRE(a.aclrtGetDeviceResLimit(3, keel::acl::device_resource::vector_core, &cores) == ok);
  CHECK(cores == 40u);  // another device keeps its own
  on_device(2, [&] {
    std::uint32_t mine = 0;
    REQUIRE(a.aclrtGetResInCurrentThread(keel::acl::device_resource::cube_core, &mine) == ok);
    CHECK(mine == 4u);
  });
  REQUIRE(a.aclrtResetDeviceResLimit(2) == ok);
  REQUIRE(a.aclrtGetDeviceResLimit(2, keel::acl::device_resource::cube_core, &cores) == ok);
  CHECK(cores == 20u);
}

TEST_CASE("acl C API: each device has its own limits", "[acl][multi_device]") {
  const keel::acl::api& a = api();
  // External events are scarce on a device (64 each here): device 4 running
  // out leaves device 5 its own.
  std::vector<keel::acl::event_handle> made;
  keel::acl::status last = ok;
  REQUIRE(a.aclrtSetDevice(4) == ok);
  for (int i = 0; i < 1000 && last == ok; ++i) {
    keel::acl::event_handle e = nullptr;
    last = a.aclrtCreateEventWithFlag(&e, keel::acl::event_flags::external);
    if (last == ok) made.push_back(e);
  }
  CHECK(last == 207007);  // ACL_ERROR_RT_NO_EVENT_RESOURCE
  CHECK(made.size() == 64u);
  on_device(5, [&] {
    keel::acl::event_handle e = nullptr;
    CHECK(a.aclrtCreateEventWithFlag(&e, keel::acl::event_flags::external) == ok);
    CHECK(a.aclrtDestroyEvent(e) == ok);
  });
  for (keel::acl::event_handle e : made) CHECK(a.aclrtDestroyEvent(e) == ok);
}
