// SPDX-License-Identifier: Apache-2.0
// The host backend's native built-model calls: each stream bound to a model
// being built records its work into its own part (through the capture
// path), with activation, switch and end steps between the tasks; the built
// model runs its head parts in bind order on the executing stream, an
// activation runs the activated part there and then, a switch whose
// comparison holds runs its target part and ends the current one, an end
// step ends it. The checked layer (keel/runtime/checked/built_model.hpp)
// decides what may be bound and recorded; these calls only record and run.
#pragma once

#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "keel/host/capture.hpp"
#include "keel/host/detail/handles.hpp"
#include "keel/host/stream.hpp"
#include "keel/host/stream_config.hpp"
#include "keel/runtime/backend/built_model.hpp"
#include "keel/runtime/checked/build_books.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
// One step of a bound stream's part: a recorded task, or a control step. A
// label marks a place in its part that a jump (a switch by label index) goes
// to; until the build ends a jump names its labels by key, then by place.
struct built_step {
  enum class op : std::uint8_t { task, activate, switch_to, end, label, jump };
  op what = op::task;
  std::size_t index = 0;  // the task's index in the part, the target part, a label's key or a jump's table
  const void* left = nullptr;
  const void* right = nullptr;
  compare_condition condition = compare_condition::equal;
  compare_type type = compare_type::int32;
};

struct built_part {
  std::vector<replay_task> tasks;
  std::vector<built_step> steps;
  bool head = false;
};

// Where a label is: its part and the index of its step there.
struct built_place {
  std::size_t part = 0;
  std::size_t step = 0;
};

// What a built model runs: its parts and each jump's places (a jump step's
// index names its table), read-only once built.
struct built_program {
  std::vector<built_part> parts;
  std::vector<std::vector<built_place>> jumps;

  template <class T>
  static bool compare(const void* l, const void* r, compare_condition c) noexcept {
    const T a = *static_cast<const T*>(l), b = *static_cast<const T*>(r);
    switch (c) {
      case compare_condition::equal: return a == b;
      case compare_condition::not_equal: return a != b;
      case compare_condition::greater: return a > b;
      case compare_condition::greater_or_equal: return a >= b;
      case compare_condition::less: return a < b;
      case compare_condition::less_or_equal: return a <= b;
    }
    return false;
  }
  static bool holds(const built_step& s) noexcept {
    return s.type == compare_type::int64 ? compare<std::int64_t>(s.left, s.right, s.condition)
                                         : compare<std::int32_t>(s.left, s.right, s.condition);
  }

  // As model_state::run: after a failure the rest of the work is skipped but
  // event operations (and the parts that hold them) still run; the first
  // failure is rethrown at the end. A part already running in this execution
  // is not activated again (an activation cycle runs each part once).
  void run(bool work) const {
    std::exception_ptr failure;
    std::vector<unsigned char> running(parts.size(), 0);
    for (std::size_t i = 0; i < parts.size(); ++i)
      if (parts[i].head) run_part(i, 0, work, failure, running);
    if (failure) std::rethrow_exception(failure);
  }

  // Runs part i from its step `from`. A jump reads its label index (a uint32
  // in device memory; past the last label it goes to the last one) and goes
  // on from that label's place: within this part, or in the label's part,
  // ending this one, as a switch does.
  void run_part(std::size_t i, std::size_t from, bool& work, std::exception_ptr& failure,
                std::vector<unsigned char>& running) const {
    running[i] = 1;
    const built_part& p = parts[i];
    std::size_t next = from;
    while (next < p.steps.size()) {
      const built_step& s = p.steps[next++];
      switch (s.what) {
        case built_step::op::task: {
          const replay_task& t = p.tasks[s.index];
          // An abort stops a built model's parts too, before their next task.
          const execution_frame* running = execution_frame::current();  // the model's run (model_state::run)
          if (work && running != nullptr) model_state::stop_if_aborted(*running, work, failure);
          run_replay_task(t, work, failure);
          break;
        }
        case built_step::op::activate:
          if (!running[s.index]) run_part(s.index, 0, work, failure, running);
          break;
        case built_step::op::switch_to:
          if (holds(s)) {
            if (!running[s.index]) run_part(s.index, 0, work, failure, running);
            running[i] = 0;
            return;  // the switching stream's work stops where it jumped
          }
          break;
        case built_step::op::end:
          running[i] = 0;
          return;
        case built_step::op::label:
          break;
        case built_step::op::jump: {
          const std::vector<built_place>& table = jumps[s.index];
          std::uint32_t at = 0;
          std::memcpy(&at, s.left, sizeof at);
          const built_place to = table[at < table.size() ? at : table.size() - 1];
          if (to.part == i) {
            next = to.step;
            break;
          }
          if (!running[to.part]) run_part(to.part, to.step, work, failure, running);
          running[i] = 0;
          return;
        }
      }
    }
    running[i] = 0;
  }
};

