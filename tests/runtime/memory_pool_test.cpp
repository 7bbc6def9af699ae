// SPDX-License-Identifier: Apache-2.0
// keel/runtime/memory_pool.hpp on both backends: stream-ordered reuse by size
// class, the reuse attributes, trim_to and the threshold, statistics, the
// bad-input rules, deferred destruction, and pools given to captures (every
// way a capture ends returns what it took; models sharing a pool).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "keel/runtime/memory_pool.hpp"
#include "keel/runtime/stream_allocator.hpp"
#include "test_support.hpp"
#ifdef KEEL_ACL_EMULATION_DIR
#include "keel/acl/memory_pool.hpp"  // the ACL hooks of allocator registrations
#endif

namespace {

template <class F>
using pool_of = keel::basic_memory_pool<typename F::backend>;

constexpr std::size_t kib = 1024;

}  // namespace

KEEL_BACKEND_TEST("memory pool: a release on the allocating stream makes the block reusable at once",
                  "[runtime][memory_pool]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  pool_of<TestType> pool{dev, {"same-stream"}};
  void* first = nullptr;
  {
    auto a = pool.allocate(s, 4 * kib);
    first = a.data();
    CHECK(a.size() == 4 * kib);
    CHECK(a.capacity() == keel::pool_size_class(4 * kib));
  }
  auto b = pool.allocate(s, 4 * kib - 100);  // same size class
  CHECK(b.data() == first);
  const keel::pool_statistics st = pool.statistics();
  CHECK(st.allocations == 2);
  CHECK(st.hits == 1);
  CHECK(st.backend_allocations == 1);
  CHECK(st.reserved == 4 * kib);
  CHECK(st.used == 4 * kib);
  b.reset();
  CHECK(pool.statistics().used == 0);
  CHECK(pool.statistics().reserved == 4 * kib);
  s.synchronize();
}

KEEL_BACKEND_TEST("memory pool: statistics keep high-water marks and count by size class",
                  "[runtime][memory_pool]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  pool_of<TestType> pool{dev};
  {
    auto a = pool.allocate(s, 1000);
    auto b = pool.allocate(s, 70 * kib);
    CHECK(pool.statistics().used == keel::pool_size_class(1000) + keel::pool_size_class(70 * kib));
  }
  keel::pool_statistics st = pool.statistics();
  CHECK(st.used == 0);
  CHECK(st.used_high == keel::pool_size_class(1000) + keel::pool_size_class(70 * kib));
  CHECK(st.reserved_high == st.used_high);
  pool.reset_high_water();
  CHECK(pool.statistics().used_high == 0);
  CHECK(keel::pool_size_class(1) == 512);
  CHECK(keel::pool_size_class(513) == 640);
  CHECK(keel::pool_size_class(64 * kib * kib) == 64 * kib * kib);
  CHECK(keel::pool_size_class(64 * kib * kib + 1) == 80 * kib * kib);
  s.synchronize();
}

KEEL_BACKEND_TEST("memory pool: a block released on a busy stream is not reused elsewhere without a rule that allows it",
                  "[runtime][memory_pool]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev}, t{dev};
  keel::pool_options opt;
  opt.attributes.follow_event_dependencies = false;
  opt.attributes.allow_opportunistic = false;
  opt.attributes.allow_internal_dependencies = false;
  pool_of<TestType> pool{dev, opt};
  keel_test::gate g;
  g.hold(s.ref());
  void* first = nullptr;
  {
    auto a = pool.allocate(s, 8 * kib);
    first = a.data();
  }  // released behind the gate
  auto b = pool.allocate(t, 8 * kib);
  CHECK(b.data() != first);
  CHECK(pool.statistics().backend_allocations == 2);
  g.open();
  s.synchronize();
}

KEEL_BACKEND_TEST("memory pool: opportunistic reuse takes a block once its stream has passed the release",
                  "[runtime][memory_pool]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev}, t{dev};
  keel::pool_options opt;
  opt.attributes.follow_event_dependencies = false;
  opt.attributes.allow_internal_dependencies = false;
  pool_of<TestType> pool{dev, opt};
  void* first = nullptr;
  {
    auto a = pool.allocate(s, 8 * kib);
    first = a.data();
  }
  s.synchronize();  // the release has passed
  auto b = pool.allocate(t, 8 * kib);
  CHECK(b.data() == first);
  CHECK(pool.statistics().hits == 1);
}

