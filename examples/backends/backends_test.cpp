// SPDX-License-Identifier: Apache-2.0
// The two example backends under keel's conformance kit: the inline backend
// (streams and events only) runs the stream and event layers' suites, the
// tracing decorator over the host backend runs every layer's; and what the
// decorator logs for one capture, update and replay.
#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "inline_backend.hpp"
#include "keel/host/host.hpp"
#include "keel/testing/backend_conformance.hpp"
#include "tracing_backend.hpp"

namespace {

constexpr keel::kernel_kind axpy_kind{"axpy"}, copy_kind{"copy"}, store_kind{"store"};

template <class Context>
void axpy_kernel(Context&, float* out, const float* tmp, const float* other, float alpha) {
  *out = *tmp + alpha * *other;
}
template <class Context>
void copy_kernel(Context&, float* dst, const float* src) {
  *dst = *src;
}
template <class Context>
void store_kernel(Context&, std::atomic<int>* slot, int value) {
  slot->store(value, std::memory_order_relaxed);
}

// The inline backend: every task has run when its launch returns, so the
// suites' tests that hold a stream with a gate are left out.
struct inline_fixture : keel::testing::fixture_defaults {
  using backend = inline_rt::backend;
  KEEL_RUNTIME_STREAM_ALIASES(backend)
  KEEL_RUNTIME_EVENT_ALIASES(backend)
  static constexpr bool asynchronous = false;

  static inline_rt::device& device() {
    static inline_rt::device dev{16};
    return dev;
  }
  static void synchronize_device() { backend::synchronize_device(device()); }
  static void axpy(stream_ref s, float* out, const float* tmp, const float* other, float alpha) {
    s.launch(axpy_kind, &axpy_kernel<inline_rt::launch_context>, out, tmp, other, alpha);
  }
  static void copy(stream_ref s, float* dst, const float* src) {
    s.launch(copy_kind, &copy_kernel<inline_rt::launch_context>, dst, src);
  }
};

// Every trace line goes here while the tests run (the conformance suites
// only count them; the trace test below reads them).
std::mutex trace_mutex;
std::vector<std::string> trace_lines;
std::atomic<long> traced_calls{0};
void collect(const std::string& line) noexcept {
  ++traced_calls;
  std::lock_guard<std::mutex> lock(trace_mutex);
  if (trace_lines.size() < 1000) trace_lines.push_back(line);
}

// The decorator over the host backend: the host backend's semantics, texts and counters.
struct traced_host_fixture : keel::testing::fixture_defaults {
  using backend = tracing::backend<keel::host::backend>;
  KEEL_RUNTIME_HANDLE_ALIASES(backend)
  static constexpr bool is_host = true;
  static constexpr bool replays_may_overlap = true;

  static keel::host::device& device() {
    static keel::host::device dev{keel::host::device_options{2, 16, 8}};
    static const bool tracing_on = (tracing::set_sink(&collect), true);
    (void)tracing_on;
    return dev;
  }
  static void synchronize_device() { backend::synchronize_device(device()); }
  static keel::capture_info thread_capture_status() { return backend::thread_capture_status(device()); }
  static void axpy(stream_ref s, float* out, const float* tmp, const float* other, float alpha) {
    s.launch(axpy_kind, &axpy_kernel<keel::host::launch_context>, out, tmp, other, alpha);
  }
  static void copy(stream_ref s, float* dst, const float* src) {
    s.launch(copy_kind, &copy_kernel<keel::host::launch_context>, dst, src);
  }
  using slot = std::atomic<int>;
  static void store(stream_ref s, slot* where, int value) {
    s.launch(store_kind, &store_kernel<keel::host::launch_context>, where, value);
  }
  static int load(const slot& where) { return where.load(); }
};

}  // namespace

KEEL_BACKEND_CONFORMANCE(inline_fixture, "inline", keel::testing::stream_layer, keel::testing::event_layer);
KEEL_BACKEND_FULL_CONFORMANCE(traced_host_fixture, "traced host");