// A model's build: the checked layer's books, and per bound stream (in bind
// order) its control steps so far, each at the count of tasks recorded before it.
struct built_state {
  checked::build_books<stream_state*> books;
  struct recording {
    stream_state* stream = nullptr;
    bool head = false;
    std::vector<std::pair<std::size_t, built_step>> controls;
  };
  std::vector<recording> parts;
  std::vector<std::vector<std::uintptr_t>> jumps;  // each jump's label keys, in index order
};

struct built_model_calls : native_types {
  static stream_handle persistent_stream(device_type& d) {
    return stream_config_calls::create_configured_stream(d, stream_options{stream_flags::persistent, 0});
  }
  static bool is_persistent(stream_handle s) noexcept { return s->persistent; }
  static device_type& device_of(model_handle m) noexcept { return m->dev->facade(); }

  static checked::build_books<stream_state*>* build_books(model_handle m) noexcept {
    return m->built ? &static_cast<built_state*>(m->built.get())->books : nullptr;
  }

  // Counts against the device's live-model limit, as a capture does.
  static model_handle build_open(device_type& d) {
    device_state& dev = d.state();
    capture_calls::reserve_live_model(dev, "keel::model_builder");
    try {
      auto build = std::make_shared<built_state>();
      auto* m = new model_state(dev, model_state::new_store(dev), {});
      m->built = std::move(build);
      return m;
    } catch (...) {
      dev.live_models_.fetch_sub(1, std::memory_order_acq_rel);
      throw;
    }
  }

  static void build_bind(model_handle m, stream_handle s, bool head) {
    built_state& b = state(m);
    b.parts.reserve(b.parts.size() + 1);
    ref_ptr<capture_target> target(new capture_target, {});
    b.parts.push_back({s, head, {}});
    s->target = std::move(target);  // the stream's work is recorded into its part from now on
    s->bound = &b;
    s->bound_part = b.parts.size() - 1;
  }

  static void build_end_task(model_handle, stream_handle s) { control(s, {built_step::op::end}); }
  static void build_activate(stream_handle s, stream_handle target) {
    control(s, {built_step::op::activate, target->bound_part});
  }
  static void build_switch(stream_handle s, const void* left, compare_condition c, const void* right, compare_type t,
                           stream_handle target) {
    control(s, {built_step::op::switch_to, target->bound_part, left, right, c, t});
  }
  // A label set on s's part here (its key is the caller's, one per label),
  // and a jump to one of `labels` by the uint32 index at `index`.
  static void build_label(stream_handle s, std::uintptr_t key) { control(s, {built_step::op::label, key}); }
  static void build_jump(stream_handle s, const void* index, std::vector<std::uintptr_t> labels) {
    auto& jumps = s->bound->jumps;
    jumps.reserve(jumps.size() + 1);
    control(s, {built_step::op::jump, jumps.size(), index});
    jumps.push_back(std::move(labels));  // reserved above: cannot throw
  }

