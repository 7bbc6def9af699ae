// SPDX-License-Identifier: Apache-2.0
// The handle vocabulary on every backend ("... - host", "... - acl"): views
// made from native handles, equality, from_native_handle round trips,
// ownership (an owner owns, a view only views), owners passed where views are
// taken, the loan vocabulary of pooled events, and the RAII checklist for
// contexts, conditions, destroy-callback registrations and memory pools.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <utility>

#include "keel/host/memory_pool.hpp"
#include "keel/runtime/context.hpp"
#include "test_support.hpp"
#ifdef KEEL_ACL_EMULATION_DIR
#include "keel/acl/memory_pool.hpp"
#endif

namespace {

// A function template over the view, as user code writes it: an owner must
// deduce B through its ref base.
template <class B>
std::uint64_t id_through_view(keel::basic_stream_ref<B> s) {
  return s.id();
}
template <class B>
keel::event_flags flags_through_view(keel::basic_event_ref<B> e) {
  return e.flags();
}
template <class B>
std::size_t tasks_through_view(keel::basic_model_ref<B> m) {
  return m.task_count();
}
template <class B>
std::size_t size_through_view(keel::basic_task_group_ref<B> g) {
  return g.size();
}

// Whether `h.checked(api)` or `h.get()` compiles for H: neither may be public.
template <class H, class = void>
struct has_public_checked : std::false_type {};
template <class H>
struct has_public_checked<H, std::void_t<decltype(std::declval<const H&>().checked(""))>> : std::true_type {};
template <class H, class = void>
struct has_public_get : std::false_type {};
template <class H>
struct has_public_get<H, std::void_t<decltype(std::declval<const H&>().get())>> : std::true_type {};

// A captured model with one task group of one launch, on the fixture's backend.
template <class F>
struct captured_group_model {
  typename F::stream s{F::device()};
  float out = 0, tmp = 1, other = 1;
  typename F::model m;
  typename F::task_group g;
  captured_group_model() {
    typename F::capture_scope capture{s};
    {
      typename F::task_group_scope mark{s};
      F::axpy(s, &out, &tmp, &other, 2.0f);
      g = mark.end();
    }
    m = capture.end();
  }
};

}  // namespace

KEEL_BACKEND_TEST("handles: every owner is its ref, and neither exposes get() or checked()", "[runtime][handles]") {
  using F = TestType;
  KEEL_USING_BACKEND(F);
  STATIC_REQUIRE(std::is_base_of_v<stream_ref, stream>);
  STATIC_REQUIRE(std::is_base_of_v<event_ref, event>);
  STATIC_REQUIRE(std::is_base_of_v<event_ref, typename F::pooled_event>);
  STATIC_REQUIRE(std::is_base_of_v<model_ref, model>);
  STATIC_REQUIRE(std::is_base_of_v<task_group_ref, task_group>);
  STATIC_REQUIRE_FALSE(has_public_checked<stream>::value);
  STATIC_REQUIRE_FALSE(has_public_checked<stream_ref>::value);
  STATIC_REQUIRE_FALSE(has_public_checked<event>::value);
  STATIC_REQUIRE_FALSE(has_public_checked<model_ref>::value);
  STATIC_REQUIRE_FALSE(has_public_checked<task_group>::value);
  STATIC_REQUIRE_FALSE(has_public_get<stream>::value);
  STATIC_REQUIRE_FALSE(has_public_get<event>::value);
  STATIC_REQUIRE_FALSE(has_public_get<model>::value);
  STATIC_REQUIRE_FALSE(has_public_get<task_group>::value);
  STATIC_REQUIRE_FALSE(has_public_get<device_buffer>::value);
  // A view is made from a device and a native handle; 0 and nullptr are refused at compile time.
  using device_t = std::remove_reference_t<decltype(dev)>;
  STATIC_REQUIRE(std::is_constructible_v<stream_ref, device_t&, typename stream::native_handle_type>);
  STATIC_REQUIRE_FALSE(std::is_constructible_v<stream_ref, device_t&, int>);
  STATIC_REQUIRE_FALSE(std::is_constructible_v<stream_ref, device_t&, std::nullptr_t>);
  STATIC_REQUIRE_FALSE(std::is_constructible_v<event_ref, device_t&, std::nullptr_t>);
  STATIC_REQUIRE_FALSE(std::is_constructible_v<model_ref, device_t&, int>);
  STATIC_REQUIRE_FALSE(std::is_constructible_v<task_group_ref, device_t&, std::nullptr_t>);
  // An owner is not copyable: a view is what is copied.
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<stream>);
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<stream>);
  STATIC_REQUIRE(std::is_nothrow_move_assignable_v<event>);
  STATIC_REQUIRE(std::is_trivially_copyable_v<stream_ref>);
  STATIC_REQUIRE(sizeof(stream) == sizeof(stream_ref));
}

