// SPDX-License-Identifier: Apache-2.0
// keel/runtime/context.hpp and keel/runtime/stream_options.hpp on both
// backends: contexts made current by a scope and restored after it, per
// thread; deferred destruction and the refused close(); streams made with
// flags and a priority, their accessors, the option rules, and a forced
// destruction that discards the work not yet run.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "keel/runtime/context.hpp"
#include "keel/runtime/stream_options.hpp"
#include "test_support.hpp"

namespace {
template <class F>
using context_of = keel::basic_context<typename F::backend>;
template <class F>
using context_ref_of = keel::basic_context_ref<typename F::backend>;
template <class F>
using context_scope_of = keel::basic_context_scope<typename F::backend>;
}  // namespace

// ---- contexts ------------------------------------------------------------------

KEEL_BACKEND_TEST("context: a scope makes its context current and restores the previous one, nested",
                  "[runtime][context]") {
  KEEL_USING_BACKEND(TestType);
  const context_ref_of<TestType> before = context_ref_of<TestType>::current(dev);
  context_of<TestType> a{dev}, b{dev};
  CHECK(&a.device() == &dev);
  CHECK_FALSE(a.is_current());
  {
    context_scope_of<TestType> outer{a};
    CHECK(a.is_current());
    CHECK(outer.previous() == before);
    {
      context_scope_of<TestType> inner{b};
      CHECK(b.is_current());
      CHECK_FALSE(a.is_current());
      CHECK(inner.previous() == a.ref());
      stream s{dev};  // work still runs with another context current
      std::atomic<int> ran{0};
      s.launch_host([&] { ran = 1; });
      s.synchronize();
      CHECK(ran == 1);
    }
    CHECK(a.is_current());
  }
  CHECK_FALSE(a.is_current());
  CHECK(context_ref_of<TestType>::current(dev) == before);
}

KEEL_BACKEND_TEST("context: the current context is per thread", "[runtime][context]") {
  KEEL_USING_BACKEND(TestType);
  context_of<TestType> a{dev}, b{dev};
  context_scope_of<TestType> here{a};
  bool other_saw_a = true, other_saw_b = false;
  std::thread t([&] {
    other_saw_a = a.is_current();
    context_scope_of<TestType> there{b};
    other_saw_b = b.is_current();
  });
  t.join();
  CHECK_FALSE(other_saw_a);
  CHECK(other_saw_b);
  CHECK(a.is_current());
  CHECK_FALSE(b.is_current());
}

KEEL_BACKEND_TEST("context: a scope destroyed on another thread is reported, changes nothing, and its hold ends with "
                  "its thread",
                  "[runtime][context][rules]") {
  KEEL_USING_BACKEND(TestType);
  keel::testing::recorded_reports reports;
  context_of<TestType> a{dev};
  std::unique_ptr<context_scope_of<TestType>> scope;
  bool current_after = false;
  std::thread maker([&] {
    scope = std::make_unique<context_scope_of<TestType>>(a);
    std::thread([&] { scope.reset(); }).join();  // not the scope's thread
    current_after = a.is_current();              // nothing restored here
  });
  maker.join();  // the maker's end releases the scope's hold
  const auto got = reports.taken();
  REQUIRE(got.size() == 1);
  CHECK(got[0].code == keel::errc::invalid_state);
  CHECK(got[0].api == "keel::context_scope");
  CHECK(got[0].message.find("other than the one that made it") != std::string::npos);
  CHECK(current_after);
  CHECK_FALSE(a.is_current());
  a.close();  // no thread holds it any more
}

KEEL_BACKEND_TEST("context: close() is refused while a thread has the context current, and the context stays usable",
                  "[runtime][context][rules]") {
  KEEL_USING_BACKEND(TestType);
  context_of<TestType> a{dev};
  {
    context_scope_of<TestType> current{a};
    KEEL_REQUIRE_ERROR(a.close(), keel::errc::invalid_state, "held by 1 live context_scope");
    CHECK(a);
    CHECK(a.is_current());
  }
  {
    context_scope_of<TestType> again{a};  // still usable
    CHECK(a.is_current());
  }
  a.close();
  CHECK_FALSE(a);
  KEEL_REQUIRE_ERROR(a.close(), keel::errc::invalid_handle, "empty");
  KEEL_REQUIRE_ERROR(a.make_current(), keel::errc::invalid_handle, "empty");
  KEEL_REQUIRE_ERROR(context_scope_of<TestType>{a}, keel::errc::invalid_handle, "empty");
}