KEEL_BACKEND_TEST("memory pool: internal dependencies reuse a block and order the new stream behind the release",
                  "[runtime][memory_pool]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev}, t{dev};
  keel::pool_options opt;
  opt.attributes.follow_event_dependencies = false;
  opt.attributes.allow_opportunistic = false;
  pool_of<TestType> pool{dev, opt};
  keel_test::gate g;
  std::atomic<int> order{0};
  int s_done = 0, t_saw = -1;
  void* first = nullptr;
  {
    auto a = pool.allocate(s, 8 * kib);
    first = a.data();
    g.hold(s.ref());
    s.launch_host([&] { s_done = ++order; });
  }  // released after the gated work
  auto b = pool.allocate(t, 8 * kib);
  CHECK(b.data() == first);
  t.launch_host([&] { t_saw = s_done; });
  g.open();
  t.synchronize();
  CHECK(t_saw == 1);  // t waited for s's release point
  s.synchronize();
}

// Under the default attributes a block released on a stream whose work has
// not passed the release is handed to another stream behind an internal
// dependency: ready for that stream's work, not for the host. The host
// writes after wait_for_host(), which waits for the stream's order; before
// it, the other stream's in-flight work still owns the block.
KEEL_BACKEND_TEST("memory pool: wait_for_host lets the host touch an allocation once its stream's order allows",
                  "[runtime][memory_pool]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev}, t{dev};
  pool_of<TestType> pool{dev, {"host-access"}};
  keel_test::gate g;
  std::atomic<bool> late_write_done{false};
  void* first = nullptr;
  {
    auto a = pool.allocate(s, 8 * kib);
    first = a.data();
    g.hold(s.ref());
    s.launch_host([p = a.template data_as<int>(), &late_write_done] {
      p[0] = -1;  // s's in-flight work, still writing the block after its release was issued
      late_write_done = true;
    });
  }  // released on s, behind the gated work
  auto b = pool.allocate(t, 8 * kib);
  REQUIRE(b.data() == first);  // reused across streams behind an internal dependency
  CHECK_FALSE(late_write_done.load());  // a host write now would land under s's work
  std::thread opener([&g] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    g.open();
  });
  b.wait_for_host();
  CHECK(late_write_done.load());
  b.template data_as<int>()[0] = 42;
  opener.join();
  s.synchronize();
  t.synchronize();
  CHECK(b.template data_as<int>()[0] == 42);
  b.reset();
  KEEL_REQUIRE_ERROR(b.wait_for_host(), keel::errc::invalid_handle, "wait_for_host");
}

KEEL_BACKEND_TEST("memory pool: trim_to frees idle memory and refuses to go below what is in use",
                  "[runtime][memory_pool]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  pool_of<TestType> pool{dev, {"trimmed"}};
  auto kept = pool.allocate(s, 16 * kib);
  { auto idle = pool.allocate(s, 32 * kib); }
  CHECK(pool.statistics().reserved == 48 * kib);
  const keel::pool_statistics before = pool.statistics();
  KEEL_REQUIRE_ERROR(pool.trim_to(8 * kib), keel::errc::invalid_parameter, "'trimmed'");
  CHECK(pool.statistics().reserved == before.reserved);
  pool.trim_to(16 * kib);
  CHECK(pool.statistics().reserved == 16 * kib);
  CHECK(pool.statistics().used == 16 * kib);
  kept.reset();
  pool.trim_to(0);
  CHECK(pool.statistics().reserved == 0);
  s.synchronize();
}

KEEL_BACKEND_TEST("memory pool: the release threshold returns passed idle memory beyond it",
                  "[runtime][memory_pool]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  pool_of<TestType> pool{dev};
  { auto a = pool.allocate(s, 64 * kib); }
  s.synchronize();
  CHECK(pool.statistics().reserved == 64 * kib);
  keel::pool_attributes attr = pool.attributes();
  attr.release_threshold = 0;
  pool.set_attributes(attr);
  CHECK(pool.attributes().release_threshold == 0);
  CHECK(pool.statistics().reserved == 0);
  { auto b = pool.allocate(s, 4 * kib); }
  s.synchronize();
  { auto c = pool.allocate(s, 4 * kib); }  // the earlier release has passed: trimmed now, this one stays
  CHECK(pool.statistics().reserved <= 4 * kib);
  s.synchronize();
}

