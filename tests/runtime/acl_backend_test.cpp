// SPDX-License-Identifier: Apache-2.0
// What only the ACL backend has, over keel's host emulation of ACL: handles
// made elsewhere through the raw C API and adopted, task counts kept in
// keel's books, buffers released in stream order without a synchronize, the
// per-thread device rule, and the rule inside an aclnn launch.
#include <catch2/catch.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "keel/acl/backend.hpp"
#include "keel/acl/ops.hpp"
#include "keel/host/host.hpp"
#include "keel/testing/conformance/support.hpp"

#ifndef KEEL_ACL_EMULATION_DIR
#error "KEEL_ACL_EMULATION_DIR: the directory of the emulation's libascendcl.so"
#endif

namespace {

keel::acl::device& acl_device() {
  static keel::acl::device dev{keel::acl::device_options{0, KEEL_ACL_EMULATION_DIR}};
  return dev;
}

keel::ops::tensor floats_view(void* data, std::int64_t n) {
  return keel::ops::tensor(data, keel::ops::dtype::float32, {n});
}

}  // namespace

TEST_CASE("acl backend: streams and events made with the raw C API are adopted, never destroyed", "[acl]") {
  auto& dev = acl_device();
  const keel::acl::api& api = dev.functions();
  keel::acl::stream_handle raw_stream = nullptr;
  keel::acl::event_handle raw_event = nullptr;
  REQUIRE(api.aclrtCreateStream(&raw_stream) == 0);
  REQUIRE(api.aclrtCreateEventWithFlag(&raw_event, keel::acl::event_flags::sync) == 0);
  {
    keel::acl::stream_ref s{dev, raw_stream};
    CHECK(s == keel::acl::stream_ref(dev, raw_stream));  // one record per ACL handle
    CHECK(s.native_handle() == raw_stream);
    CHECK(keel::acl::stream_ref{}.native_handle() == nullptr);
    CHECK(&s.device() == &dev);
    keel::acl::stream mine{dev};
    CHECK(s.id() != mine.id());
    keel::acl::event_ref e{dev, raw_event};
    CHECK_THROWS_AS(keel::acl::event_ref(dev, raw_event, keel::event_flags::timing), keel::error);
    CHECK(e.native_handle() == raw_event);

    // Launch, record and wait on the adopted handles.
    keel::acl::device_buffer x(s, 8 * sizeof(float)), y(s, 8 * sizeof(float));
    std::vector<float> ones(8, 1.0f), back(8, 0.0f);
    s.copy_async(x.data(), ones.data(), x.size(), keel::copy_kind::host_to_device);
    s.copy_async(y.data(), ones.data(), y.size(), keel::copy_kind::host_to_device);
    auto add = keel::acl::prepare_add(dev, floats_view(x.data(), 8), floats_view(y.data(), 8),
                                      keel::ops::scalar(2.0f), floats_view(y.data(), 8));
    keel::acl::run_on(s, add);  // y = x + 2y = 1 + 2 * 1
    e.record(s);
    mine.wait(e);
    mine.copy_async(back.data(), y.data(), y.size(), keel::copy_kind::device_to_host);
    mine.synchronize();
    CHECK(back[7] == 3.0f);
    CHECK(e.query());

    // Capture on the adopted stream: keel's capture books live in its record.
    CHECK_FALSE(s.is_capturing());
    keel::acl::model m;
    {
      keel::acl::capture_scope capture{s};
      CHECK(s.is_capturing());
      CHECK(s.capture_status().mode == keel::capture_mode::global);
      keel::acl::capture_status st = keel::acl::capture_status::none;
      keel::acl::model_handle during = nullptr;
      REQUIRE(api.aclmdlRICaptureGetInfo(raw_stream, &st, &during) == 0);  // ACL sees the same capture
      CHECK(st == keel::acl::capture_status::active);
      keel::acl::run_on(s, add);
      m = capture.end();
    }
    CHECK_FALSE(s.is_capturing());
    m.execute(mine);  // y = 1 + 2 * 3 = 7
    e.record(mine);
    s.wait(e);
    m.execute(s);     // then 1 + 2 * 7 = 15, on the adopted stream after mine
    s.synchronize();
    s.copy(back.data(), y.data(), y.size(), keel::copy_kind::device_to_host);
    CHECK(back[0] == 15.0f);

    // An owner takes the viewed record; released, the device holds it again.
    {
      keel::acl::stream owner = keel::acl::stream::from_native_handle(dev, s.native_handle());
      CHECK(owner == s);
      CHECK(owner.release() == raw_stream);
    }
    CHECK(api.aclrtSynchronizeStream(raw_stream) == 0);
  }
  // keel's views are gone; the raw handles are still ACL's, and live.
  CHECK(api.aclrtSynchronizeStream(raw_stream) == 0);
  keel::acl::event_recorded_status st = keel::acl::event_recorded_status::not_ready;
  CHECK(api.aclrtQueryEventStatus(raw_event, &st) == 0);
  dev.forget_stream(raw_stream);
  dev.forget_event(raw_event);
  CHECK(api.aclrtDestroyEvent(raw_event) == 0);
  CHECK(api.aclrtDestroyStream(raw_stream) == 0);
  const keel::acl::stream_handle no_stream = nullptr;
  const keel::acl::event_handle no_event = nullptr;
  CHECK_THROWS_AS(keel::acl::stream_ref(dev, no_stream), keel::error);
  CHECK_THROWS_AS(keel::acl::event_ref(dev, no_event), keel::error);
}