KEEL_BACKEND_TEST("handles: owners are taken wherever function templates take views", "[runtime][handles]") {
  using F = TestType;
  KEEL_USING_BACKEND(F);
  stream s{dev};
  CHECK(id_through_view(s) == s.id());
  event start{dev, keel::event_flags::timing}, end{dev, keel::event_flags::timing};
  CHECK(flags_through_view(start) == keel::event_flags::timing);
  start.record(s);
  end.record(s);
  s.synchronize();
  CHECK(keel::elapsed_time(start, end) >= 0.0f);  // owners, no backend wrapper
  CHECK(keel::elapsed_time(start.ref(), end) >= 0.0f);
  captured_group_model<F> c;
  CHECK(tasks_through_view(c.m) == 1);
  CHECK(size_through_view(c.g) == 1);
  external_event_pool pool{dev, 1};
  auto loan = pool.acquire(s);
  CHECK(flags_through_view(loan) == keel::event_flags::external);
}

KEEL_BACKEND_TEST("handles: equality holds between an owner and every view of it, and nowhere else",
                  "[runtime][handles]") {
  using F = TestType;
  KEEL_USING_BACKEND(F);
  stream a{dev}, b{dev};
  const stream_ref va = a;
  CHECK(va == a);
  CHECK(a == va);
  CHECK(stream_ref(dev, a.native_handle()) == a);  // a view made from the native handle finds the same stream
  CHECK(a != b);
  CHECK(va != b);
  CHECK(stream_ref{} == stream{});  // empty equals empty
  CHECK(stream_ref{} != a);

  event e{dev}, f{dev};
  CHECK(event_ref(dev, e.native_handle()) == e);
  CHECK(e != f);
  CHECK(event_ref{} == event{});

  captured_group_model<F> c1, c2;
  CHECK(model_ref(dev, c1.m.native_handle()) == c1.m);
  CHECK(c1.m != c2.m);
  CHECK(task_group_ref(dev, c1.g.native_handle()) == c1.g);
  CHECK(c1.g != c2.g);
  CHECK(task_group_ref{} == task_group{});

  device_buffer x{a, 64}, y{a, 64};
  CHECK(x == x);
  CHECK(x != y);
  CHECK(device_buffer{} == device_buffer{});

  external_event_pool pool{dev, 2};
  auto l1 = pool.acquire(a);
  auto l2 = pool.acquire(a);
  CHECK(event_ref(l1) == l1);
  CHECK(l1 != l2);

  keel::basic_memory_pool<typename F::backend> memory{dev};
  auto p1 = memory.allocate(a, 64);
  auto p2 = memory.allocate(a, 64);
  CHECK(p1 == p1);
  CHECK(p1 != p2);
  p1.reset();
  p2.reset();
  CHECK(p1 == p2);  // both empty
  a.synchronize();
}