KEEL_BACKEND_TEST("memory pool: a release on the wrong stream or into another pool is refused and loses nothing",
                  "[runtime][memory_pool]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev}, t{dev};
  pool_of<TestType> pool{dev, {"mine"}}, other{dev, {"theirs"}};
  auto a = pool.allocate(s, kib);
  KEEL_REQUIRE_ERROR(a.release(t), keel::errc::invalid_parameter, "wrong stream");
  CHECK(a);
  KEEL_REQUIRE_ERROR(other.release(a, s), keel::errc::invalid_parameter, "another pool");
  CHECK(a);
  CHECK(a.from(pool));
  CHECK_FALSE(a.from(other));
  CHECK(pool.statistics().used == keel::pool_size_class(kib));
  a.rebind(t);  // the caller orders t after the uses
  a.release(t);
  CHECK_FALSE(a);
  CHECK(pool.statistics().used == 0);
  s.synchronize();
  t.synchronize();
}

KEEL_BACKEND_TEST("memory pool: an allocation beyond the pool's max_size is out_of_memory and leaves the pool unchanged",
                  "[runtime][memory_pool]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  keel::pool_options opt;
  opt.name = "bounded";
  opt.max_size = 64 * kib;
  pool_of<TestType> pool{dev, opt};
  auto a = pool.allocate(s, 48 * kib);
  const keel::pool_statistics before = pool.statistics();
  KEEL_REQUIRE_ERROR(pool.allocate(s, 32 * kib), keel::errc::out_of_memory, "'bounded'");
  const keel::pool_statistics after = pool.statistics();
  CHECK(after.reserved == before.reserved);
  CHECK(after.used == before.used);
  CHECK(after.allocations == before.allocations);
  KEEL_REQUIRE_ERROR(pool.allocate(s, static_cast<std::size_t>(-1)), keel::errc::out_of_memory, "largest object");
  s.synchronize();
}

KEEL_BACKEND_TEST("memory pool: destroying the pool while an allocation holds it is deferred to the last holder",
                  "[runtime][memory_pool]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  using buffer = keel::basic_pool_buffer<typename TestType::backend>;
  buffer a;
  {
    pool_of<TestType> pool{dev};
    a = pool.allocate(s, sizeof(float));
    CHECK(pool.held());
  }  // deferred
  *a.template data_as<float>() = 0.0f;
  static const float one = 1.0f, two = 2.0f;
  TestType::axpy(s, a.template data_as<float>(), &one, &two, 1.0f);
  s.synchronize();
  CHECK(*a.template data_as<float>() == 3.0f);
  a.reset();  // the last holder: the pool goes now
  s.synchronize();
}

KEEL_BACKEND_TEST("memory pool: a destroyed pool whose last holder is queued work goes behind that work and never waits for it",
                  "[runtime][memory_pool]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  keel::testing::recorded_reports reports;
  keel::pool_options opt("last held by queued work");
  auto pool = std::make_unique<pool_of<TestType>>(dev, opt);
  keel_test::gate g;
  g.hold(s.ref());
  std::atomic<bool> ran{false};
  [[maybe_unused]] const auto native = pool->native_handle();  // ACL: the runtime's pool, destroyed with keel's
  std::size_t in_use_before = 0;
  if constexpr (TestType::is_host) in_use_before = dev.memory_in_use();
  {
    auto a = pool->allocate(s, 4 * kib);
    // The work holds the block through its span; its release is ordered on
    // s, behind the held task, so it is pending when the pool goes.
    s.launch_host([span = a.span(), &ran] {
      static_cast<unsigned char*>(span.data)[0] = 1;
      ran.store(true, std::memory_order_release);
    });
  }
  CHECK(pool->held());
  pool.reset();  // deferred: the queued work is the last holder
  CHECK_FALSE(ran.load());
  // The last holder lets go on the thread that runs s's work (or releases
  // its keep list): the teardown must not wait for s there.
  g.open();
  s.synchronize(std::chrono::seconds(20));
  CHECK(ran.load());
  // Nothing leaks: the teardown (issued behind the work) returns the block
  // and ends the pool; bounded, as the thread that let go may still be at it.
  auto gone = [&] {
    if constexpr (TestType::is_host) {
      return dev.memory_in_use() == in_use_before;
    } else {
#ifdef KEEL_ACL_EMULATION_DIR
      std::uint64_t used = 0;
      return native != nullptr &&
             dev.functions().aclrtMemPoolGetAttr(native, keel::acl::mem_pool_attr::used_mem_current, &used) == 100000;
#endif
    }
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!gone() && std::chrono::steady_clock::now() < deadline) {
    s.synchronize(std::chrono::seconds(20));
    std::this_thread::yield();
  }
  CHECK(gone());
  CHECK(reports.taken().empty());
}