TEST_CASE("inline backend: tasks have run when their launch returns, on the calling thread", "[backends][inline]") {
  inline_rt::stream s{inline_fixture::device()};
  int ran = 0;
  s.launch_host([&] { ++ran; });
  CHECK(ran == 1);
  CHECK(s.query());
  float out = 0, tmp = 1, other = 2;
  inline_fixture::axpy(s, &out, &tmp, &other, 3.0f);
  CHECK(out == 7.0f);
  STATIC_REQUIRE(keel::is_stream_backend_v<inline_rt::backend>);
  STATIC_REQUIRE(keel::is_event_backend_v<inline_rt::backend>);
  STATIC_REQUIRE_FALSE(keel::is_memory_backend_v<inline_rt::backend>);
  STATIC_REQUIRE_FALSE(keel::is_capture_backend_v<inline_rt::backend>);
  STATIC_REQUIRE_FALSE(keel::is_task_group_backend_v<inline_rt::backend>);
  // A backend without the capture layer reports a stream that never captures.
  CHECK_FALSE(s.is_capturing());
}

TEST_CASE("tracing backend: every native call of a capture, an update and a replay is logged with its arguments",
          "[backends][tracing]") {
  using F = traced_host_fixture;
  STATIC_REQUIRE(keel::is_runtime_backend_v<F::backend>);
  STATIC_REQUIRE(keel::abandon_restores_group_v<F::backend> == keel::abandon_restores_group_v<keel::host::backend>);
  auto& dev = F::device();
  const long before = traced_calls.load();
  {
    std::lock_guard<std::mutex> lock(trace_mutex);
    trace_lines.clear();
  }
  float out = 0, tmp = 1, other = 1;
  std::string stream_name;
  {
    F::stream s{dev}, u{dev};
    stream_name = "stream #" + std::to_string(s.id());
    F::model model;
    F::task_group group;
    {
      F::capture_scope capture{s, keel::capture_mode::thread_local_};
      F::task_group_scope mark{s};
      F::axpy(s, &out, &tmp, &other, 2.0f);
      group = mark.end();
      model = capture.end();
    }
    {
      F::update_scope update{u, group};
      F::axpy(u, &out, &tmp, &other, 4.0f);
      update.end();
    }
    model.execute(s);
    s.synchronize();
    CHECK(out == 5.0f);
  }
  std::vector<std::string> lines;
  {
    std::lock_guard<std::mutex> lock(trace_mutex);
    lines = trace_lines;
  }
  CHECK(traced_calls.load() - before == static_cast<long>(lines.size()));
  const std::vector<std::string> expected_prefixes = {
      "create_stream(device@",
      "create_stream(device@",
      "capture_begin(" + stream_name + ", thread-local)",
      "group_begin(" + stream_name + ")",
      "launch_kernel(" + stream_name + ", kernel 'axpy', <callable>)",
      "group_end(" + stream_name + ") -> ",
      "capture_end(" + stream_name + ") -> ",
      "update_begin(stream #",
      "launch_kernel(stream #",
      "update_end(stream #",
      "execute(",
      "synchronize(" + stream_name + ")",
      "destroy_group(",
      "destroy_model(",
      "destroy_stream(stream #",
      "destroy_stream(" + stream_name + ")",
  };
  REQUIRE(lines.size() == expected_prefixes.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    INFO("line " << i << ": " << lines[i]);
    CHECK(lines[i].rfind(expected_prefixes[i], 0) == 0);
  }
  // A refused call is logged with the rule it broke.
  F::stream s{dev};
  {
    std::lock_guard<std::mutex> lock(trace_mutex);
    trace_lines.clear();
  }
  CHECK_THROWS_AS(F::task_group_scope{s}, keel::error);
  std::lock_guard<std::mutex> lock(trace_mutex);
  REQUIRE(trace_lines.size() == 1);
  CHECK(trace_lines[0].find("group_begin(stream #") == 0);
  CHECK(trace_lines[0].find(" threw: ") != std::string::npos);
  CHECK(trace_lines[0].find("is not capturing") != std::string::npos);
}