TEST_CASE("acl backend: an adopted external event records and waits with the external flags", "[acl]") {
  auto& dev = acl_device();
  const keel::acl::api& api = dev.functions();
  keel::acl::event_handle raw = nullptr;
  REQUIRE(api.aclrtCreateEventWithFlag(&raw, keel::acl::event_flags::external) == 0);
  {
    keel::acl::event_ref e{dev, raw, keel::event_flags::external};
    CHECK(e.flags() == keel::event_flags::external);
    keel::acl::stream a{dev}, b{dev};
    b.wait(e);        // external: b blocks until the event is recorded
    e.record(a);      // with ACL_EVENT_RECORD_EXTERNAL
    b.synchronize();  // returns: the wait saw the record
    b.reset_event(e);
    b.synchronize();
  }
  dev.forget_event(raw);
  CHECK(api.aclrtDestroyEvent(raw) == 0);
}

namespace {

// One capture, the same on every backend: a copy, a task group of two
// launches, a launch, and a fork onto a second stream with one launch.
template <class B>
void capture_counted(typename B::device_type& dev, std::size_t& tasks, std::size_t& groups, std::size_t& group_size) {
  keel::basic_stream<B> s{dev}, t{dev};
  keel::basic_event<B> fork{dev, keel::event_flags::default_}, join{dev, keel::event_flags::default_};
  keel::basic_device_buffer<B> a(s, 64), b(s, 64);
  s.synchronize();
  auto noop = [](auto&) {};
  keel::basic_model<B> m;
  keel::basic_task_group<B> g;
  {
    keel::basic_capture_scope<B> capture{s};
    s.copy_async(b.span(), a.span());
    {
      keel::basic_task_group_scope<B> mark{s};
      s.launch(keel::kernel_kind{"noop"}, noop);
      s.launch(keel::kernel_kind{"noop"}, noop);
      g = mark.end();
    }
    s.launch(keel::kernel_kind{"noop"}, noop);
    fork.record(s);
    t.wait(fork);
    t.launch(keel::kernel_kind{"noop"}, noop);
    join.record(t);
    s.wait(join);
    m = capture.end();
  }
  tasks = m.task_count();
  groups = m.group_count();
  group_size = g.size();
  m.execute(s);
  s.synchronize();
}

}  // namespace

