// SPDX-License-Identifier: Apache-2.0
// What a model's launches use lives as long as the model runs them, on every
// backend and every path, composed the way a graph runner composes them: an
// operator with a workspace captured, replaced by a task-group update, or
// given to a whole-model update's source, with the caller's buffer dropped
// right after; and one pool given to capture_scope covers every allocation
// of the capture (an operator's workspace without a registration, the
// allocations of conditional bodies at any depth). The pool's statistics
// show what is held, and a fresh allocation of the same size must not get a
// block a model still runs on.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "keel/host/memory_pool.hpp"
#include "keel/ops.hpp"
#include "keel/ops/kernels/static_dispatch.hpp"
#include "keel/ops/launch.hpp"
#include "keel/runtime/condition.hpp"
#include "keel/runtime/model_update.hpp"
#include "keel/runtime/stream_allocator.hpp"
#include "test_support.hpp"
#include "workspace_operator.hpp"
#ifdef KEEL_ACL_EMULATION_DIR
#include "keel/acl/memory_pool.hpp"
#endif

namespace {

using keel::ops::dtype;
using keel::ops::scalar;
using keel::ops::tensor;

using keel_test::bmm;
using keel_test::plan_target;

template <class F, class Model>
bool runs_to(const Model& m, const typename F::stream& s, bmm& o, float want) {
  o.clear();
  m.execute(s);
  s.synchronize();
  return o.all(want);
}

}  // namespace

KEEL_BACKEND_TEST("update memory: a task-group update keeps the workspace its operator runs on after the caller drops it",
                  "[runtime][update_memory]") {
  using F = TestType;
  using B = typename F::backend;
  typename F::stream s{F::device()}, u{F::device()};
  bmm o;
  auto first = o.prepare<F>(1.0f);
  const std::size_t bytes = first.workspace_size();
  REQUIRE(bytes > 0);
  keel::basic_memory_pool<B> pool{F::device(), {"workspaces"}};
  typename F::model m;
  keel::basic_task_group<B> group;
  {
    auto ws = pool.allocate(s, bytes);
    typename F::capture_scope capture{s};
    keel::basic_task_group_scope<B> marking{s};
    keel::ops::run_on(s, first, ws.span());
    group = marking.end();
    m = capture.end();
  }
  REQUIRE(runs_to<F>(m, s, o, 5.0f));
  void* updated_at = nullptr;
  {
    auto second = o.prepare<F>(2.0f);
    auto ws = pool.allocate(u, bytes);
    updated_at = ws.data();
    keel::basic_update_scope<B> update{u, group};
    keel::ops::run_on(u, second, ws.span());
    update.end();
  }  // the caller's workspace and executor go
  u.synchronize();
  CHECK(pool.statistics().used >= bytes);  // the group's task holds its workspace
  auto fresh = pool.allocate(u, bytes);
  CHECK(fresh.data() != updated_at);  // not handed out while the model runs on it
  CHECK(runs_to<F>(m, s, o, 9.0f));
  CHECK(runs_to<F>(m, s, o, 9.0f));
  {
    // A later update replaces the task: its own workspace, the fresh block.
    auto third = o.prepare<F>(3.0f);
    keel::basic_update_scope<B> update{u, group};
    keel::ops::run_on(u, third, fresh.span());
    update.end();
  }
  fresh.reset();
  u.synchronize();
  CHECK(runs_to<F>(m, s, o, 13.0f));
  m.reset();
  s.synchronize();
  u.synchronize();
  group = keel::basic_task_group<B>{};
  s.synchronize();
  u.synchronize();
  CHECK(pool.statistics().used == 0);  // the model and its group went: every workspace went back
}

KEEL_BACKEND_TEST("update memory: run_on(s, ex) in an update takes a workspace the group keeps",
                  "[runtime][update_memory]") {
  using F = TestType;
  using B = typename F::backend;
  typename F::stream s{F::device()}, u{F::device()};
  bmm o;
  auto first = o.prepare<F>(1.0f);
  const std::size_t bytes = first.workspace_size();
  keel::basic_memory_pool<B> pool{F::device(), {"workspaces"}};
  keel::basic_allocator_registration<B> uses{u, pool};
  typename F::model m;
  keel::basic_task_group<B> group;
  {
    typename F::capture_scope capture{s};
    keel::basic_task_group_scope<B> marking{s};
    keel::ops::run_on(s, first);
    group = marking.end();
    m = capture.end();
  }
  {
    auto second = o.prepare<F>(2.0f);
    keel::basic_update_scope<B> update{u, group};
    keel::ops::run_on(u, second);  // from u's registered pool, released when the call returns
    update.end();
  }
  u.synchronize();
  CHECK(pool.statistics().allocations == 1);
  CHECK(pool.statistics().used >= bytes);
  CHECK(runs_to<F>(m, s, o, 9.0f));
  {
    // On a stream with no registration the workspace is the device's, freed
    // once nothing holds it: the group holds it while the task runs on it.
    typename F::stream w{F::device()};
    auto third = o.prepare<F>(3.0f);
    keel::basic_update_scope<B> update{w, group};
    keel::ops::run_on(w, third);
    update.end();
    w.synchronize();
  }
  CHECK(runs_to<F>(m, s, o, 13.0f));
  CHECK(runs_to<F>(m, s, o, 13.0f));
}