KEEL_BACKEND_TEST("handles: from_native_handle takes back what release() gave up, with its books",
                  "[runtime][handles]") {
  using F = TestType;
  KEEL_USING_BACKEND(F);
  stream s{dev};
  const std::uint64_t id = s.id();
  const auto raw_stream = s.release();
  REQUIRE_FALSE(s);
  {
    const stream_ref view{dev, raw_stream};  // released: still a stream keel can view
    CHECK(view.id() == id);
  }
  s = stream::from_native_handle(dev, raw_stream);
  CHECK(s.native_handle() == raw_stream);
  CHECK(s.id() == id);
  int ran = 0;
  s.launch_host([&] { ++ran; });
  s.synchronize();
  CHECK(ran == 1);

  event e{dev, keel::event_flags::timing};
  const auto raw_event = e.release();
  e = event::from_native_handle(dev, raw_event, keel::event_flags::timing);
  CHECK(e.native_handle() == raw_event);
  CHECK(e.flags() == keel::event_flags::timing);

  captured_group_model<F> c;
  const auto raw_group = c.g.release();
  const auto raw_model = c.m.release();
  CHECK_FALSE(c.m);
  CHECK_FALSE(c.g);
  c.m = model::from_native_handle(dev, raw_model);
  c.g = task_group::from_native_handle(dev, raw_group);
  CHECK(c.m.task_count() == 1);
  CHECK(c.m.group_count() == 1);
  CHECK(c.g.size() == 1);
  CHECK(c.g.model_alive());
  // The round trip kept the group updatable.
  stream u{dev};
  {
    update_scope update{u, c.g};
    F::axpy(u, &c.out, &c.tmp, &c.other, 5.0f);
    update.end();
  }
  u.synchronize();  // the update is applied in u's order
  c.m.execute(s);
  s.synchronize();
  CHECK(c.out == 6.0f);

  KEEL_REQUIRE_ERROR(stream::from_native_handle(dev, typename stream::native_handle_type{}), keel::errc::null_parameter,
                     "null stream");
  KEEL_REQUIRE_ERROR(model::from_native_handle(dev, typename model::native_handle_type{}), keel::errc::null_parameter,
                     "null model");
  KEEL_REQUIRE_ERROR((task_group_ref{dev, typename task_group::native_handle_type{}}), keel::errc::null_parameter,
                     "null task group");
}

KEEL_BACKEND_TEST("handles: a view never owns: dropping views leaves the owner's stream working", "[runtime][handles]") {
  using F = TestType;
  KEEL_USING_BACKEND(F);
  stream s{dev};
  for (int i = 0; i < 3; ++i) {
    stream_ref view{dev, s.native_handle()};
    view.launch_host([] {});
  }  // each view goes: nothing is destroyed
  int ran = 0;
  s.launch_host([&] { ++ran; });
  s.synchronize();
  CHECK(ran == 1);
  s.reset();  // the owner destroys; the views were never owners
  CHECK_FALSE(s);
}

KEEL_BACKEND_TEST("handles: a pooled event's loan is reset to its pool, or released for good", "[runtime][handles]") {
  using F = TestType;
  KEEL_USING_BACKEND(F);
  using pooled_event = typename F::pooled_event;
  stream s{dev};
  external_event_pool pool{dev, 2};
  pooled_event loan = pool.acquire(s);
  const auto native = loan.native_handle();
  REQUIRE(loan);
  CHECK(pool.size() == 1);
  CHECK(pool.idle() == 0);

  loan.reset();  // back to the pool, not destroyed
  CHECK_FALSE(loan);
  CHECK(loan.native_handle() == typename pooled_event::native_handle_type{});
  CHECK(pool.size() == 1);
  CHECK(pool.idle() == 1);

  loan = pool.acquire(s);
  CHECK(loan.native_handle() == native);  // the same event again
  pooled_event other = pool.acquire(s);
  swap(loan, other);
  CHECK(other.native_handle() == native);
  loan = std::move(other);  // the loan held before goes back to the pool
  CHECK(pool.idle() == 1);
  CHECK(loan.native_handle() == native);

  event mine = loan.release();  // the pool lets it go: the caller owns it now
  CHECK_FALSE(loan);
  CHECK(mine.native_handle() == native);
  CHECK(mine.flags() == keel::event_flags::external);
  CHECK(pool.size() == 1);  // only the idle one is the pool's
  pooled_event a = pool.acquire(s), b = pool.acquire(s);  // the released one freed a place
  CHECK(pool.size() == 2);
  KEEL_REQUIRE_ERROR(pool.acquire(s), keel::errc::resource_limit, "on loan");
  s.synchronize();
}