KEEL_BACKEND_TEST("memory pool: a span keeps its block out of the pool until the work holding it has gone",
                  "[runtime][memory_pool]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  pool_of<TestType> pool{dev};
  keel::memory_span held;
  {
    auto a = pool.allocate(s, kib);
    held = a.span();
  }
  CHECK(pool.statistics().used == keel::pool_size_class(kib));  // the span still holds it
  auto b = pool.allocate(s, kib);
  CHECK(b.data() != held.data);
  held = {};
  CHECK(pool.statistics().used == keel::pool_size_class(kib));
  s.synchronize();
}

KEEL_BACKEND_TEST("memory pool: concurrent allocation and release from several streams keeps the books",
                  "[runtime][memory_pool][concurrency]") {
  KEEL_USING_BACKEND(TestType);
  pool_of<TestType> pool{dev};
  constexpr int threads = 4, rounds = 300;
  std::vector<std::thread> workers;
  std::atomic<int> failures{0};
  for (int w = 0; w < threads; ++w)
    workers.emplace_back([&, w] {
      stream s{dev};
      for (int i = 0; i < rounds; ++i) {
        auto a = pool.allocate(s, static_cast<std::size_t>(512 * (1 + (i + w) % 7)));
        auto* p = a.template data_as<unsigned char>();
        p[0] = static_cast<unsigned char>(i);
        if (p[0] != static_cast<unsigned char>(i)) ++failures;
        if (i % 50 == 0) (void)pool.statistics();
      }
      s.synchronize();
    });
  for (auto& t : workers) t.join();
  CHECK(failures == 0);
  const keel::pool_statistics st = pool.statistics();
  CHECK(st.used == 0);
  CHECK(st.allocations == static_cast<std::uint64_t>(threads * rounds));
  CHECK(st.hits + st.backend_allocations == st.allocations);
}

// The pool's lock is self-biased (keel/core/biased_lock.hpp): a thread that
// hits the pool in a long streak becomes its owner and enters with plain
// stores, and every other thread breaks in. One thread hits at full speed
// (owner) while another reads statistics, trims and allocates on its own
// stream (breaking in each time); neither may ever see a block the other
// holds, and the books must add up.
KEEL_BACKEND_TEST("memory pool: a thread hitting at full speed and threads breaking in never share a block",
                  "[runtime][memory_pool][concurrency]") {
  KEEL_USING_BACKEND(TestType);
  pool_of<TestType> pool{dev, {"biased"}};
  constexpr int hits = 50000;
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::atomic<std::uint64_t> intruder_allocations{0};
  auto holds = [&](auto& allocation, unsigned char tag) {
    auto* p = allocation.template data_as<unsigned char>();
    for (int k = 0; k < 64; ++k) p[k] = tag;
    for (int spin = 0; spin < 8; ++spin)
      for (int k = 0; k < 64; ++k)
        if (p[k] != tag) ++failures;
  };
  std::thread owner([&] {
    stream s{dev};
    for (int i = 0; i < hits; ++i) {
      auto a = pool.allocate(s, 4 * kib);
      holds(a, 0xA5);
    }
    s.synchronize();
    done.store(true);
  });
  std::thread intruder([&] {
    stream s{dev};
    do {
      const keel::pool_statistics st = pool.statistics();
      if (st.used > st.reserved || st.hits > st.allocations) ++failures;
      {
        auto a = pool.allocate(s, 4 * kib);
        holds(a, 0x5A);
        ++intruder_allocations;
      }
      s.synchronize();
      pool.trim_to(4 * kib);  // at most the hitting thread's block is in use: never refused
      // A pause between break-ins lets the hitting thread win its streak and
      // own the lock again, so both kinds of section meet many times.
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    } while (!done.load());
    s.synchronize();
  });
  owner.join();
  intruder.join();
  CHECK(failures == 0);
  const keel::pool_statistics st = pool.statistics();
  CHECK(st.used == 0);
  CHECK(st.allocations == hits + intruder_allocations.load());
  CHECK(st.hits + st.backend_allocations == st.allocations);
  CHECK(intruder_allocations.load() > 0);
}