  // Interleaves each part's recorded tasks with its control steps; the model
  // then runs the program. Everything is built before anything is moved out.
  static void build_finish(model_handle m) {
    built_state& b = state(m);
    auto program = std::make_shared<built_program>();
    program->parts.resize(b.parts.size());
    std::vector<ref_ptr<group_state>> groups = m->groups;
    for (std::size_t i = 0; i < b.parts.size(); ++i) {
      const auto& rec = b.parts[i];
      built_part& p = program->parts[i];
      p.head = rec.head;
      const std::size_t n = rec.stream->target->nodes.size();
      p.steps.reserve(n + rec.controls.size());
      std::size_t next = 0;
      for (const auto& c : rec.controls) {
        for (; next < c.first; ++next) p.steps.push_back({built_step::op::task, next});
        p.steps.push_back(c.second);
      }
      for (; next < n; ++next) p.steps.push_back({built_step::op::task, next});
      for (const auto& g : rec.stream->target->groups) groups.push_back(g);
    }
    resolve_jumps(b, *program);
    std::vector<ref_ptr<external_slot>> externals = m->externals;  // each part's external records and waits
    for (const auto& rec : b.parts)
      externals.insert(externals.end(), rec.stream->target->externals.begin(), rec.stream->target->externals.end());
    // Introspection lists every part's tasks, its control steps among them.
    // Their replay nodes are the parts' own, which no per-task update
    // replaces (the model's one node is the program).
    std::vector<task_record> records;
    for (const auto& rec : b.parts)
      records.insert(records.end(), rec.stream->target->records.begin(), rec.stream->target->records.end());
    for (task_record& r : records) r.node = task_record::no_node;
    std::vector<model_stream> streams = model_state::build_streams(records);
    std::vector<task_info> tasks = model_state::build_tasks(records);  // views the records' arguments, which stay put
    std::vector<std::uint32_t> order = model_state::build_order(records, streams);
    std::vector<replay_task> nodes;
    nodes.emplace_back(make_failure_aware([prog = std::shared_ptr<const built_program>(program)](bool work) {
                         prog->run(work);
                       }),
                       replay_task::category::model);
    // Nothing below throws.
    for (std::size_t i = 0; i < b.parts.size(); ++i) program->parts[i].tasks = std::move(b.parts[i].stream->target->nodes);
    m->groups = std::move(groups);
    m->nodes() = std::move(nodes);
    m->externals = std::move(externals);
    std::lock_guard lock(m->meta_m);
    m->records.swap(records);
    m->stream_list.swap(streams);
    m->task_list.swap(tasks);
    m->task_records.swap(order);
    m->shape.clear();
  }

  static void build_unbind(model_handle, stream_handle s) noexcept { s->bound = nullptr; }

 private:
  static built_state& state(model_handle m) noexcept { return *static_cast<built_state*>(m->built.get()); }

  // Each jump's labels as places; a label no bound stream set (or set twice)
  // leaves the jump nowhere to go: the build cannot end.
  static void resolve_jumps(const built_state& b, built_program& program) {
    std::vector<std::pair<std::uintptr_t, built_place>> labels;
    for (std::size_t i = 0; i < program.parts.size(); ++i)
      for (std::size_t k = 0; k < program.parts[i].steps.size(); ++k)
        if (program.parts[i].steps[k].what == built_step::op::label)
          labels.push_back({program.parts[i].steps[k].index, built_place{i, k}});
    program.jumps.reserve(b.jumps.size());
    for (const auto& keys : b.jumps) {
      std::vector<built_place> places;
      places.reserve(keys.size());
      for (const std::uintptr_t key : keys) {
        std::size_t found = 0;
        for (const auto& l : labels)
          if (l.first == key) {
            if (found++ == 0) places.push_back(l.second);
          }
        if (found != 1)
          throw_error(errc::invalid_state, "keel::model_builder::end",
                      found == 0 ? "a switch by label index names a label no bound stream of the model set"
                                 : "a switch by label index names a label set more than once in the model");
      }
      program.jumps.push_back(std::move(places));
    }
  }
  // The step, and its task record for introspection: an activation, a
  // switch, or an end task (which CANN's aclmdlRIEndTask adds; keel calls it other).
  static void control(stream_handle s, built_step step) {
    auto& rec = s->bound->parts[s->bound_part];
    auto& records = s->target->records;
    records.reserve(records.size() + 1);
    rec.controls.emplace_back(s->target->nodes.size(), step);
    task_record r;
    r.type = step.what == built_step::op::activate                                           ? task_type::activation
             : step.what == built_step::op::switch_to || step.what == built_step::op::jump ? task_type::switch_
                                                                                             : task_type::other;
    r.stream_id = s->id;
    records.push_back(std::move(r));  // reserved above: cannot throw
  }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