KEEL_BACKEND_TEST("handles: clear_signal(stream) clears an external event's signal and keeps it, reset() destroys it",
                  "[runtime][handles][event]") {
  using F = TestType;
  KEEL_USING_BACKEND(F);
  using pooled_event = typename F::pooled_event;
  stream s{dev};
  event e{dev, keel::event_flags::external};
  e.record(s);
  s.synchronize();
  CHECK(e.query());
  e.clear_signal(s);  // CANN's aclrtResetEvent, torch_npu's Event.reset(stream)
  s.synchronize();
  CHECK(e);  // the event lives on
  CHECK_FALSE(e.query());
  e.record(s);
  s.synchronize();
  CHECK(e.query());
  // Through a view, in a capture: each replay clears the signal.
  const event_ref view = e;
  model m;
  {
    capture_scope capture{s};
    view.clear_signal(s);
    m = capture.end();
  }
  CHECK(e.query());  // captured, not run
  m.execute(s);
  s.synchronize();
  CHECK_FALSE(e.query());
  // A pooled event's signal, the loan kept.
  external_event_pool pool{dev, 1};
  pooled_event loan = pool.acquire(s);
  loan.record(s);
  s.synchronize();
  CHECK(loan.query());
  loan.clear_signal(s);
  s.synchronize();
  CHECK(loan);
  CHECK_FALSE(loan.query());
  // Only external events carry a signal to clear.
  event plain{dev};
  KEEL_REQUIRE_ERROR(plain.clear_signal(s), keel::errc::invalid_parameter, "only external events");
  CHECK(plain);
  // reset() is the owner's: it destroys the event, as unique_ptr's does.
  e.reset();
  CHECK_FALSE(e);
  KEEL_REQUIRE_ERROR(e.clear_signal(s), keel::errc::invalid_handle, "keel::event::clear_signal");
}

// ---- the RAII checklist for the handles added last: contexts, conditions,
// destroy-callback registrations, memory pools and their allocations --------

namespace {
template <class F>
using context_of = keel::basic_context<typename F::backend>;
template <class F>
using context_ref_of = keel::basic_context_ref<typename F::backend>;

// A destroy callback that counts its calls in the int it is given.
void count_into(void* user) { ++*static_cast<int*>(user); }
}  // namespace

KEEL_BACKEND_TEST("handles: a context owner is its ref, speaks the native type and refuses 0 and nullptr",
                  "[runtime][handles][context]") {
  using F = TestType;
  KEEL_USING_BACKEND(F);
  using context = context_of<F>;
  using context_ref = context_ref_of<F>;
  using device_t = std::remove_reference_t<decltype(dev)>;
  STATIC_REQUIRE(std::is_base_of_v<context_ref, context>);
  STATIC_REQUIRE_FALSE(has_public_checked<context>::value);
  STATIC_REQUIRE_FALSE(has_public_checked<context_ref>::value);
  STATIC_REQUIRE_FALSE(has_public_get<context>::value);
  STATIC_REQUIRE(std::is_constructible_v<context_ref, device_t&, typename context::native_handle_type>);
  STATIC_REQUIRE_FALSE(std::is_constructible_v<context_ref, device_t&, int>);
  STATIC_REQUIRE_FALSE(std::is_constructible_v<context_ref, device_t&, std::nullptr_t>);
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<context>);
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<context>);
  STATIC_REQUIRE(std::is_nothrow_move_assignable_v<context>);
  STATIC_REQUIRE(std::is_trivially_copyable_v<context_ref>);
  STATIC_REQUIRE(sizeof(context) == sizeof(context_ref));
  // On ACL the native handle is the aclrtContext, not keel's record of it.
  STATIC_REQUIRE(std::is_same_v<typename context::native_handle_type, typename F::backend::context_handle> ==
                 F::is_host);
}

