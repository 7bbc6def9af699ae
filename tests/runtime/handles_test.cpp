// SPDX-License-Identifier: Apache-2.0
// The handle vocabulary on every backend ("... - host", "... - acl"): views
// made from native handles, equality, from_native_handle round trips,
// ownership (an owner owns, a view only views), owners passed where views are
// taken, and the loan vocabulary of pooled events.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "keel/host/memory_pool.hpp"
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
struct captured {
  typename F::stream s{F::device()};
  float out = 0, tmp = 1, other = 1;
  typename F::model m;
  typename F::task_group g;
  captured() {
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
  captured<F> c;
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

  captured<F> c1, c2;
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

  captured<F> c;
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