namespace {

// A task group marked on a stream that joined the capture (not the one that
// began it): it belongs to the model, and an update replaces its launch.
template <class B>
void group_on_forked_stream(typename B::device_type& dev, std::size_t& groups, std::size_t& group_size,
                            bool& alive_after_update) {
  keel::basic_stream<B> s{dev}, t{dev}, u{dev};
  keel::basic_event<B> fork{dev, keel::event_flags::default_}, join{dev, keel::event_flags::default_};
  auto noop = [](auto&) {};
  keel::basic_model<B> m;
  keel::basic_task_group<B> g;
  {
    keel::basic_capture_scope<B> capture{s};
    fork.record(s);
    t.wait(fork);
    {
      keel::basic_task_group_scope<B> mark{t};
      t.launch(keel::kernel_kind{"noop"}, noop);
      g = mark.end();
    }
    join.record(t);
    s.wait(join);
    m = capture.end();
  }
  groups = m.group_count();
  group_size = g.size();
  {
    keel::basic_update_scope<B> update{u, g};
    u.launch(keel::kernel_kind{"noop"}, noop);
    update.end();
  }
  alive_after_update = g.model_alive();
  m.execute(s);
  s.synchronize();
  u.synchronize();
}

}  // namespace

TEST_CASE("acl backend: a task group marked on a forked stream belongs to the capture's model", "[acl]") {
  std::size_t host_groups = 0, host_size = 0, groups = 0, size = 0;
  bool host_alive = false, alive = false;
  group_on_forked_stream<keel::host::backend>(keel::host::default_device(), host_groups, host_size, host_alive);
  group_on_forked_stream<keel::acl::backend>(acl_device(), groups, size, alive);
  CHECK(host_groups == 1);
  CHECK(host_size == 1);
  CHECK(host_alive);
  CHECK(groups == host_groups);
  CHECK(size == host_size);
  CHECK(alive == host_alive);
}

TEST_CASE("acl backend: task_count and task_group::size count keel's tasks as the host backend does", "[acl]") {
  std::size_t host_tasks = 0, host_groups = 0, host_size = 0;
  capture_counted<keel::host::backend>(keel::host::default_device(), host_tasks, host_groups, host_size);
  std::size_t tasks = 0, groups = 0, size = 0;
  capture_counted<keel::acl::backend>(acl_device(), tasks, groups, size);
  CHECK(host_tasks == 4);  // copy, group, launch, the forked launch
  CHECK(host_groups == 1);
  CHECK(host_size == 2);
  CHECK(tasks == host_tasks);
  CHECK(groups == host_groups);
  CHECK(size == host_size);

  // Work issued outside any capture is not counted anywhere.
  keel::acl::stream s{acl_device()};
  s.launch(keel::kernel_kind{"noop"}, [](keel::acl::launch_context&) {});
  keel::acl::model empty;
  {
    keel::acl::capture_scope capture{s};
    empty = capture.end();
  }
  CHECK(empty.task_count() == 0);
}