// ---- pools and models -------------------------------------------------------

KEEL_BACKEND_TEST("memory pool: a capture given the pool gives its model what it allocated, until the model goes",
                  "[runtime][memory_pool][model]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  pool_of<TestType> pool{dev, {"graph"}};
  static const float one = 1.0f, two = 2.0f;
  float* out = nullptr;
  model m;
  {
    capture_scope capture{s, pool};
    auto scratch = pool.allocate(s, sizeof(float));
    out = scratch.template data_as<float>();
    TestType::axpy(s, out, &one, &two, 1.0f);
    m = capture.end();
  }  // scratch released: the model keeps it
  CHECK(m.holds_pool_memory());
  CHECK(pool.statistics().used == 512);
  *out = 0.0f;
  m.execute(s);
  s.synchronize();
  CHECK(*out == 3.0f);
  auto other = pool.allocate(s, sizeof(float));
  CHECK(other.template data_as<float>() != out);  // still the model's
  other.reset();
  m.reset();
  s.synchronize();
  CHECK(pool.statistics().used == 0);
}

KEEL_BACKEND_TEST("memory pool: a capture left by an exception returns everything it took",
                  "[runtime][memory_pool][model]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  pool_of<TestType> pool{dev};
  try {
    capture_scope capture{s, pool};
    auto a = pool.allocate(s, 4 * kib);
    auto b = pool.allocate(s, 8 * kib);
    CHECK(pool.statistics().used == 12 * kib);
    throw std::runtime_error("leave the scope");
  } catch (const std::runtime_error&) {
  }
  CHECK(pool.statistics().used == 0);
  CHECK_FALSE(s.is_capturing());
  s.synchronize();
}

KEEL_BACKEND_TEST("memory pool: a capture discarded returns everything it took", "[runtime][memory_pool][model]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  pool_of<TestType> pool{dev};
  capture_scope capture{s, pool};
  auto a = pool.allocate(s, 4 * kib);
  a.reset();
  CHECK(pool.statistics().used == 4 * kib);  // released inside the capture: the capture still holds it
  capture.cancel();
  CHECK(pool.statistics().used == 0);
  s.synchronize();
}

KEEL_BACKEND_TEST("memory pool: a capture whose end breaks a rule returns everything once it is discarded",
                  "[runtime][memory_pool][model]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  pool_of<TestType> pool{dev};
  static const float one = 1.0f, two = 2.0f;
  {
    capture_scope capture{s, pool};
    auto a = pool.allocate(s, sizeof(float));
    task_group_scope mark{s};
    TestType::axpy(s, a.template data_as<float>(), &one, &two, 1.0f);
    KEEL_REQUIRE_ERROR((void)capture.end(), keel::errc::capture_violation, "group");  // a group is still open
    a.reset();
  }  // the group and the capture are abandoned by their scopes
  CHECK(pool.statistics().used == 0);
  s.synchronize();
}

KEEL_BACKEND_TEST("memory pool: a capture that runs out of pool memory returns what it took before",
                  "[runtime][memory_pool][model]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  keel::pool_options opt;
  opt.max_size = 16 * kib;
  pool_of<TestType> pool{dev, opt};
  {
    capture_scope capture{s, pool};
    auto a = pool.allocate(s, 12 * kib);
    KEEL_REQUIRE_ERROR(pool.allocate(s, 8 * kib), keel::errc::out_of_memory, "max_size");
  }
  CHECK(pool.statistics().used == 0);
  s.synchronize();
}