KEEL_BACKEND_TEST("update memory: a captured operator keeps its workspace after the caller drops the buffer",
                  "[runtime][update_memory]") {
  using F = TestType;
  using B = typename F::backend;
  typename F::stream s{F::device()};
  bmm o;
  auto ex = o.prepare<F>(2.0f);
  const std::size_t bytes = ex.workspace_size();
  keel::basic_memory_pool<B> pool{F::device(), {"workspaces"}};
  typename F::model m;
  void* captured_at = nullptr;
  {
    auto ws = pool.allocate(s, bytes);
    captured_at = ws.data();
    typename F::capture_scope capture{s};
    keel::ops::run_on(s, ex, ws.span());
    m = capture.end();
  }
  s.synchronize();
  CHECK(pool.statistics().used >= bytes);
  auto other = pool.allocate(s, bytes);
  CHECK(other.data() != captured_at);
  CHECK(runs_to<F>(m, s, o, 9.0f));
  // The workspace the stream's registered pool gave a captured run_on(s, ex): the same.
  typename F::model registered;
  {
    keel::basic_allocator_registration<B> uses{s, pool};
    typename F::capture_scope capture{s};
    keel::ops::run_on(s, ex);
    registered = capture.end();
  }
  s.synchronize();
  CHECK(pool.statistics().used >= 3 * bytes);  // other, and each model's workspace
  CHECK(runs_to<F>(registered, s, o, 9.0f));
}

KEEL_BACKEND_TEST("update memory: a whole-model update keeps what the source's tasks use after the source goes",
                  "[runtime][update_memory]") {
  using F = TestType;
  using B = typename F::backend;
  typename F::stream s{F::device()};
  bmm o;
  auto one = o.prepare<F>(1.0f);
  auto two = o.prepare<F>(2.0f);
  const std::size_t bytes = one.workspace_size();
  keel::basic_memory_pool<B> pool{F::device(), {"workspaces"}};
  const auto capture_with = [&](auto& ex) {
    auto ws = pool.allocate(s, bytes);
    typename F::capture_scope capture{s};
    keel::ops::run_on(s, ex, ws.span());
    return capture.end();
  };
  typename F::model target = capture_with(one);
  typename F::model source = capture_with(two);
  keel::update_model<B>(target, source, s);
  source.reset();
  s.synchronize();
  CHECK(pool.statistics().used >= bytes);  // the source's workspace, which the target's task runs on now
  CHECK(runs_to<F>(target, s, o, 9.0f));
  target.reset();
  s.synchronize();
  CHECK(pool.statistics().used == 0);
}

KEEL_BACKEND_TEST("capture memory: run_on(s, ex) in capture_scope{s, pool} takes its workspace from the pool",
                  "[runtime][update_memory][memory_pool]") {
  using F = TestType;
  using B = typename F::backend;
  typename F::stream s{F::device()};
  bmm o;
  auto ex = o.prepare<F>(2.0f);
  const std::size_t bytes = ex.workspace_size();
  keel::basic_memory_pool<B> pool{F::device(), {"graph pool"}};
  typename F::model m;
  {
    typename F::capture_scope capture{s, pool};  // no allocator registration
    keel::ops::run_on(s, ex);
    m = capture.end();
  }
  s.synchronize();
  CHECK(pool.statistics().allocations == 1);
  CHECK(pool.statistics().used >= bytes);
  CHECK(m.holds_pool_memory());
  CHECK(runs_to<F>(m, s, o, 9.0f));
  m.reset();
  s.synchronize();
  CHECK(pool.statistics().used == 0);
}