TEST_CASE("acl backend: a kernel whose body fails takes its count back, and one that ended its capture first does not",
          "[acl]") {
  // An ACL kernel's body runs at issue, after the device books' lock: a
  // failure gives its task count back under the lock again, and only to the
  // capture it counted in (here the body ends that capture first; the
  // books it counted in are gone, which AddressSanitizer would catch).
  keel::acl::stream s{acl_device()};
  keel::acl::model m;
  {
    keel::acl::capture_scope capture{s};
    s.launch(keel::kernel_kind{"noop"}, [](keel::acl::launch_context&) {});
    CHECK_THROWS_AS(s.launch(keel::kernel_kind{"fails"},
                             [](keel::acl::launch_context&) { throw std::runtime_error("the body failed"); }),
                    std::runtime_error);
    s.launch(keel::kernel_kind{"noop"}, [](keel::acl::launch_context&) {});
    m = capture.end();
  }
  CHECK(m.task_count() == 2);  // the failed launch is not counted

  keel::acl::model ended;
  keel::acl::capture_scope capture{s};
  s.launch(keel::kernel_kind{"noop"}, [](keel::acl::launch_context&) {});
  CHECK_THROWS_AS(s.launch(keel::kernel_kind{"ends then fails"},
                           [&](keel::acl::launch_context&) {
                             ended = capture.end();
                             throw std::runtime_error("the body failed after the capture ended");
                           }),
                  std::runtime_error);
  REQUIRE(ended);
  CHECK(ended.task_count() == 2);  // counted when the capture ended; its books are the model's now
  CHECK_FALSE(s.is_capturing());
  s.launch(keel::kernel_kind{"noop"}, [](keel::acl::launch_context&) {});  // the stream runs work again
  s.synchronize();
  ended.execute(s);
  s.synchronize();
}

TEST_CASE("acl backend: a buffer's release returns at once and its memory is not reused before its stream passes",
          "[acl]") {
  auto& dev = acl_device();
  const keel::acl::api& api = dev.functions();
  constexpr std::size_t n = 4096;
  keel::acl::stream s{dev}, other{dev};
  keel::acl::event gate{dev, keel::event_flags::external};
  std::vector<float> ones(n, 1.0f), back(n, 0.0f);
  {
    keel::acl::device_buffer doomed(s, n * sizeof(float));
    s.copy_async(doomed.data(), ones.data(), doomed.size(), keel::copy_kind::host_to_device);
    s.synchronize();
    s.wait(gate);  // the stream stalls here until `other` records the gate
    // Reads `doomed` without owning it: only the stream-ordered release keeps it.
    s.copy_async(back.data(), doomed.data(), doomed.size(), keel::copy_kind::device_to_host);
  }  // released while the copy waits: returns without waiting for s (waiting would never end)
  CHECK(dev.pending_releases() == 1);
  // New allocations of the same size must not get the released memory yet.
  std::vector<keel::acl::device_buffer> fresh;
  for (int i = 0; i < 8; ++i) {
    fresh.emplace_back(other, n * sizeof(float));
    REQUIRE(api.aclrtMemset(fresh.back().data(), fresh.back().size(), 0x7F, fresh.back().size()) == 0);
  }
  { keel::acl::device_buffer quick(other, 64); }  // released on a stream that is not stalled
  other.synchronize();
  CHECK(dev.pending_releases() == 1);  // freed; the stalled stream's release still waits
  gate.record(other);
  s.synchronize();
  CHECK(back[0] == 1.0f);
  CHECK(back[n - 1] == 1.0f);
  CHECK(dev.pending_releases() == 0);  // freed once the stream passed the release

  // Captured: the memory lives as long as the model.
  keel::acl::model m;
  std::vector<float> out(n, 0.0f);
  {
    keel::acl::device_buffer captured(s, n * sizeof(float));
    s.copy_async(captured.data(), ones.data(), captured.size(), keel::copy_kind::host_to_device);
    s.synchronize();
    keel::acl::capture_scope capture{s};
    s.copy_async(out.data(), captured.data(), captured.size(), keel::copy_kind::device_to_host);
    captured.reset();  // released inside the capture: the model keeps it
    m = capture.end();
  }
  CHECK(dev.pending_releases() == 0);
  m.execute(s);
  s.synchronize();
  CHECK(out[n - 1] == 1.0f);
}