KEEL_BACKEND_TEST("memory pool: models captured into one pool share memory released inside their captures",
                  "[runtime][memory_pool][model]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev}, t{dev};
  pool_of<TestType> pool{dev, {"shared"}};
  static const float one = 1.0f, two = 2.0f;
  auto out = pool.allocate(s, sizeof(float));
  auto capture_one = [&](float alpha) {
    capture_scope capture{s, pool};
    auto tmp = pool.allocate(s, 64 * kib);  // released inside the capture: shared with later captures
    auto* t0 = tmp.template data_as<float>();
    TestType::axpy(s, t0, &one, &two, alpha);
    TestType::axpy(s, out.template data_as<float>(), t0, &one, 0.0f);
    tmp.reset();
    return capture.end();
  };
  model a = capture_one(1.0f);
  const std::size_t reserved_after_one = pool.statistics().reserved;
  model b = capture_one(2.0f);
  CHECK(pool.statistics().reserved == reserved_after_one);  // b reused a's scratch
  a.execute(s);
  s.synchronize();
  CHECK(*out.template data_as<float>() == 3.0f);
  b.execute(s);
  s.synchronize();
  CHECK(*out.template data_as<float>() == 5.0f);
  // Concurrent executions of models sharing memory are refused when the pool can tell.
  keel_test::gate g;
  g.hold(s.ref());
  a.execute(s);
  KEEL_REQUIRE_ERROR(b.execute(t), keel::errc::invalid_state, "concurrently");
  g.open();
  s.synchronize();
  b.execute(t);  // a has finished: fine now
  t.synchronize();
  a.reset();
  b.reset();
  out.reset();
  s.synchronize();
  CHECK(pool.statistics().used == 0);
}

KEEL_BACKEND_TEST("memory pool: the sharing rule holds through a model's views, not only its owner",
                  "[runtime][memory_pool][model]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev}, t{dev};
  pool_of<TestType> pool{dev, {"shared-views"}};
  static const float one = 1.0f, two = 2.0f;
  auto out = pool.allocate(s, sizeof(float));
  auto capture_one = [&](float alpha) {
    capture_scope capture{s, pool};
    auto tmp = pool.allocate(s, 64 * kib);  // released inside the capture: shared with later captures
    auto* t0 = tmp.template data_as<float>();
    TestType::axpy(s, t0, &one, &two, alpha);
    TestType::axpy(s, out.template data_as<float>(), t0, &one, 0.0f);
    tmp.reset();
    return capture.end();
  };
  model a = capture_one(1.0f);
  model b = capture_one(2.0f);
  CHECK(a.holds_pool_memory());
  CHECK(b.holds_pool_memory());
  const model_ref view_b = b;                                  // an owner's view
  const model_ref native_view_a{dev, a.native_handle()};      // a view made from the native handle
  keel_test::gate g, h;
  g.hold(s.ref());
  a.execute(s);
  KEEL_REQUIRE_ERROR(view_b.execute(t), keel::errc::invalid_state, "concurrently");
  g.open();
  s.synchronize();
  h.hold(t.ref());
  view_b.execute(t);  // a has finished: fine now, and b runs on t
  KEEL_REQUIRE_ERROR(native_view_a.execute(s), keel::errc::invalid_state, "concurrently");
  h.open();
  t.synchronize();
  native_view_a.execute(s);
  s.synchronize();
  CHECK(*out.template data_as<float>() == 3.0f);
  // A moved owner keeps the memory (it is the model's, not the handle object's).
  model moved = std::move(a);
  CHECK(moved.holds_pool_memory());
  CHECK_FALSE(a.holds_pool_memory());
  moved.reset();
  b.reset();
  out.reset();
  s.synchronize();
  t.synchronize();
  CHECK(pool.statistics().used == 0);
}

