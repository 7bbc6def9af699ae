// SPDX-License-Identifier: Apache-2.0
// The host backend's native capture calls: a capture appends the work its
// streams issue to one list, which becomes the model; a model execution runs
// that list on the executing stream's worker. The checked layer decides what
// may be captured and who takes part; these calls only record and replay.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/host/detail/handles.hpp"
#include "keel/host/stream.hpp"
#include "keel/runtime/model_lifetime.hpp"
#include "keel/host/event.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE
namespace detail {
template <class Fn, class... Args>
struct bound_kernel;  // keel/runtime/stream.hpp: a launch's kernel with its arguments
}  // namespace detail
KEEL_END_NAMESPACE

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
struct capture_calls : native_types {
  // Captures and models count against the device's live-model limit from
  // capture begin until the model (or the discarded capture) goes.
  static void reserve_live_model(device_state& dev, const char* api) {
    std::size_t n = dev.live_models_.load(std::memory_order_relaxed);
    do {
      if (n >= dev.max_live_models())
        ::keel::detail::throw_composed(errc::resource_limit, api,
                                       {"the device allows ", dev.max_live_models(),
                                        " live models and all are in use; destroy a model before making another"});
    } while (!dev.live_models_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel));
  }
  // A capture into a conditional body (s->capture_into) fills that body,
  // which its parent owns: no live-model slot.
  static void capture_begin(stream_handle s, capture_mode) {
    device_state& dev = *s->dev;
    if (s->capture_into != nullptr) {
      s->target = ref_ptr<capture_target>(new capture_target, {});
      return;
    }
    reserve_live_model(dev, "keel::capture_scope");
    try {
      s->target = ref_ptr<capture_target>(new capture_target, {});
    } catch (...) {
      dev.live_models_.fetch_sub(1, std::memory_order_acq_rel);
      throw;
    }
  }
  // s waited on an event recorded in origin's capture: its work goes there too.
  // The wait that joined s is its first task in the capture (a dump draws the fork from it).
  static void capture_join(stream_handle s, stream_handle origin, event_handle e) {
    s->target = origin->target;
    try {
      note_event(s, task_type::event_wait, e);
    } catch (...) {
      s->target = ref_ptr<capture_target>();
      throw;
    }
  }
  static void capture_leave(stream_handle s) noexcept { s->target = ref_ptr<capture_target>(); }
  static bool capture_active(stream_handle s) noexcept { return static_cast<bool>(s->target); }

  static model_handle capture_end(stream_handle s) {
    capture_target& c = *s->target;
    if (model_state* body = s->capture_into) {
      // Index first: a throw leaves the capture as it was.
      auto streams = model_state::build_streams(c.records);
      auto tasks = model_state::build_tasks(c.records);
      auto order = model_state::build_order(c.records, streams);
      body->stream_list = std::move(streams);
      body->task_list = std::move(tasks);
      body->task_records = std::move(order);
      body->records = std::move(c.records);
      body->nodes() = std::move(c.nodes);
      body->groups = std::move(c.groups);
      body->owned = std::move(c.owned);
      body->externals = std::move(c.externals);
      s->target = ref_ptr<capture_target>();
      s->capture_into = nullptr;
      return body;
    }
    ref_ptr<node_store> store = model_state::new_store(*s->dev);  // before anything moves out of the capture
    auto* m = new model_state(*s->dev, std::move(store), std::move(c.groups));
    m->nodes() = std::move(c.nodes);
    m->owned = std::move(c.owned);
    m->records = std::move(c.records);
    m->externals = std::move(c.externals);
    try {
      m->index_tasks();
    } catch (...) {
      c.records = std::move(m->records);  // the capture stays as it was
      c.nodes = std::move(m->nodes());
      c.groups = std::move(m->groups);
      c.owned = std::move(m->owned);
      c.externals = std::move(m->externals);
      ref_ptr<model_state>::drop(m);
      throw;
    }
    s->target = ref_ptr<capture_target>();
    return m;  // keeps the live-model reservation made at capture begin
  }
  static void capture_discard(stream_handle s) noexcept {
    if (!s->target) return;
    s->target = ref_ptr<capture_target>();
    if (std::exchange(s->capture_into, nullptr) != nullptr) return;  // a body holds no live-model slot
    s->dev->live_models_.fetch_sub(1, std::memory_order_acq_rel);
  }

  static void destroy_model(model_handle m) noexcept {
    run_destroy_callbacks(m);
    m->dev->live_models_.fetch_sub(1, std::memory_order_acq_rel);
    ref_ptr<model_state>::drop(m);  // executions in flight keep it alive
  }

  // ticket: which execution this is (abort() stops those issued before it);
  // a nested execution draws its own when it runs.
  static auto execution(model_handle m, std::uint64_t ticket = model_state::ticket_at_run) {
    return make_failure_aware([keep = ref_ptr<model_state>(m), ticket](bool work) { keep->run(work, ticket); });
  }
  /**
   * Runs the model on the stream, after the stream's earlier work. A model
   * with external records and waits takes their points now (external_ops.hpp):
   * its records become their events' last records once the execution is issued.
   */
  static void execute(model_handle m, stream_handle s) {
    // Runs in the error state too: the model's event operations still run.
    if (m->externals.empty()) {
      s->submit<false>(execution(m, m->executions.fetch_add(1, std::memory_order_relaxed)));
      return;
    }
    auto frame = std::make_shared<const external_frame>(external_frame::prepare(m->externals));
    const std::uint64_t ticket = m->executions.fetch_add(1, std::memory_order_relaxed);
    s->submit<false>(make_failure_aware([keep = ref_ptr<model_state>(m), ticket, frame](bool work) {
      const external_frame::scope current(frame.get());
      keep->run(work, ticket);
    }));
    frame->install();
  }

  // The model's destroy callbacks, in registration order, on the destroying thread.
  static void run_destroy_callbacks(model_handle m) noexcept {
    std::vector<std::pair<void (*)(void*), void*>> callbacks;
    {
      std::lock_guard lock(m->meta_m);
      callbacks.swap(m->destroy_callbacks);
    }
    for (const auto& c : callbacks) ::keel::detail::call_destroy_callback(c.first, c.second);
  }

  // ---- what a capturing stream issues: appended to its capture -------------

  template <class F>
  static void captured_launch_host(stream_handle s, F&& f) {
    note(s, task_type::host_function);
    try {
      append(s, replay_task(std::forward<F>(f), replay_task::category::host));
    } catch (...) {
      s->target->records.pop_back();
      throw;
    }
  }
  template <class F>
  static void captured_launch_kernel(stream_handle s, kernel_kind kind, F&& f) {
    capture_target& c = *s->target;
    task_record record;
    record.type = task_type::kernel;
    record.stream_id = s->id;
    record.kind = kind;
    describe_kernel(record, f);
    const bool into_group = c.open_group && c.group_stream == s;
    if (into_group) record.group = c.open_group.get();
    if (!into_group) record.node = static_cast<std::uint32_t>(c.nodes.size());
    c.records.push_back(std::move(record));
    try {
      replay_task task(kernel_body(s, std::forward<F>(f)), replay_task::category::kernel, kind);
      if (into_group) {
        group_state& g = *c.open_group;
        g.building_describers.resize(g.building.size());
        g.building_describers.reserve(g.building.size() + 1);
        g.building.push_back(std::move(task));  // marked into the group
        g.building_describers.push_back(describer_of<std::decay_t<F>>());  // reserved: cannot throw
      } else {
        c.nodes.push_back(std::move(task));
      }
    } catch (...) {
      c.records.pop_back();
      throw;
    }
  }
  // A launch through stream::launch describes its arguments; another kernel
  // object records its kind alone.
  template <class F>
  static void describe_kernel(task_record& record, const F& f) {
    describe_arguments(record.arguments, f);
    if constexpr (has_argument_count<std::decay_t<F>>::value) rebinding<std::decay_t<F>>::note(record);
  }
  // What describes the arguments of the task kernel_body(s, f) makes from a
  // launch (a task group's, described when introspection asks): null for
  // another kernel object.
  template <class F>
  static task_describer describer_of() noexcept {
    if constexpr (has_argument_count<F>::value) {
      return [](const replay_task& t, std::vector<kernel_argument>& out) {
        describe_arguments(out, static_cast<const kernel_task<F>*>(t.object())->fn);
      };
    } else {
      return nullptr;
    }
  }
  // The description of a launch's arguments (none for another kernel object).
  template <class F>
  static void describe_arguments(std::vector<kernel_argument>& out, const F& f) {
    if constexpr (has_argument_count<std::decay_t<F>>::value) {
      out.resize(std::decay_t<F>::argument_count);
      keel::detail::describe_values(f.args, out.data());
    } else {
      out.clear();
      (void)f;
    }
  }
  template <class T, class = void>
  struct has_argument_count : std::false_type {};
  template <class T>
  struct has_argument_count<T, std::void_t<decltype(T::argument_count)>> : std::true_type {};
  // A kernel launched through stream::launch can be rebuilt with new
  // arguments of the same types (a per-task update); any other cannot.
  template <class F>
  struct rebinding {
    static void note(task_record&) noexcept {}
  };
  template <class Fn, class... Args>
  struct rebinding<keel::detail::bound_kernel<Fn, Args...>> {
    using bound = keel::detail::bound_kernel<Fn, Args...>;
    using args_type = std::tuple<Args...>;
    static void note(task_record& r) noexcept {
      if constexpr (std::is_copy_constructible_v<Fn> && std::is_copy_constructible_v<args_type>) {
        r.signature = keel::detail::signature_of<args_type>();
        r.rebind = &rebuild;
        if constexpr (std::is_nothrow_copy_assignable_v<args_type>) r.assign = &assign;
      } else {
        (void)r;
      }
    }
    static void rebuild(const replay_task& current, const void* args, std::optional<replay_task>& into) {
      const auto& k = *static_cast<const kernel_task<bound>*>(current.object());
      const args_type& values = *static_cast<const args_type*>(args);
      if constexpr (std::is_nothrow_copy_assignable_v<Fn> && std::is_nothrow_copy_assignable_v<args_type>) {
        if (into && into->same_callable(current)) {
          auto& target = *static_cast<kernel_task<bound>*>(into->object_for_update());
          target.dev = k.dev;
          target.fn.fn = k.fn.fn;
          target.fn.args = values;
          into->retag(current.kind());
          return;
        }
      }
      into = replay_task(kernel_task<bound>{k.dev, bound{k.fn.fn, values}}, replay_task::category::kernel,
                         current.kind());
    }
    static void assign(replay_task& into, const void* args) noexcept {
      static_cast<kernel_task<bound>*>(into.object_for_update())->fn.args = *static_cast<const args_type*>(args);
    }
  };
  static void captured_copy_async(stream_handle s, void* dst, const void* src, std::size_t bytes, copy_kind kind,
                                  std::shared_ptr<void> keep_dst, std::shared_ptr<void> keep_src) {
    task_record& r = note(s, task_type::copy);
    r.copy = copy_params{dst, src, bytes, kind};
    r.node = static_cast<std::uint32_t>(s->target->nodes.size());
    try {
      append(s, replay_task(stream_calls::copy_task(dst, src, bytes, std::move(keep_dst), std::move(keep_src)),
                            replay_task::category::copy));
    } catch (...) {
      s->target->records.pop_back();
      throw;
    }
  }
  static void captured_memset_async(stream_handle s, void* dst, int value, std::size_t bytes,
                                    std::shared_ptr<void> keep_dst) {
    task_record& r = note(s, task_type::memset);
    r.copy = copy_params{dst, nullptr, bytes, copy_kind::device_to_device};  // not updatable: no node
    try {
      append(s, replay_task(stream_calls::memset_task(dst, value, bytes, std::move(keep_dst)),
                            replay_task::category::copy));
    } catch (...) {
      s->target->records.pop_back();
      throw;
    }
  }
  // A plain record or wait inside a capture is an edge (the capture's order
  // keeps it); an external event's signal, wait and reset are tasks.
  static void captured_record(event_handle e, stream_handle s) {
    note_event(s, task_type::event_record, e);
    try {
      if (e->flags == event_flags::external)
        append(s, replay_task([ev = ref_ptr<event_state>(e)] { ev->signal(); }, replay_task::category::event));
    } catch (...) {
      s->target->records.pop_back();
      throw;
    }
  }
  static void captured_wait(stream_handle s, event_handle e) {
    note_event(s, task_type::event_wait, e);
    try {
      if (e->flags == event_flags::external)
        append(s, replay_task([ev = ref_ptr<event_state>(e)] { ev->block_until_signalled(); },
                              replay_task::category::event));
    } catch (...) {
      s->target->records.pop_back();
      throw;
    }
  }
  // event_operation::external on a default event: a task of the model whose
  // point each execution takes when it is issued (external_ops.hpp).
  static void captured_record_external(event_handle e, stream_handle s) {
    captured_external(s, e, true);
  }
  static void captured_wait_external(stream_handle s, event_handle e) { captured_external(s, e, false); }
  static void captured_external(stream_handle s, event_handle e, bool record) {
    note_event(s, record ? task_type::event_record : task_type::event_wait, e);
    capture_target& c = *s->target;
    c.records.back().external_event = true;  // it crosses models
    try {
      ref_ptr<external_slot> slot(new external_slot(ref_ptr<event_state>(e), record), {});
      c.externals.push_back(slot);
      try {
        if (record) {
          append(s, replay_task(external_record_task(slot), replay_task::category::event));
        } else {
          append(s, replay_task(external_wait_task(slot), replay_task::category::event));
        }
      } catch (...) {
        c.externals.pop_back();
        throw;
      }
    } catch (...) {
      c.records.pop_back();
      throw;
    }
  }
  static void captured_reset(stream_handle s, event_handle e) {
    note_event(s, task_type::event_reset, e);
    try {
      append(s, replay_task(event_calls::reset_task(e), replay_task::category::event));
    } catch (...) {
      s->target->records.pop_back();
      throw;
    }
  }
  static void captured_execute(model_handle m, stream_handle s) {
    note(s, task_type::model_execution);
    try {
      append(s, replay_task(execution(m), replay_task::category::model));
    } catch (...) {
      s->target->records.pop_back();
      throw;
    }
  }

  // The introspection record of a task s issues (popped again if issuing it throws).
  static task_record& note(stream_handle s, task_type type) {
    task_record r;
    r.type = type;
    r.stream_id = s->id;
    s->target->records.push_back(std::move(r));
    return s->target->records.back();
  }
  static void note_event(stream_handle s, task_type type, event_handle e) {
    task_record& r = note(s, type);
    r.event = e->id;
    r.external_event = e->flags == event_flags::external;
  }

  // A kernel body as a replayed task runs it: the device comes from the
  // stream that captured it.
  template <class F>
  struct kernel_task {
    device_state* dev;
    F fn;
    void operator()() const {
      launch_context ctx(*dev);
      fn(ctx);
    }
  };
  template <class F>
  static auto kernel_body(stream_handle s, F&& f) {
    return kernel_task<std::decay_t<F>>{s->dev, std::forward<F>(f)};
  }

  static void append(stream_handle s, replay_task task) { s->target->nodes.push_back(std::move(task)); }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