TEST_CASE("acl backend: raw calls need aclrtSetDevice on their thread while keel's handles work from any thread",
          "[acl]") {
  auto& dev = acl_device();
  const keel::acl::api& api = dev.functions();
  keel::acl::stream made_here{dev};
  keel::acl::stream_handle raw = nullptr;
  REQUIRE(api.aclrtCreateStream(&raw) == 0);

  keel::acl::status fresh_create = -1, fresh_sync = -1, after_set = -1;
  std::string fresh_message;
  std::thread([&] {  // a thread that never called aclrtSetDevice
    keel::acl::stream_handle s = nullptr;
    fresh_create = api.aclrtCreateStream(&s);
    fresh_sync = api.aclrtSynchronizeStream(raw);
    const char* m = api.aclGetRecentErrMsg();
    fresh_message = m == nullptr ? "" : m;
    if (api.aclrtSetDevice(0) == 0) after_set = api.aclrtSynchronizeStream(raw);
  }).join();
  CHECK(fresh_create == 107002);  // ACL_ERROR_RT_CONTEXT_NULL
  CHECK(fresh_sync == 107002);
  CHECK(fresh_message.find("aclrtSetDevice") != std::string::npos);
  CHECK(after_set == 0);

  bool worked = false;
  std::thread([&] {  // keel sets the device itself on the first call from a thread
    keel::acl::stream s{dev};
    keel::acl::event e{dev, keel::event_flags::default_};
    std::vector<float> src(16, 4.0f), dst(16, 0.0f);
    keel::acl::device_buffer b(made_here, src.size() * sizeof(float));
    made_here.copy_async(b.data(), src.data(), b.size(), keel::copy_kind::host_to_device);
    e.record(made_here);
    s.wait(e);
    s.copy_async(dst.data(), b.data(), b.size(), keel::copy_kind::device_to_host);
    keel::acl::stream_ref adopted{dev, raw};
    adopted.synchronize();
    s.synchronize();
    worked = dst[15] == 4.0f;
  }).join();
  CHECK(worked);
  dev.forget_stream(raw);
  CHECK(api.aclrtDestroyStream(raw) == 0);
}

// An aclnn launch borrows its executor's plan (the body runs when issued);
// one staged into an update runs at update end, so the staging must own it.
TEST_CASE("acl backend: an aclnn launch staged into an update keeps its plan after its executor is gone", "[acl]") {
  auto& dev = acl_device();
  keel::acl::stream s{dev}, u{dev};
  keel::acl::device_buffer x(s, 8 * sizeof(float)), out(s, 8 * sizeof(float));
  std::vector<float> ones(8, 1.0f), back(8, 0.0f);
  s.copy_async(x.data(), ones.data(), x.size(), keel::copy_kind::host_to_device);
  s.synchronize();
  auto add = keel::acl::prepare_add(dev, floats_view(x.data(), 8), floats_view(x.data(), 8), keel::ops::scalar(1.0f),
                                    floats_view(out.data(), 8));
  keel::acl::model m;
  keel::acl::task_group g;
  {
    keel::acl::capture_scope capture{s};
    keel::acl::task_group_scope mark{s};
    keel::acl::run_on(s, add);
    g = mark.end();
    m = capture.end();
  }
  {
    keel::acl::update_scope update{u, g};
    {
      auto scaled = keel::acl::prepare_add(dev, floats_view(x.data(), 8), floats_view(x.data(), 8),
                                           keel::ops::scalar(5.0f), floats_view(out.data(), 8));
      keel::acl::run_on(u, scaled);
    }  // the executor, and its plan unless the staged launch owns it, are gone
    update.end();
  }
  u.synchronize();
  m.execute(s);
  s.copy_async(back.data(), out.data(), out.size(), keel::copy_kind::device_to_host);
  s.synchronize();
  CHECK(back[0] == 6.0f);  // 1 + 5 * 1: the update's launch ran
  CHECK(back[7] == 6.0f);
}