KEEL_BACKEND_TEST("handles: RAII checklist for contexts, every field after moves", "[runtime][handles][context]") {
  using F = TestType;
  KEEL_USING_BACKEND(F);
  using context = context_of<F>;
  using context_ref = context_ref_of<F>;
  using native_t = typename context::native_handle_type;
  context empty;
  CHECK_FALSE(empty);
  CHECK(empty.native_handle() == native_t{});
  CHECK(empty == context_ref{});
  KEEL_REQUIRE_ERROR(empty.device(), keel::errc::invalid_handle, "empty");

  context a{dev};
  REQUIRE(a);
  const native_t native_a = a.native_handle();
  CHECK(native_a != native_t{});
  CHECK(a.ref().native_handle() == native_a);
  CHECK(context_ref(dev, native_a) == a);  // a view made from the native handle finds the same context
  CHECK(&a.device() == &dev);

  SECTION("move construction leaves the source empty") {
    context b{std::move(a)};
    CHECK(b.native_handle() == native_a);
    CHECK_FALSE(a);
    CHECK(a.native_handle() == native_t{});
    KEEL_REQUIRE_ERROR(a.make_current(), keel::errc::invalid_handle, "moved from");
  }
  SECTION("move assignment destroys the old context and takes the new") {
    context b{dev};
    const native_t native_b = b.native_handle();
    b = std::move(a);
    CHECK(b.native_handle() == native_a);
    CHECK_FALSE(a);
    if constexpr (!F::is_host) {
      // ACL no longer knows the old one: keel destroyed it (aclrtDestroyContext).
      CHECK(dev.functions().aclrtDestroyContext(native_b) != 0);
    } else {
      (void)native_b;
    }
  }
  SECTION("self-move keeps the context") {
    context& self = a;
    a = std::move(self);
    CHECK(a.native_handle() == native_a);
    CHECK(&a.device() == &dev);
  }
  SECTION("swap exchanges both handles") {
    context b{dev};
    const native_t native_b = b.native_handle();
    swap(a, b);
    CHECK(a.native_handle() == native_b);
    CHECK(b.native_handle() == native_a);
    a.swap(b);
    CHECK(a.native_handle() == native_a);
  }
  SECTION("release hands the native context over; from_native_handle takes it back") {
    const native_t raw = a.release();
    CHECK_FALSE(a);
    CHECK(raw == native_a);
    {
      const context_ref view{dev, raw};  // released: still a context keel can view
      keel::basic_context_scope<typename F::backend> current{view};
      CHECK(view.is_current());
    }
    context again = context::from_native_handle(dev, raw);
    CHECK(again.native_handle() == native_a);
    CHECK(context_ref(dev, raw) == again);
    KEEL_REQUIRE_ERROR(context::from_native_handle(dev, native_t{}), keel::errc::null_parameter, "null context");
    if constexpr (!F::is_host) {
      KEEL_REQUIRE_ERROR(context::from_native_handle(dev, raw), keel::errc::invalid_parameter, "owns this ACL handle");
    }
    again.reset();
    CHECK_FALSE(again);
  }
  SECTION("reset and close empty the handle") {
    a.reset();
    CHECK_FALSE(a);
    a.reset();  // again: nothing to destroy
    context b{dev};
    b.close();
    CHECK_FALSE(b);
  }
}

#ifdef KEEL_ACL_EMULATION_DIR
TEST_CASE("handles: an aclrtContext made elsewhere is viewed, then owned and destroyed by keel - acl",
          "[runtime][handles][context][acl]") {
  using context = keel::basic_context<keel::acl::backend>;
  using context_ref = keel::basic_context_ref<keel::acl::backend>;
  keel::acl::device& dev = ::acl::device();
  keel::acl::context_handle raw = nullptr;
  std::thread maker([&] {  // aclrtCreateContext makes it current: on a thread of its own, which then ends
    REQUIRE(dev.functions().aclrtCreateContext(&raw, dev.id()) == 0);
  });
  maker.join();
  REQUIRE(raw != nullptr);
  {
    const context_ref view{dev, raw};
    CHECK(view.native_handle() == raw);
    CHECK(&view.device() == &dev);
    CHECK(context_ref(dev, raw) == view);  // one record per native context
  }
  context owner = context::from_native_handle(dev, raw);
  CHECK(owner == context_ref(dev, raw));
  owner.reset();                                         // keel owns it now: aclrtDestroyContext
  CHECK(dev.functions().aclrtDestroyContext(raw) != 0);  // ACL no longer knows it
}

