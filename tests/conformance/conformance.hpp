// SPDX-License-Identifier: Apache-2.0
// The backend-generic conformance suite: written once over a fixture type F
// that names a backend (F::backend), its device (F::device()), and its
// two-phase operator calls (F::prepare_add ..., F::run). Each backend's .cpp
// defines KEEL_CONFORMANCE_FIXTURE and KEEL_CONFORMANCE_TAG, then includes
// this file. Errors are compared by keel condition, so the host backend's
// keel::errc codes and the ACL backend's ACL statuses meet the same checks.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "keel/ops/scalar.hpp"
#include "keel/ops/tensor.hpp"
#include "keel/runtime/runtime.hpp"

#ifndef KEEL_CONFORMANCE_FIXTURE
#error "define KEEL_CONFORMANCE_FIXTURE (the fixture type) before including conformance.hpp"
#endif

namespace keel_conformance {

template <class F>
struct types {
  using B = typename F::backend;
  using stream = keel::basic_stream<B>;
  using event = keel::basic_event<B>;
  using model = keel::basic_model<B>;
  using capture_scope = keel::basic_capture_scope<B>;
  using task_group = keel::basic_task_group<B>;
  using task_group_scope = keel::basic_task_group_scope<B>;
  using update_scope = keel::basic_update_scope<B>;
  using concurrent_update = keel::basic_concurrent_update<B>;
  using device_buffer = keel::basic_device_buffer<B>;
  using pinned_buffer = keel::basic_pinned_buffer<B>;
};

// e.code() is an instance of keel's condition c (whatever the backend's category).
inline bool is(const std::error_code& code, keel::errc c) {
  return code == std::error_condition(static_cast<int>(c), keel::keel_category());
}

#define KEEL_CONFORMANCE_REQUIRE_ERRC(expr, condition)                 \
  do {                                                                  \
    bool keel_thrown_ = false;                                          \
    try {                                                               \
      expr;                                                             \
    } catch (const keel::error& keel_e_) {                              \
      keel_thrown_ = true;                                              \
      INFO(keel_e_.what());                                             \
      CHECK(::keel_conformance::is(keel_e_.code(), condition));         \
    }                                                                   \
    CHECK(keel_thrown_);                                                \
  } while (false)

// n floats on the device, filled from the host through a pinned buffer.
template <class F>
struct floats {
  typename types<F>::device_buffer dev;
  typename types<F>::pinned_buffer host;
  std::size_t n;
  floats(const typename types<F>::stream& s, std::size_t count, float value)
      : dev(s, count * sizeof(float)), host(s, count * sizeof(float)), n(count) {
    for (std::size_t i = 0; i < n; ++i) host.template data_as<float>()[i] = value;
    s.copy_async(dev.span(), host.span());
  }
  keel::ops::tensor view() const { return keel::ops::tensor(dev.data(), keel::ops::dtype::float32, {std::int64_t(n)}); }
  float* read() const { return host.template data_as<float>(); }
  void fetch(const typename types<F>::stream& s) const { s.copy_async(host.span(), dev.span()); }
};

// out = tmp + alpha * other as one launch (phase one now, phase two on s).
template <class F>
void add_on(const typename types<F>::stream& s, const floats<F>& out, const floats<F>& tmp, const floats<F>& other,
            float alpha) {
  auto ex = F::prepare_add(tmp.view(), other.view(), keel::ops::scalar(alpha), out.view());
  REQUIRE(F::workspace_size(ex) == 0);
  F::run(s, ex, keel::memory_span{});
}

template <class F>
bool all_equal(const floats<F>& v, float want) {
  for (std::size_t i = 0; i < v.n; ++i)
    if (v.read()[i] != Approx(want)) return false;
  return true;
}

}  // namespace keel_conformance

#define KEEL_CONFORMANCE_CASE(name) TEMPLATE_TEST_CASE(name, KEEL_CONFORMANCE_TAG, KEEL_CONFORMANCE_FIXTURE)