TEST_CASE("acl backend: a rule broken inside an aclnn launch keeps its own status, not just 361001", "[acl]") {
  auto& dev = acl_device();
  const keel::acl::api& api = dev.functions();
  keel::acl::stream s{dev}, other{dev};
  keel::acl::device_buffer x(s, 8 * sizeof(float));
  s.synchronize();
  auto add = keel::acl::prepare_add(dev, floats_view(x.data(), 8), floats_view(x.data(), 8), keel::ops::scalar(1.0f),
                                    floats_view(x.data(), 8));
  keel::acl::capture_scope first{s};
  keel::acl::capture_scope second{other};
  keel::acl::task_group_scope mark{s};
  // An error an earlier call left on this thread (keel reads the thread's
  // last error only after a 361001, it does not clear it at each launch).
  (void)api.aclrtGetLastError(keel::acl::last_error_level::thread);
  // keel's checked layer refuses the rule first, before the body reaches ACL.
  try {
    keel::acl::run_on(other, add);  // no other capturing stream may issue work while s marks a group
    FAIL("the launch was accepted");
  } catch (const keel::error& e) {
    CHECK(e.code() == keel::errc::capture_violation);
    CHECK(std::string(e.api()) == "keel::stream::launch");
    CHECK(std::string(e.rule()).find("marks a task group") != std::string::npos);
  }
  CHECK(api.aclrtGetLastError(keel::acl::last_error_level::thread) == 0);  // ACL was not asked
  // A record keel does not know to be capturing (another framework's keel,
  // with a device object of its own, viewing the same aclrtStream; one device
  // object has one record per handle): ACL refuses inside the launch, and
  // keel keeps ACL's status.
  const keel::acl::stream_handle raw_other = other.native_handle();
  keel::acl::device elsewhere{keel::acl::device_options{0, KEEL_ACL_EMULATION_DIR}};
  keel::acl::stream_ref foreign{elsewhere, raw_other};
  try {
    keel::acl::run_on(foreign, add);
    FAIL("the launch was accepted");
  } catch (const keel::error& e) {
    CHECK(e.code() == keel::acl::make_status_code(107030));  // ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT
    CHECK(e.code() == keel::acl::condition(keel::errc::capture_violation));
    CHECK(std::string(e.api()) == "aclnnAdd");
    const std::string rule = e.rule();
    CHECK(rule.find("361001") != std::string::npos);
    CHECK(rule.find("ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT") != std::string::npos);
    CHECK(rule.find("marks a task group") != std::string::npos);  // the runtime's own explanation
  }
  CHECK(api.aclrtGetLastError(keel::acl::last_error_level::thread) == 0);  // keel took it
  // The raw C API: 361001 from the operator, the runtime's status kept for the thread.
  ::aclOpExecutor* ex = nullptr;
  std::uint64_t ws = 0;
  const std::int64_t shape[1] = {8}, strides[1] = {1};
  ::aclTensor* t = api.aclCreateTensor(shape, 1, keel::acl::data_type::float32, strides, 0, keel::acl::format::nd,
                                       shape, 1, x.data());
  ::aclScalar* one = nullptr;
  float alpha = 1.0f;
  one = api.aclCreateScalar(&alpha, keel::acl::data_type::float32);
  REQUIRE(api.aclnnAddGetWorkspaceSize(t, t, one, t, &ws, &ex) == 0);
  CHECK(api.aclnnAdd(nullptr, 0, ex, other.native_handle()) == 361001);
  CHECK(api.aclrtPeekAtLastError(keel::acl::last_error_level::thread) == 107030);
  CHECK(api.aclrtPeekAtLastError(keel::acl::last_error_level::thread) == 107030);  // peek keeps it
  CHECK(api.aclrtGetLastError(keel::acl::last_error_level::thread) == 107030);
  CHECK(api.aclrtGetLastError(keel::acl::last_error_level::thread) == 0);  // get cleared it
  CHECK(api.aclDestroyAclOpExecutor(ex) == 0);
  CHECK(api.aclDestroyScalar(one) == 0);
  CHECK(api.aclDestroyTensor(t) == 0);
  elsewhere.forget_stream(raw_other);
}