// The sharing rule's check and the issue are one step for other threads:
// two threads executing two models that share memory, each on its own
// stream, at the same moment, never both get through (one is refused while
// the other's is issued or unfinished). Each model begins by waiting for
// the round to be opened, after both calls returned: both accepted in one
// round would run at once.
KEEL_BACKEND_TEST("memory pool: executions of models sharing memory on two threads never run concurrently",
                  "[runtime][memory_pool][model][concurrency]") {
  KEEL_USING_BACKEND(TestType);
  pool_of<TestType> pool{dev, {"shared-threads"}};
  stream s{dev};
  std::atomic<bool> open{false};
  auto capture_one = [&] {
    capture_scope capture{s, pool};
    auto tmp = pool.allocate(s, 64 * kib);  // released inside the capture: shared with later captures
    s.launch_host([&open] {
      while (!open.load()) std::this_thread::yield();
    });
    tmp.reset();
    return capture.end();
  };
  model a = capture_one();
  model b = capture_one();
  constexpr int rounds = 300;
  std::atomic<int> arrived{0}, refused{0}, both{0}, other_errors{0};
  std::vector<std::atomic<int>> accepted(rounds);
  // Both threads pass each meeting together (spinning without yielding: a
  // thread that yields may lose its processor until the other's call ended).
  auto meet = [&](int& meetings) {
    ++meetings;
    ++arrived;
    while (arrived.load() < 2 * meetings) {
    }
  };
  auto run = [&](model& m, bool opener) {
    stream mine{dev};
    int meetings = 0;
    for (int i = 0; i < rounds; ++i) {
      meet(meetings);
      try {
        m.execute(mine);
        if (++accepted[static_cast<std::size_t>(i)] == 2) ++both;
      } catch (const keel::error& e) {
        if (e.code() == keel::make_error_code(keel::errc::invalid_state)) {
          ++refused;
        } else {
          ++other_errors;
        }
      }
      meet(meetings);  // both calls returned
      if (opener) open = true;
      mine.synchronize();
      meet(meetings);  // both executions ended
      if (opener) open = false;
    }
  };
  std::thread other([&] { run(b, false); });
  run(a, true);
  other.join();
  CHECK(both.load() == 0);
  CHECK(refused.load() == rounds);
  CHECK(other_errors.load() == 0);
  a.reset();
  b.reset();
  s.synchronize();
  CHECK(pool.statistics().used == 0);
}

// The refusal's advice works: a stream that waits on an event recorded after
// the other model's execution is ordered behind it, and the pool accepts it.
// A wait on an event recorded before that execution orders nothing.
KEEL_BACKEND_TEST("memory pool: models sharing memory ordered with an event wait may execute on two streams",
                  "[runtime][memory_pool][model]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev}, t{dev};
  pool_of<TestType> pool{dev, {"shared-ordered"}};
  static const float one = 1.0f, two = 2.0f;
  auto out = pool.allocate(s, sizeof(float));
  auto capture_one = [&](float alpha) {
    capture_scope capture{s, pool};
    auto tmp = pool.allocate(s, 64 * kib);  // released inside the capture: shared with later captures
    auto* t0 = tmp.template data_as<float>();
    TestType::axpy(s, t0, &one, &two, alpha);
    TestType::axpy(s, out.template data_as<float>(), t0, &one, 0.0f);
    tmp.reset();
    return capture.end();
  };
  model a = capture_one(1.0f);
  model b = capture_one(2.0f);
  event before{dev}, after{dev};
  keel_test::gate g;
  g.hold(s.ref());
  before.record(s);
  a.execute(s);
  t.wait(before);  // recorded before a's execution: orders nothing
  KEEL_REQUIRE_ERROR(b.execute(t), keel::errc::invalid_state, "record one on stream");
  after.record(s);
  t.wait(after);
  b.execute(t);  // ordered behind a: accepted although a has not finished
  float* result = out.template data_as<float>();
  g.open();
  t.synchronize();
  CHECK(*result == 5.0f);  // b ran after a (a alone would leave 3)
  // And back: s ordered behind b's execution on t.
  keel_test::gate h;
  h.hold(t.ref());
  b.execute(t);
  KEEL_REQUIRE_ERROR(a.execute(s), keel::errc::invalid_state, "concurrently");
  after.record(t);
  s.wait(after);
  a.execute(s);
  h.open();
  s.synchronize();
  CHECK(*result == 3.0f);
  a.reset();
  b.reset();
  out.reset();
  s.synchronize();
  t.synchronize();
  CHECK(pool.statistics().used == 0);
}