KEEL_CONFORMANCE_CASE("conformance: streams order copies and report completion") {
  using namespace keel_conformance;
  using T = types<TestType>;
  auto& dev = TestType::device();
  typename T::stream a{dev}, b{dev};
  CHECK(a.id() != b.id());
  CHECK(&a.device() == &dev);
  floats<TestType> x(a, 64, 3.0f), y(a, 64, 0.0f);
  a.copy_async(y.dev.span(), x.dev.span());  // device to device, in order after the upload
  y.fetch(a);
  a.synchronize();
  CHECK(a.query());
  CHECK(all_equal(y, 3.0f));

  // A moved-from stream is empty and says so.
  typename T::stream moved = std::move(b);
  CHECK_FALSE(b);
  CHECK(moved);
  KEEL_CONFORMANCE_REQUIRE_ERRC(b.synchronize(), keel::errc::invalid_handle);
  std::vector<float> back(64, 0.0f);
  moved.copy(back.data(), x.dev.data(), 64 * sizeof(float), keel::copy_kind::device_to_host);  // blocking copy
  CHECK(back[63] == 3.0f);
}

KEEL_CONFORMANCE_CASE("conformance: events order streams; timing and external events") {
  using namespace keel_conformance;
  using T = types<TestType>;
  auto& dev = TestType::device();
  typename T::stream a{dev}, b{dev};
  floats<TestType> x(a, 16, 2.0f), y(b, 16, 0.0f);
  typename T::event done{dev, keel::event_flags::default_};
  done.record(a);
  b.wait(done);  // b's copy sees a's upload
  b.copy_async(y.dev.span(), x.dev.span());
  y.fetch(b);
  b.synchronize();
  CHECK(done.query());
  CHECK(all_equal(y, 2.0f));

  typename T::event t0{dev, keel::event_flags::timing}, t1{dev, keel::event_flags::timing};
  t0.record(a);
  a.copy_async(y.dev.span(), x.dev.span());
  t1.record(a);
  t1.synchronize();
  CHECK(keel::elapsed_time(t0.ref(), t1.ref()) >= 0.0f);
  CHECK(t1.flags() == keel::event_flags::timing);

  // An external event holds b until another stream records it.
  typename T::event gate{dev, keel::event_flags::external};
  CHECK(gate.flags() == keel::event_flags::external);
  floats<TestType> z(a, 16, 7.0f);
  a.synchronize();
  b.wait(gate);
  b.reset_event(gate);
  b.copy_async(y.dev.span(), z.dev.span());
  y.fetch(b);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(b.query());  // still waiting at the gate
  gate.record(a);
  b.synchronize();
  CHECK(all_equal(y, 7.0f));
}

KEEL_CONFORMANCE_CASE("conformance: capture records work and replays it") {
  using namespace keel_conformance;
  using T = types<TestType>;
  auto& dev = TestType::device();
  typename T::stream s{dev};
  floats<TestType> tmp(s, 8, 1.0f), other(s, 8, 2.0f), out(s, 8, 0.0f);
  s.synchronize();
  typename T::model m;
  {
    typename T::capture_scope capture{s};
    CHECK(s.is_capturing());
    add_on<TestType>(s, out, tmp, other, 3.0f);
    out.fetch(s);
    m = capture.end();
  }
  CHECK_FALSE(s.is_capturing());
  CHECK(m.group_count() == 0);
  s.synchronize();
  CHECK(out.read()[0] == 0.0f);  // captured, not run
  m.execute(s);
  s.synchronize();
  CHECK(all_equal(out, 7.0f));
  // A replay reads the inputs as they are now.
  for (std::size_t i = 0; i < 8; ++i) tmp.host.template data_as<float>()[i] = 10.0f;
  s.copy_async(tmp.dev.span(), tmp.host.span());
  m.execute(s);
  s.synchronize();
  CHECK(all_equal(out, 16.0f));

  // A capture left by an exception is discarded: the stream runs work again.
  try {
    typename T::capture_scope capture{s};
    throw std::runtime_error("leave");
  } catch (const std::runtime_error&) {
  }
  CHECK_FALSE(s.is_capturing());
}