TEST_CASE("acl emulation: aclmdlRICaptureThreadExchangeMode sets the calling thread's capture mode", "[acl]") {
  auto& dev = acl_device();
  const keel::acl::api& api = dev.functions();
  using mode = keel::acl::capture_mode;
  char a[16] = {}, b[16] = {1};
  const auto memcpy_status = [&] {
    return api.aclrtMemcpy(a, sizeof a, b, sizeof b, keel::acl::memcpy_kind::host_to_host);
  };

  mode m = mode::relaxed;
  REQUIRE(api.aclmdlRICaptureThreadExchangeMode(&m) == 0);
  CHECK(m == mode::global);  // every thread starts in global mode
  REQUIRE(api.aclmdlRICaptureThreadExchangeMode(&m) == 0);  // back to global
  CHECK(m == mode::relaxed);
  CHECK(api.aclmdlRICaptureThreadExchangeMode(nullptr) == 100000);
  mode bad = static_cast<mode>(7);
  CHECK(api.aclmdlRICaptureThreadExchangeMode(&bad) == 100000);

  keel::acl::stream s{dev};
  SECTION("a global capture: the capturing thread must switch to relaxed, others to thread-local or relaxed") {
    keel::acl::capture_scope capture{s, keel::capture_mode::global};
    CHECK(memcpy_status() == 107030);  // ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT
    {
      keel::acl::thread_capture_mode_scope relaxed{dev, keel::capture_mode::relaxed};
      CHECK(relaxed.previous() == keel::capture_mode::global);
      CHECK(memcpy_status() == 0);
    }
    CHECK(memcpy_status() == 107030);  // restored
    {
      keel::acl::thread_capture_mode_scope local{dev, keel::capture_mode::thread_local_};
      CHECK(memcpy_status() == 107030);  // its own capture still refuses
    }
    keel::acl::status other_default = -1, other_local = -1;
    std::thread([&] {
      if (api.aclrtSetDevice(0) != 0) return;  // Catch's assertions stay on the test's thread
      other_default = memcpy_status();
      keel::acl::thread_capture_mode_scope local{dev, keel::capture_mode::thread_local_};
      other_local = memcpy_status();
    }).join();
    CHECK(other_default == 107030);
    CHECK(other_local == 0);
  }
  SECTION("a thread-local capture refuses only its own thread, unless it switches to relaxed") {
    keel::acl::capture_scope capture{s, keel::capture_mode::thread_local_};
    CHECK(memcpy_status() == 107030);
    keel::acl::status other = -1;
    std::thread([&] {
      if (api.aclrtSetDevice(0) != 0) return;  // Catch's assertions stay on the test's thread
      other = memcpy_status();
    }).join();
    CHECK(other == 0);
    keel::acl::thread_capture_mode_scope relaxed{dev, keel::capture_mode::relaxed};
    CHECK(memcpy_status() == 0);
  }
  CHECK(memcpy_status() == 0);
}