TEST_CASE("handles: the default context aclrtSetDevice binds is viewed, never owned - acl",
          "[runtime][handles][context][acl]") {
  using context = keel::basic_context<keel::acl::backend>;
  using context_ref = keel::basic_context_ref<keel::acl::backend>;
  keel::acl::device& dev = ::acl::device();
  keel::acl::context_handle bound = nullptr;
  std::thread fresh([&] {  // a thread keel has not entered: make_current() is aclrtSetDevice
    dev.make_current();
    REQUIRE(dev.functions().aclrtGetCurrentContext(&bound) == 0);
  });
  fresh.join();
  REQUIRE(bound != nullptr);
  CHECK(dev.default_context() == bound);
  KEEL_REQUIRE_ERROR(context::from_native_handle(dev, bound), keel::errc::invalid_parameter,
                     "default context (aclrtSetDevice binds it, aclrtResetDevice ends it): keel cannot own it");
  // Refused with nothing taken: keel still views it, and ACL makes it current.
  const context_ref view{dev, bound};
  CHECK(view.native_handle() == bound);
  {
    keel::basic_context_scope<keel::acl::backend> current{view};
    CHECK(view.is_current());
  }
}
#endif

KEEL_BACKEND_TEST("handles: RAII checklist for conditions, a value speaking the native type", "[runtime][handles]") {
  using F = TestType;
  KEEL_USING_BACKEND(F);
  using B = typename F::backend;
  using condition = keel::basic_condition<B>;
  STATIC_REQUIRE(std::is_trivially_copyable_v<condition>);
  STATIC_REQUIRE_FALSE(
      std::is_constructible_v<condition, typename B::condition_handle>);  // only make_condition makes one
  STATIC_REQUIRE_FALSE(has_public_get<condition>::value);
  STATIC_REQUIRE(std::is_same_v<typename condition::native_handle_type, typename B::condition_handle> == F::is_host);
  const condition empty;
  CHECK_FALSE(empty);
  CHECK(empty.value() == nullptr);
  CHECK(empty.native_handle() == typename condition::native_handle_type{});
  CHECK(empty == condition{});

  stream s{dev};
  capture_scope capture{s};
  const condition a = keel::make_condition<B>(s, 1), b = keel::make_condition<B>(s, 2, false);
  REQUIRE(a);
  CHECK(a.native_handle() != typename condition::native_handle_type{});
  CHECK(a.value() != nullptr);
  CHECK(a != b);
  CHECK(a.native_handle() != b.native_handle());
  condition copy = a;  // a value: copies name the same condition
  CHECK(copy == a);
  CHECK(copy.native_handle() == a.native_handle());
  CHECK(copy.value() == a.value());
  copy = b;
  CHECK(copy == b);
  CHECK(copy != a);
  copy = condition{};
  CHECK_FALSE(copy);
  CHECK(copy == empty);
  model m = capture.end();  // the model owns both conditions now
  CHECK(a);
}

KEEL_BACKEND_TEST("handles: RAII checklist for destroy-callback registrations, every field after moves",
                  "[runtime][handles][introspection]") {
  using F = TestType;
  KEEL_USING_BACKEND(F);
  using registration = keel::basic_destroy_callback<typename F::backend>;
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<registration>);
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<registration>);
  STATIC_REQUIRE(std::is_nothrow_move_assignable_v<registration>);
  const registration empty;
  CHECK_FALSE(empty.active());
  CHECK(empty == registration{});

  int calls1 = 0, calls2 = 0;
  captured_group_model<F> c1, c2;
  registration r1 = c1.m.on_destroy(&count_into, &calls1);
  registration r2 = c2.m.on_destroy(&count_into, &calls2);
  CHECK(r1.active());
  CHECK(r1 != r2);
  CHECK(r1 != empty);

  SECTION("move construction takes the model, the function and its argument") {
    registration moved{std::move(r1)};
    CHECK_FALSE(r1.active());
    CHECK(r1 == empty);
    CHECK(moved.active());
    r1.reset();  // the moved-from one unregisters nothing
    c1.m.reset();
    CHECK(calls1 == 1);  // the moved registration still stood, with its argument
    CHECK_FALSE(moved.active());
  }
  SECTION("move assignment unregisters the old registration and takes the new") {
    r1 = std::move(r2);
    CHECK_FALSE(r2.active());
    CHECK(r1.active());
    c1.m.reset();
    CHECK(calls1 == 0);  // unregistered by the assignment
    r1.reset();
    c2.m.reset();
    CHECK(calls2 == 0);  // the taken registration was c2's: reset unregistered it
  }
  SECTION("self-move keeps the registration") {
    registration& self = r1;
    r1 = std::move(self);
    CHECK(r1.active());
    c1.m.reset();
    CHECK(calls1 == 1);
  }
  SECTION("swap exchanges every field") {
    swap(r1, r2);
    r1.reset();  // now c2's registration
    c1.m.reset();
    c2.m.reset();
    CHECK(calls1 == 1);
    CHECK(calls2 == 0);
  }
  SECTION("release leaves the callback registered; reset unregisters it") {
    r1.release();
    CHECK_FALSE(r1.active());
    CHECK(r1 == empty);
    r2.reset();
    CHECK_FALSE(r2.active());
    c1.m.reset();
    c2.m.reset();
    CHECK(calls1 == 1);
    CHECK(calls2 == 0);
  }
}