KEEL_CONFORMANCE_CASE("conformance: a task group is updated before the next execution") {
  using namespace keel_conformance;
  using T = types<TestType>;
  auto& dev = TestType::device();
  typename T::stream s{dev}, u{dev};
  floats<TestType> tmp(s, 8, 1.1f), other(s, 8, 1.0f), out(s, 8, 0.0f);
  s.synchronize();
  typename T::model m;
  typename T::task_group g;
  {
    typename T::capture_scope capture{s};
    typename T::task_group_scope mark{s};
    CHECK(s.capture_status().group_open);
    add_on<TestType>(s, out, tmp, other, 1.1f);
    g = mark.end();
    out.fetch(s);
    m = capture.end();
  }
  CHECK(m.group_count() == 1);
  CHECK(g.model_alive());
  m.execute(s);
  s.synchronize();
  CHECK(all_equal(out, 2.2f));
  {
    typename T::update_scope update{u, g};
    add_on<TestType>(u, out, tmp, other, 5.5f);
    update.end();
  }
  u.synchronize();
  m.execute(s);
  s.synchronize();
  CHECK(all_equal(out, 6.6f));
  // An update with no tasks leaves the group as it was.
  {
    typename T::update_scope update{u, g};
    update.end();
  }
  u.synchronize();
  m.execute(s);
  s.synchronize();
  CHECK(all_equal(out, 6.6f));
  m.reset();
  CHECK_FALSE(g.model_alive());
}

KEEL_CONFORMANCE_CASE("conformance: a task group is updated concurrently through an external event") {
  using namespace keel_conformance;
  using T = types<TestType>;
  auto& dev = TestType::device();
  typename T::stream s{dev}, u{dev};
  floats<TestType> tmp(s, 8, 1.1f), other(s, 8, 1.0f), out(s, 8, 0.0f);
  s.synchronize();
  typename T::concurrent_update fenced{dev};
  typename T::model m;
  typename T::task_group g;
  {
    typename T::capture_scope capture{s};
    fenced.fence(s);
    typename T::task_group_scope mark{s};
    add_on<TestType>(s, out, tmp, other, 1.1f);
    g = mark.end();
    out.fetch(s);
    m = capture.end();
  }
  fenced.release(u);
  m.execute(s);
  s.synchronize();
  CHECK(all_equal(out, 2.2f));

  m.execute(s);  // waits at the fence for the updater
  std::thread updater([&] {
    fenced.update(u, g, [&](keel::basic_stream_ref<typename TestType::backend>) { add_on<TestType>(u, out, tmp, other, 5.5f); });
  });
  updater.join();
  s.synchronize();
  u.synchronize();
  CHECK(all_equal(out, 6.6f));

  // A refused update (wrong number of tasks) still releases the fence, and
  // the execution runs the group unchanged.
  m.execute(s);
  KEEL_CONFORMANCE_REQUIRE_ERRC(fenced.update(u, g,
                                              [&](keel::basic_stream_ref<typename TestType::backend>) {
                                                add_on<TestType>(u, out, tmp, other, 9.0f);
                                                add_on<TestType>(u, out, tmp, other, 9.0f);
                                              }),
                                keel::errc::update_violation);
  s.synchronize();
  u.synchronize();
  CHECK(all_equal(out, 6.6f));
}