// ---- per-stream allocators ---------------------------------------------------

// A registration should not outlive its pool or its stream; when it does,
// nothing dangles: a destroyed pool is refused by name (the registration
// holds its books), and a destroyed stream ends the registration with it,
// so that a new stream (often at the dead one's address) inherits nothing
// and the old registration's end leaves the new one's alone.
KEEL_BACKEND_TEST("memory pool: a registration outliving its pool or its stream is refused or ended and never inherited",
                  "[runtime][memory_pool][allocator]") {
  KEEL_USING_BACKEND(TestType);
  using backend = typename TestType::backend;
  using registration = keel::basic_allocator_registration<backend>;
  pool_of<TestType> theirs{dev, {"client B"}};
  {
    stream s{dev};
    auto gone = std::make_unique<pool_of<TestType>>(dev, keel::pool_options{"client gone"});
    registration r{s, *gone};
    gone.reset();
    CHECK_FALSE(keel::registered_pool<backend>(s));
    KEEL_REQUIRE_ERROR(keel::allocate_workspace<backend>(s, kib), keel::errc::invalid_state,
                       "(client gone) was destroyed");
    CHECK(r);  // still registered: dropping it unregisters
    r.reset();
    KEEL_REQUIRE_ERROR(keel::allocate_workspace<backend>(s, kib), keel::errc::invalid_state, "no registered allocator");
    s.synchronize();
  }
  pool_of<TestType> mine{dev, {"client A"}};
  for (int round = 0; round < 4; ++round) {
    auto dead = std::make_unique<stream>(dev);
    registration old{*dead, mine};
    dead.reset();
    CHECK_FALSE(old);
    CHECK_FALSE(old.stream());
    stream fresh{dev};  // often at the dead stream's address
    CHECK_FALSE(keel::registered_pool<backend>(fresh));
    registration mine_now{fresh, theirs};
    old.reset();  // ended with its stream: leaves fresh's registration alone
    CHECK(keel::registered_pool<backend>(fresh) == theirs.ref());
    auto ws = keel::allocate_workspace<backend>(fresh, kib);
    CHECK(ws.from(theirs));
    ws.reset();
    fresh.synchronize();
  }
  CHECK(mine.statistics().used == 0);
}

KEEL_BACKEND_TEST("memory pool: a registration makes the pool its stream's allocator until it is dropped",
                  "[runtime][memory_pool][allocator]") {
  KEEL_USING_BACKEND(TestType);
  using backend = typename TestType::backend;
  stream s{dev}, t{dev};
  pool_of<TestType> mine{dev, {"client A"}}, theirs{dev, {"client B"}};
  CHECK_FALSE(keel::registered_pool<backend>(s));
  KEEL_REQUIRE_ERROR(keel::allocate_workspace<backend>(s, kib), keel::errc::invalid_state, "no registered allocator");
  {
    keel::basic_allocator_registration<backend> a{s, mine};
    keel::basic_allocator_registration<backend> b{t, theirs};
    CHECK(keel::registered_pool<backend>(s) == mine.ref());
    CHECK(keel::registered_pool<backend>(t) == theirs.ref());
    auto register_again = [&] { keel::basic_allocator_registration<backend> again{s, theirs}; };
    KEEL_REQUIRE_ERROR(register_again(), keel::errc::invalid_state, "already has a registered allocator");
    CHECK(keel::registered_pool<backend>(s) == mine.ref());  // unchanged
    auto ws = keel::allocate_workspace<backend>(s, 8 * kib);
    CHECK(ws.from(mine));
    CHECK(mine.statistics().used == 8 * kib);
    CHECK(theirs.statistics().used == 0);
  }
  CHECK_FALSE(keel::registered_pool<backend>(s));
  CHECK_FALSE(keel::registered_pool<backend>(t));
  CHECK(mine.statistics().used == 0);
  s.synchronize();
  t.synchronize();
}
