// SPDX-License-Identifier: Apache-2.0
// The host backend's native conditional calls: a condition is a 64-bit value
// the model owns (its capture keeps it, and with assign-default a task at
// the point of its creation resets it on every execution); a conditional
// task reads it when it runs, on the executing stream, and runs its bodies
// there: IF one of two, WHILE its body until the value is 0, SWITCH body
// `value` (none past the last). The bodies are models the task owns, filled
// by a capture into them. The checked layer
// (keel/runtime/checked/conditional.hpp) decides what may be made and issued.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "keel/host/capture.hpp"
#include "keel/host/detail/handles.hpp"
#include "keel/runtime/backend/conditional.hpp"
#include "keel/runtime/checked/condition_books.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
struct condition_state : ref_counted {
  std::uint64_t value = 0;  // written by the model's work, read by its conditional tasks (stream order)
  std::uint64_t default_value = 0;
  checked::condition_books books;  // the checked layer's
};

struct conditional_calls : native_types {
  using condition_handle = condition_state*;

  static checked::condition_books& condition_books_of(condition_handle c) noexcept { return c->books; }
  static std::uint64_t* condition_ptr(condition_handle c) noexcept { return &c->value; }
  static checked::body_books<stream_state*>* body_books_of(model_handle m) noexcept { return m->body.get(); }

  // Room for @p n more in @p v, grown geometrically: a reserve of size + n
  // per call would copy the whole list at every conditional of a capture.
  template <class V>
  static void room_for(V& v, std::size_t n) {
    if (v.capacity() - v.size() < n) v.reserve(std::max(v.size() + n, 2 * v.size()));
  }

  static condition_handle condition_create(stream_handle s, std::uint32_t default_value, bool assign) {
    capture_target& t = *s->target;
    room_for(t.owned, 1);
    ref_ptr<condition_state> c(new condition_state, {});
    c->value = c->default_value = default_value;
    if (assign)  // the value is the default at this point of every execution
      t.nodes.emplace_back([c] { c->value = c->default_value; }, replay_task::category::event);
    condition_state* raw = c.get();
    raw->retain();
    t.owned.emplace_back(raw, [](void* p) { ref_ptr<condition_state>::drop(static_cast<condition_state*>(p)); });
    return raw;
  }

  static void captured_conditional(stream_handle s, condition_handle c, conditional_kind kind, std::size_t n,
                                   model_handle* out) {
    std::vector<ref_ptr<model_state>> bodies;
    bodies.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      ref_ptr<model_state> body(new model_state(*s->dev, model_state::new_store(*s->dev), {}), {});
      body->body = std::make_unique<checked::body_books<stream_state*>>();
      bodies.push_back(std::move(body));
    }
    for (std::size_t i = 0; i < n; ++i) out[i] = bodies[i].get();
    auto& records = s->target->records;
    room_for(records, 1);  // its task record, for introspection
    task_record r;
    r.type = task_type::conditional;
    r.stream_id = s->id;
    r.conditional = to_string(kind);
    r.bodies.assign(out, out + n);  // the node below owns them
    s->target->nodes.emplace_back(
        make_failure_aware([cond = ref_ptr<condition_state>(c), kind, bodies = std::move(bodies)](bool work) {
          run(*cond, kind, bodies, work);
        }),
        replay_task::category::model);
    records.push_back(std::move(r));  // reserved above: cannot throw
  }

  static void capture_into(stream_handle s, model_handle body) noexcept { s->capture_into = body; }
  static void capture_into_clear(stream_handle s) noexcept { s->capture_into = nullptr; }

 private:
  // An IF or SWITCH body that runs nothing is not entered: it has no task
  // an abort could stop, and the enclosing execution tests its own abort
  // before its next task. (A WHILE body is always entered: its run is what
  // tests an abort of the execution around the loop.)
  static void run_branch(model_state& body, bool work) {
    if (!body.runs_nothing()) body.run(work);
  }
  static void run(const condition_state& c, conditional_kind kind, const std::vector<ref_ptr<model_state>>& bodies,
                  bool work) {
    switch (kind) {
      case conditional_kind::if_:
        if (c.value != 0)
          run_branch(*bodies[0], work);
        else if (bodies.size() > 1)
          run_branch(*bodies[1], work);
        return;
      case conditional_kind::while_:
        // After a failure the body's work would not run and nothing could end
        // the loop. An abort of the execution around it (or of the body's)
        // ends it: the body's run fails (model_state::run checks at its end
        // too, so even a body whose last task saw the abort fails).
        if (!work) return;
        while (c.value != 0) bodies[0]->run(true);
        return;
      case conditional_kind::switch_:
        if (c.value < bodies.size()) run_branch(*bodies[static_cast<std::size_t>(c.value)], work);
        return;
    }
  }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