KEEL_CONFORMANCE_CASE("conformance: rule violations are errors that change nothing") {
  using namespace keel_conformance;
  using T = types<TestType>;
  auto& dev = TestType::device();
  typename T::stream s{dev}, u{dev};
  floats<TestType> tmp(s, 8, 1.0f), other(s, 8, 1.0f), out(s, 8, 0.0f);
  floats<TestType> half(s, 8, 0.0f);
  s.synchronize();

  SECTION("a task group outside capture") {
    KEEL_CONFORMANCE_REQUIRE_ERRC(typename T::task_group_scope mark{s}, keel::errc::capture_violation);
  }
  SECTION("a second capture on a capturing stream") {
    typename T::capture_scope capture{s};
    KEEL_CONFORMANCE_REQUIRE_ERRC(typename T::capture_scope second{s}, keel::errc::capture_violation);
    CHECK(s.is_capturing());
  }
  SECTION("synchronizing a capturing stream") {
    typename T::capture_scope capture{s};
    KEEL_CONFORMANCE_REQUIRE_ERRC(s.synchronize(), keel::errc::capture_violation);
    CHECK(s.is_capturing());
  }
  SECTION("work from another capturing stream while a group is marked") {
    typename T::stream other_stream{dev};
    typename T::capture_scope first{s};
    typename T::capture_scope second{other_stream};
    typename T::task_group_scope mark{s};
    // An operator launch reports a runtime rule as the backend's launch error
    // (ACL: the runtime's status under ACLNN_ERR_RUNTIME_ERROR, with its text).
    bool thrown = false;
    try {
      add_on<TestType>(other_stream, out, tmp, other, 1.0f);
    } catch (const keel::error& e) {
      INFO(e.what());
      thrown = true;
      CHECK(TestType::is_launch_error(e.code(), keel::errc::capture_violation));
    }
    CHECK(thrown);
  }
  SECTION("one group is updated on one stream at a time") {
    typename T::model m;
    typename T::task_group g;
    {
      typename T::capture_scope capture{s};
      typename T::task_group_scope mark{s};
      add_on<TestType>(s, out, tmp, other, 2.0f);
      g = mark.end();
      m = capture.end();
    }
    typename T::stream u2{dev};
    typename T::update_scope update{u, g};
    KEEL_CONFORMANCE_REQUIRE_ERRC(typename T::update_scope second(u2, g), keel::errc::update_violation);
    update.end();
  }
  SECTION("external events and models are limited resources") {
    std::vector<typename T::event> events;
    bool limited = false;
    for (int i = 0; i < 1000 && !limited; ++i) {
      try {
        events.emplace_back(dev, keel::event_flags::external);
      } catch (const keel::error& e) {
        INFO(e.what());
        CHECK(is(e.code(), keel::errc::resource_limit));
        limited = true;
      }
    }
    CHECK(limited);
    events.pop_back();
    events.emplace_back(dev, keel::event_flags::external);  // one released, one available again

    std::vector<typename T::model> models;
    limited = false;
    for (int i = 0; i < 5000 && !limited; ++i) {
      try {
        typename T::capture_scope capture{s};
        models.push_back(capture.end());
      } catch (const keel::error& e) {
        INFO(e.what());
        CHECK(is(e.code(), keel::errc::resource_limit));
        limited = true;
      }
    }
    CHECK(limited);
    CHECK_FALSE(s.is_capturing());
  }
  SECTION("an update of the wrong kind or count leaves the group as it was") {
    typename T::model m;
    typename T::task_group g;
    {
      typename T::capture_scope capture{s};
      typename T::task_group_scope mark{s};
      add_on<TestType>(s, out, tmp, other, 2.0f);
      g = mark.end();
      out.fetch(s);
      m = capture.end();
    }
    {
      typename T::update_scope update{u, g};
      auto cast = TestType::prepare_cast(tmp.view(), half.view());
      TestType::run(u, cast, keel::memory_span{});
      KEEL_CONFORMANCE_REQUIRE_ERRC(update.end(), keel::errc::update_violation);
    }
    {
      typename T::update_scope update{u, g};
      add_on<TestType>(u, out, tmp, other, 4.0f);
      add_on<TestType>(u, out, tmp, other, 4.0f);
      KEEL_CONFORMANCE_REQUIRE_ERRC(update.end(), keel::errc::update_violation);
    }
    u.synchronize();
    m.execute(s);
    s.synchronize();
    CHECK(all_equal(out, 3.0f));
    // The group still updates correctly afterwards.
    {
      typename T::update_scope update{u, g};
      add_on<TestType>(u, out, tmp, other, 4.0f);
      update.end();
    }
    u.synchronize();
    m.execute(s);
    s.synchronize();
    CHECK(all_equal(out, 5.0f));
  }
  SECTION("operator arguments: null and invalid") {
    keel::ops::tensor none(nullptr, keel::ops::dtype::float32, {8});
    KEEL_CONFORMANCE_REQUIRE_ERRC(TestType::prepare_add(none, other.view(), keel::ops::scalar(1.0f), out.view()),
                                  keel::errc::null_parameter);
    keel::ops::tensor wrong(out.dev.data(), keel::ops::dtype::float32, {3});
    KEEL_CONFORMANCE_REQUIRE_ERRC(TestType::prepare_add(tmp.view(), other.view(), keel::ops::scalar(1.0f), wrong),
                                  keel::errc::invalid_parameter);
  }
}

KEEL_CONFORMANCE_CASE("conformance: buffers are released in stream order") {
  using namespace keel_conformance;
  using T = types<TestType>;
  auto& dev = TestType::device();
  typename T::stream s{dev};
  typename T::device_buffer d{s, 1024};
  CHECK(d.size() == 1024);
  CHECK(d.data() != nullptr);
  const keel::memory_span span = d.span();
  CHECK(span.where == keel::memory_kind::device);
  CHECK(span.owner != nullptr);
  typename T::device_buffer moved = std::move(d);
  CHECK_FALSE(d);
  CHECK(moved.data() == span.data);
  // Released while a copy from it may still be queued: the copy still reads valid memory.
  typename T::pinned_buffer h{s, 1024};
  std::memset(h.data(), 5, 1024);
  s.copy_async(moved.span(), h.span());
  std::vector<unsigned char> back(1024, 0);
  s.copy_async(keel::host_span(back.data(), 1024), moved.span());
  moved.reset();
  s.synchronize();
  CHECK(back[1023] == 5);
}