KEEL_BACKEND_TEST("handles: RAII checklist for memory pools and their allocations", "[runtime][handles][memory_pool]") {
  using F = TestType;
  KEEL_USING_BACKEND(F);
  using pool_t = keel::basic_memory_pool<typename F::backend>;
  using pool_ref = keel::basic_memory_pool_ref<typename F::backend>;
  using buffer_t = keel::basic_pool_buffer<typename F::backend>;
  STATIC_REQUIRE(std::is_base_of_v<pool_ref, pool_t>);
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<pool_t>);
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<buffer_t>);
  STATIC_REQUIRE(std::is_nothrow_move_assignable_v<pool_t>);
  STATIC_REQUIRE(std::is_nothrow_move_assignable_v<buffer_t>);
  stream s{dev};
  const pool_t empty_pool;
  const buffer_t empty_buffer;
  CHECK_FALSE(empty_pool);
  CHECK_FALSE(empty_buffer);
  CHECK(empty_pool == pool_ref{});
  KEEL_REQUIRE_ERROR(empty_pool.statistics(), keel::errc::invalid_handle, "empty");
  KEEL_REQUIRE_ERROR(empty_buffer.data(), keel::errc::invalid_handle, "empty");

  pool_t p{dev}, q{dev};
  const pool_ref view_p = p;
  CHECK(view_p == p);
  CHECK(p != q);
  buffer_t x = p.allocate(s, 64), y = p.allocate(s, 128);
  void* const data_x = x.data();
  const std::size_t used_by_both = p.statistics().used;
  CHECK(used_by_both >= 192);

  SECTION("a buffer's move construction, move assignment (releasing the old), self-move and swap") {
    buffer_t moved{std::move(x)};
    CHECK_FALSE(x);
    CHECK(moved.data() == data_x);
    CHECK(moved.size() == 64);
    CHECK(moved.from(p));
    moved = std::move(y);  // the 64-byte allocation is released
    CHECK_FALSE(y);
    CHECK(moved.size() == 128);
    s.synchronize();
    CHECK(p.statistics().used < used_by_both);
    buffer_t& self = moved;
    moved = std::move(self);
    CHECK(moved.size() == 128);
    buffer_t other = q.allocate(s, 32);
    swap(moved, other);
    CHECK(moved.size() == 32);
    CHECK(moved.from(q));
    CHECK(other.size() == 128);
    CHECK(other.from(p));
  }
  SECTION("a buffer's reset releases it; a pool's move, self-move, swap and reset") {
    x.reset();
    CHECK_FALSE(x);
    CHECK(x == empty_buffer);
    pool_t moved{std::move(p)};
    CHECK_FALSE(p);
    CHECK(moved == view_p);  // the same pool, now held by another owner
    CHECK(y.from(moved));
    pool_t& self = moved;
    moved = std::move(self);
    CHECK(moved == view_p);
    swap(moved, q);
    CHECK(q == view_p);
    CHECK(moved != view_p);
    moved.reset();
    CHECK_FALSE(moved);
    y.reset();
  }
  s.synchronize();
}