TEST_CASE("acl backend: native_handle() is ACL's handle, one record per handle, and from_native_handle owns it",
          "[acl][handles]") {
  auto& dev = acl_device();
  const keel::acl::api& api = dev.functions();
  SECTION("a keel stream's native handle is its aclrtStream") {
    keel::acl::stream s{dev};
    keel::acl::stream_status st = keel::acl::stream_status::not_ready;
    CHECK(api.aclrtStreamQuery(s.native_handle(), &st) == 0);  // ACL knows it: it is ACL's handle
    keel::acl::event e{dev};
    e.record(s);
    CHECK(api.aclrtSynchronizeEvent(e.native_handle()) == 0);
    CHECK(keel::acl::stream_ref(dev, s.native_handle()).id() == s.id());  // the same record, not a second one
  }
  SECTION("an owner made from a raw aclrtStream takes it; a second owner is refused; release gives it back") {
    keel::acl::stream_handle raw = nullptr;
    REQUIRE(api.aclrtCreateStream(&raw) == 0);
    keel::acl::stream_ref view{dev, raw};  // the device's record, viewed first
    auto owner = keel::acl::stream::from_native_handle(dev, raw);
    CHECK(owner == view);  // the owner took the viewed record
    KEEL_TESTING_REQUIRE_ERROR(keel::acl::stream::from_native_handle(dev, raw), keel::errc::invalid_parameter,
                       "owns this ACL handle already");
    dev.forget_stream(raw);  // an owned record is not the device's to forget
    CHECK(keel::acl::stream_ref(dev, raw) == owner);
    CHECK(owner.release() == raw);  // the device holds the record again; keel destroys nothing
    dev.forget_stream(raw);
    CHECK(api.aclrtDestroyStream(raw) == 0);  // still alive: ours to destroy
  }
  SECTION("an owner made from a raw aclrtEvent takes its flags, and its record goes with it") {
    keel::acl::event_handle raw = nullptr;
    REQUIRE(api.aclrtCreateEventWithFlag(&raw, keel::acl::event_flags::time_line) == 0);
    {
      auto owner = keel::acl::event::from_native_handle(dev, raw, keel::event_flags::timing);
      CHECK(owner.flags() == keel::event_flags::timing);
      CHECK(keel::acl::event_ref(dev, raw).flags() == keel::event_flags::timing);  // known: flags need not be said
      KEEL_TESTING_REQUIRE_ERROR((keel::acl::event_ref{dev, raw, keel::event_flags::external}), keel::errc::invalid_parameter,
                         "other flags");
    }  // aclrtDestroyEvent: a new event may take the address; keel's registry forgot the old one
    keel::acl::event_handle again = nullptr;
    REQUIRE(api.aclrtCreateEventWithFlag(&again, keel::acl::event_flags::external) == 0);
    CHECK(keel::acl::event_ref(dev, again, keel::event_flags::external).flags() == keel::event_flags::external);
    dev.forget_event(again);
    CHECK(api.aclrtDestroyEvent(again) == 0);
  }
  SECTION("a model or task group keel did not capture has no record") {
    int elsewhere = 0;
    void* const foreign = &elsewhere;  // never dereferenced: the registry does not know it
    KEEL_TESTING_REQUIRE_ERROR((keel::acl::model_ref{dev, foreign}), keel::errc::invalid_parameter, "did not capture");
    KEEL_TESTING_REQUIRE_ERROR(keel::acl::model::from_native_handle(dev, foreign), keel::errc::invalid_parameter,
                       "did not capture");
    KEEL_TESTING_REQUIRE_ERROR((keel::acl::task_group_ref{dev, foreign}), keel::errc::invalid_parameter, "did not mark");
  }
  SECTION("a released model is the device's until forgotten, and its groups then see it dead") {
    keel::acl::stream s{dev};
    std::vector<float> one(1, 1.0f);
    keel::acl::device_buffer x(s, sizeof(float));
    s.copy(x.data(), one.data(), sizeof(float), keel::copy_kind::host_to_device);
    const auto t = keel::ops::tensor(x.data(), keel::ops::dtype::float32, {1});
    keel::acl::model m;
    keel::acl::task_group g;
    {
      keel::acl::capture_scope capture{s};
      {
        keel::acl::task_group_scope mark{s};
        keel::acl::run_on(s, keel::acl::prepare_add(dev, t, t, keel::ops::scalar(1.0f), t));
        g = mark.end();
      }
      m = capture.end();
    }
    const keel::acl::model_handle raw = m.release();
    CHECK(g.model_alive());
    CHECK(keel::acl::model_ref(dev, raw).task_count() == 1);
    dev.forget_model(raw);
    CHECK_FALSE(g.model_alive());  // keel's books say the model is gone
    KEEL_TESTING_REQUIRE_ERROR((keel::acl::model_ref{dev, raw}), keel::errc::invalid_parameter, "did not capture");
    CHECK(api.aclmdlRIDestroy(raw) == 0);  // keel never destroyed it
  }
}