KEEL_CONFORMANCE_CASE("conformance: the five operators through their two phases") {
  using namespace keel_conformance;
  using F = TestType;
  using T = types<F>;
  auto& dev = F::device();
  typename T::stream s{dev};
  auto run = [&](auto&& ex) {
    typename T::device_buffer ws;
    if (F::workspace_size(ex) != 0) ws = typename T::device_buffer{s, static_cast<std::size_t>(F::workspace_size(ex))};
    F::run(s, ex, ws ? ws.span() : keel::memory_span{});
    s.synchronize();
  };
  floats<F> a(s, 4, 2.0f), b(s, 4, 3.0f), c(s, 4, 0.5f), out(s, 4, 0.0f);
  s.synchronize();

  run(F::prepare_add(a.view(), b.view(), keel::ops::scalar(2.0f), out.view()));
  out.fetch(s);
  s.synchronize();
  CHECK(all_equal(out, 8.0f));  // 2 + 2 * 3

  run(F::prepare_addcmul(a.view(), b.view(), c.view(), keel::ops::scalar(4.0f), out.view()));
  out.fetch(s);
  s.synchronize();
  CHECK(all_equal(out, 8.0f));  // 2 + 4 * 3 * 0.5

  {  // float32 -> int32
    typename T::device_buffer ints{s, 4 * sizeof(std::int32_t)};
    run(F::prepare_cast(b.view(), keel::ops::tensor(ints.data(), keel::ops::dtype::int32, {4})));
    std::int32_t back[4] = {0, 0, 0, 0};
    s.copy(back, ints.data(), sizeof back, keel::copy_kind::device_to_host);
    CHECK(back[0] == 3);
    CHECK(back[3] == 3);
  }
  {  // 1 x 1 x 4 x 4 ramp -> 2 x 2 means
    floats<F> img(s, 16, 0.0f), pooled(s, 4, 0.0f);
    s.synchronize();  // the constructors' uploads read the host buffers
    for (int i = 0; i < 16; ++i) img.host.template data_as<float>()[i] = static_cast<float>(i);
    s.copy_async(img.dev.span(), img.host.span());
    run(F::prepare_adaptive_avg_pool2d(keel::ops::tensor(img.dev.data(), keel::ops::dtype::float32, {1, 1, 4, 4}), 2, 2,
                                       keel::ops::tensor(pooled.dev.data(), keel::ops::dtype::float32, {1, 1, 2, 2})));
    pooled.fetch(s);
    s.synchronize();
    CHECK(pooled.read()[0] == Approx(2.5f));   // mean of 0 1 4 5
    CHECK(pooled.read()[3] == Approx(12.5f));  // mean of 10 11 14 15
  }
  {  // one batch: 0.5 * 1 + 2 * ([[1,2],[3,4]] @ [[1,0],[0,1]])
    floats<F> self(s, 4, 1.0f), m1(s, 4, 0.0f), m2(s, 4, 0.0f), res(s, 4, 0.0f);
    s.synchronize();
    const float x[4] = {1, 2, 3, 4}, id[4] = {1, 0, 0, 1};
    std::memcpy(m1.host.data(), x, sizeof x);
    std::memcpy(m2.host.data(), id, sizeof id);
    s.copy_async(m1.dev.span(), m1.host.span());
    s.copy_async(m2.dev.span(), m2.host.span());
    auto t = [](const floats<F>& v) { return keel::ops::tensor(v.dev.data(), keel::ops::dtype::float32, {1, 2, 2}); };
    run(F::prepare_baddbmm(t(self), t(m1), t(m2), keel::ops::scalar(0.5f), keel::ops::scalar(2.0f), t(res)));
    res.fetch(s);
    s.synchronize();
    CHECK(res.read()[0] == Approx(2.5f));
    CHECK(res.read()[1] == Approx(4.5f));
    CHECK(res.read()[2] == Approx(6.5f));
    CHECK(res.read()[3] == Approx(8.5f));
  }
}