KEEL_BACKEND_TEST("context: a context destroyed while another thread has it current lives until that thread leaves it",
                  "[runtime][context]") {
  KEEL_USING_BACKEND(TestType);
  auto a = std::make_unique<context_of<TestType>>(dev);
  const context_ref_of<TestType> view = *a;
  std::atomic<int> step{0};
  bool still_current = false;
  std::thread t([&] {
    {
      context_scope_of<TestType> there{view};
      step = 1;
      while (step.load() != 2) std::this_thread::yield();
      still_current = view.is_current();  // the record is alive: the owner's destruction waits for this scope
    }
    step = 3;
  });
  while (step.load() != 1) std::this_thread::yield();
  a.reset();  // deferred: the other thread has it current
  step = 2;
  t.join();
  CHECK(still_current);
  CHECK(step == 3);
}

// ---- stream options --------------------------------------------------------------

KEEL_BACKEND_TEST("stream options: a stream reports the flags and priority it was made with", "[runtime][stream_options]") {
  KEEL_USING_BACKEND(TestType);
  stream plain{dev};
  CHECK(plain.flags() == keel::stream_flags::none);
  CHECK(plain.priority() == 0u);
  const keel::stream_options opts{keel::stream_flags::fast_launch | keel::stream_flags::fast_sync, 3};
  stream configured{dev, opts};
  CHECK(configured.flags() == (keel::stream_flags::fast_launch | keel::stream_flags::fast_sync));
  CHECK(configured.priority() == 3u);
  CHECK(keel::has_flags(configured.options().flags, keel::stream_flags::fast_sync));
  stream persistent{dev, keel::stream_options{keel::stream_flags::persistent, 7}};
  CHECK(persistent.flags() == keel::stream_flags::persistent);
  CHECK(persistent.priority() == 7u);
  CHECK(configured.runtime_id() != plain.runtime_id());
  std::atomic<int> ran{0};
  configured.launch_host([&] { ran = 1; });
  configured.synchronize();
  CHECK(ran == 1);
}

KEEL_BACKEND_TEST("stream options: unknown flag bits and a priority outside the device's range are refused",
                  "[runtime][stream_options][rules]") {
  KEEL_USING_BACKEND(TestType);
  const keel::stream_priority_range range = TestType::backend::priority_range(dev);
  CHECK(range.greatest == 0);
  CHECK(range.least == 7);
  KEEL_REQUIRE_ERROR((stream{dev, keel::stream_options{static_cast<keel::stream_flags>(0x100), 0}}),
                     keel::errc::invalid_parameter, "bits no stream flag has");
  KEEL_REQUIRE_ERROR((stream{dev, keel::stream_options{keel::stream_flags::none, 8}}), keel::errc::invalid_parameter,
                     "outside the device's range");
  stream after{dev, keel::stream_options{keel::stream_flags::huge, 7}};  // the device still makes streams
  CHECK(after.flags() == keel::stream_flags::huge);
}

KEEL_BACKEND_TEST("stream options: discard() destroys a stream without running the work it had not started",
                  "[runtime][stream_options]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  event gate_done{dev};
  std::atomic<bool> release{false};
  std::atomic<int> later{0};
  s.launch_host([&] {
    while (!release.load()) std::this_thread::yield();
  });
  for (int i = 0; i < 8; ++i) s.launch_host([&] { later.fetch_add(1); });
  gate_done.record(s);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    release = true;
  });
  s.discard();
  opener.join();
  CHECK_FALSE(s);
  CHECK(later == 0);
  gate_done.synchronize();  // the record still happened: a waiter does not hang
}

KEEL_BACKEND_TEST("context: a context a scope will restore outlives its handle, even replaced by make_current inside",
                  "[runtime][context]") {
  KEEL_USING_BACKEND(TestType);
  auto a = std::make_unique<context_of<TestType>>(dev);
  context_of<TestType> b{dev}, c{dev};
  const context_ref_of<TestType> view = *a;
  a->make_current();  // the thread's binding holds a
  {
    context_scope_of<TestType> inner{b};
    c.make_current();  // replaces the binding; a is parked, the scope will restore it
    a.reset();         // deferred: the scope restores a
    CHECK(c.is_current());
  }
  CHECK(view.is_current());  // a's record is alive and current again: the thread's binding
  CHECK(context_ref_of<TestType>::current(dev) == view);
  b.close();  // held by nothing: its scope ended
  c.close();  // its binding ended with the outermost scope, which restored a
  {
    context_scope_of<TestType> last{view};
    CHECK(view.is_current());
  }
  CHECK(view.is_current());
}