KEEL_BACKEND_TEST("capture memory: pool allocations inside conditional bodies, nested too, belong to the model",
                  "[runtime][update_memory][memory_pool][conditional]") {
  using F = TestType;
  using B = typename F::backend;
  typename F::stream s{F::device()}, side{F::device()}, inner{F::device()};
  keel::basic_memory_pool<B> pool{F::device(), {"graph pool"}};
  constexpr std::size_t bytes = 4096;
  static const float one = 1.0f;
  float* body_at = nullptr;
  float* nested_at = nullptr;
  typename F::model m;
  {
    typename F::capture_scope capture{s, pool};
    auto c = keel::make_condition<B>(s, 1, false);
    auto body = keel::if_<B>(s, c);
    {
      keel::basic_body_capture_scope<B> into{side, body};
      {
        auto x = pool.allocate(side, bytes);  // a temporary of the body: dropped during its capture
        body_at = x.template data_as<float>();
        F::axpy(side, body_at, &one, &one, 1.0f);  // the body writes it at every execution
      }
      auto nested_condition = keel::make_condition<B>(side, 1, false);
      auto nested = keel::if_<B>(side, nested_condition);
      {
        keel::basic_body_capture_scope<B> deeper{inner, nested};
        auto y = pool.allocate(inner, bytes);
        nested_at = y.template data_as<float>();
        F::axpy(inner, nested_at, &one, &one, 2.0f);
        deeper.end();
      }
      into.end();
    }
    m = capture.end();
  }
  s.synchronize();
  CHECK(pool.statistics().used >= 2 * bytes);
  auto a = pool.allocate(s, bytes);
  auto b = pool.allocate(s, bytes);
  CHECK(a.data() != body_at);
  CHECK(a.data() != nested_at);
  CHECK(b.data() != body_at);
  CHECK(b.data() != nested_at);
  m.execute(s);
  s.synchronize();
  CHECK(*body_at == 2.0f);
  CHECK(*nested_at == 3.0f);
  a.reset();
  b.reset();
  m.reset();
  s.synchronize();
  CHECK(pool.statistics().used == 0);
}

KEEL_BACKEND_TEST("capture memory: a body captured with a pool of its own gives the model that pool's memory",
                  "[runtime][update_memory][memory_pool][conditional]") {
  using F = TestType;
  using B = typename F::backend;
  typename F::stream s{F::device()}, side{F::device()};
  keel::basic_memory_pool<B> body_pool{F::device(), {"body pool"}};
  bmm o;
  auto ex = o.prepare<F>(2.0f);
  const std::size_t bytes = ex.workspace_size();
  constexpr std::size_t scratch = 4096;
  static const float one = 1.0f;
  float* body_at = nullptr;
  typename F::model m;
  {
    typename F::capture_scope capture{s};  // the model's capture has no pool
    auto c = keel::make_condition<B>(s, 1, false);
    auto body = keel::if_<B>(s, c);
    {
      keel::basic_body_capture_scope<B> into{side, body, body_pool};
      {
        auto x = body_pool.allocate(side, scratch);
        body_at = x.template data_as<float>();
        F::axpy(side, body_at, &one, &one, 1.0f);
      }
      keel::ops::run_on(side, ex);  // its workspace from the body's pool
      into.end();
    }
    m = capture.end();
  }
  s.synchronize();
  CHECK(m.holds_pool_memory());
  CHECK(body_pool.statistics().allocations == 2);
  CHECK(body_pool.statistics().used >= scratch + bytes);
  auto other = body_pool.allocate(s, scratch);
  CHECK(other.data() != body_at);
  CHECK(runs_to<F>(m, s, o, 9.0f));
  CHECK(*body_at == 2.0f);
  other.reset();
  m.reset();
  s.synchronize();
  CHECK(body_pool.statistics().used == 0);
}

KEEL_BACKEND_TEST("allocator registration: moves carry the registration, a moved-from one holds none",
                  "[runtime][memory_pool][registration]") {
  using F = TestType;
  using B = typename F::backend;
  using registration = keel::basic_allocator_registration<B>;
  typename F::stream s{F::device()};
  keel::basic_memory_pool<B> pool{F::device(), {"client"}};
  std::optional<registration> first;
  first.emplace(s, pool);
  registration kept{std::move(*first)};
  CHECK_FALSE(static_cast<bool>(*first));
  CHECK_FALSE(static_cast<bool>(first->stream()));
  CHECK(static_cast<bool>(kept));
  CHECK(kept.stream().id() == s.id());
  first.reset();  // a moved-from registration unregisters nothing
  CHECK(keel::registered_pool<B>(s) == pool);
  registration again{std::move(kept)};
  kept = std::move(again);  // back: again holds none
  CHECK(static_cast<bool>(kept));
  CHECK_FALSE(static_cast<bool>(again));
  CHECK(keel::registered_pool<B>(s) == pool);
  kept.reset();
  CHECK_FALSE(static_cast<bool>(kept));
  CHECK_FALSE(keel::registered_pool<B>(s));
  registration next{s, pool};  // the stream takes a registration again
  typename F::stream t{F::device()};
  registration onto{t, pool};
  onto = std::move(next);  // unregisters t's, takes s's
  CHECK_FALSE(keel::registered_pool<B>(t));
  CHECK(keel::registered_pool<B>(s) == pool);
  CHECK(onto.stream().id() == s.id());
}
