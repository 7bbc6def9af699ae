// SPDX-License-Identifier: Apache-2.0
// Differential testing of the host runtime: call sequences, a sequential
// reference model of the documented semantics, and a runner that issues the
// same calls to keel from several threads and compares every outcome.
//
// Determinism. Calls are issued from several threads, but one at a time, in
// the sequence's order (a turn counter hands the call to its thread), so the
// outcome of every call is defined; the streams' workers still run tasks
// concurrently with the calls and with each other. What the tasks do is
// compared only where the documentation makes it deterministic: which tasks
// ran, how often, in which order per executing stream, that a wait on an
// event ran after the work before the record it referred to, and that a
// blocking call returned after the work it waited for. A call whose outcome the
// documentation leaves to timing (an update committed while an execution of
// its model is still in flight, destroying a capturing stream) is declared
// unsupported by the model: the generator never emits it and the shrinker
// never keeps a sequence containing it.
//
// The reference model is written from the documentation (the
// comments of include/keel/runtime and the host backend's "Semantics worth
// knowing"), not from the implementation: it keeps only slots, lists of task
// tokens and flags.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "keel/host/memory_pool.hpp"
#include "keel/ops/operator_task.hpp"
#include "keel/runtime.hpp"

namespace keel_reliability {

// ---- the call sequence -----------------------------------------------------

enum class op_kind : std::uint8_t {
  new_stream,     // a: stream slot (destroys what the slot held)
  drop_stream,    // a: stream slot
  new_event,      // a: event slot, b: 0 default, 1 external
  drop_event,     // a: event slot
  launch_host,    // a: stream, b: 0 quick, 1 slow (sleeps, then logs); logs the token
  launch_kernel,  // a: stream, b: kind (0/1); logs the token
  launch_throw,   // a: stream; logs the token, then throws
  record,         // a: event, b: stream
  wait,           // a: stream, b: event
  sync,           // a: stream
  sync_device,
  copy_blocking,  // a: stream
  event_sync,     // a: event, b: 0 synchronize, 1 query (the answer is the second outcome)
  cap_begin,      // a: stream, b: mode
  cap_end,        // a: stream, b: model slot
  cap_discard,    // a: stream
  group_begin,    // a: stream
  group_end,      // a: stream, b: group slot
  exec,           // a: model, b: stream
  drop_model,     // a: model
  drop_group,     // a: group
  upd_begin,      // a: stream, b: group
  upd_end,        // a: stream; then synchronizes the stream (second outcome)
  record_ext,     // a: event, b: stream; event_operation::external (a model's record seen outside it)
  wait_ext,       // a: stream, b: event; event_operation::external (a model's wait on an outside record)
  // Built models, conditional tasks, contexts, and whole-model, per-task
  // and fenced updates. Each is one call of the
  // sequence that runs a short, fixed program of keel calls, chosen by its
  // operands (see the runner); c is a third operand.
  build,          // a: model slot, b: shape (bits 0-1), fault (bits 2-4), switch value (bit 5): a built model
  cond,           // a: model slot, b: kind and branches (bits 0-3), nested (4), assign default (5), fault (6-7);
                  // c: capturing stream (bits 0-1), default value (bits 2-3): a captured conditional model
  set_value,      // a: model slot, b: value (0-3): the host writes the device value a switch or condition reads
  ctx_new,        // a: context slot: a new context there
  ctx_close,      // a: context slot, b: 0 close(), 1 close() while a scope has it current (refused)
  ctx_stream,     // a: stream slot, b: context slot, c: 1 nested in a scope of the other context: a new stream
                  // made with the context current; second outcome: the previous context was restored (1)
  upd_model,      // a: target model, b: source model, c: stream: keel::update_model, then synchronize c (second)
  // Per-task updates (basic_task_update_scope), one kind per change, all
  // through task_update(): disable here, set_arguments (task_args) at the end
  // of the list, which keeps the older kinds' numbers.
  task_disable,   // a: model, b: task (bits 0-6; bit 7: a task the model does not have), c: commit stream;
                  // then synchronizes c (second)
  fence_new,      // a: capturing stream, b: group size (bit 0), kinds (1-2), workspace (3): a new fenced model
  fence_exec,     // a: stream, c: update stream: the fenced model's execution, then apply() with nothing staged;
                  // then synchronizes c (second)
  fence_apply,    // a: update stream, b: what is staged first (0-5, see the reference; 6: apply() alone, refused;
                  // 7: stage, execute, then the fenced model goes instead of apply()), c: the execution's stream:
                  // stage, execute, apply(); then synchronizes a (second; 7: c)
  task_args,      // a: model, b: task (bits 0-5; bit 6: an argument of the wrong type; bit 7: a task the model does
                  // not have), c: commit stream: set_arguments (the kernel then logs this op's token); then
                  // synchronizes c (second)
  task_handle,    // as task_args, through a keel::host::kernel_task made for the task (bit 6: made for a float,
                  // which the kernels do not take, or for an odd token a keel::ops::basic_operator_task, which
                  // takes an operator's launch only), whose update() commits on c; then synchronizes c (second)
  memset,         // a: stream: memset_async sets the call's own byte (by its token) to 1; captured as a task
  pool_share,     // a: variant: two models captured into one pool of its own share its memory, executed on two
                  // streams of its own while the first is held: 0 unordered (refused), 1 after a wait on an
                  // event recorded after the first (accepted, runs after it), 2 from two threads at once (one
                  // refused); the models and streams go at the end of the call
  abort_nested,   // a: depth (0: a WHILE loop whose condition nothing clears; 1: that loop in an IF body): a
                  // model on streams of its own, executed, aborted once the loop runs; the stream's synchronize
                  // reports task_failed (first outcome); with the condition cleared the model runs again and
                  // the synchronize succeeds (second)
  count_
};

inline const char* name_of(op_kind k) {
  static const char* const names[] = {"new_stream",  "drop_stream", "new_event",  "drop_event",    "launch_host",
                                      "launch_kernel", "launch_throw", "record",   "wait",          "sync",
                                      "sync_device", "copy_blocking", "event_sync", "cap_begin",   "cap_end",
                                      "cap_discard", "group_begin", "group_end",  "exec",          "drop_model",
                                      "drop_group",  "upd_begin",   "upd_end",     "record_ext",  "wait_ext",
                                      "build",       "cond",        "set_value",   "ctx_new",     "ctx_close",
                                      "ctx_stream",  "upd_model",   "task_disable", "fence_new",  "fence_exec",
                                      "fence_apply", "task_args", "task_handle", "memset",      "pool_share", "abort_nested"};
  static_assert(sizeof names / sizeof names[0] == static_cast<std::size_t>(op_kind::count_));
  return names[static_cast<int>(k)];
}

constexpr int n_streams = 4, n_events = 3, n_models = 3, n_groups = 3, n_contexts = 2;
constexpr std::size_t max_live_models = 3;
// More external events than any sequence creates: how many are alive at a
// time depends on pending work that holds them, so the limit must not apply.
constexpr std::size_t max_external_events = 1024;
// How long a slow host callable sleeps before it logs: long enough that work
// issued after it on other streams finishes first.
constexpr std::chrono::milliseconds slow_task{3};

struct op {
  op_kind kind = op_kind::sync_device;
  std::uint8_t thread = 0;
  std::uint8_t a = 0, b = 0;
  std::uint32_t token = 0;  // unique per launch in a sequence
  std::uint8_t c = 0;       // the third operand of the calls above
};

// The tokens of the tasks one call issues beyond its first: sub_token(t, k)
// for k in 0..254, above every call's own token.
inline std::uint32_t sub_token(std::uint32_t token, int k) {
  return token + (static_cast<std::uint32_t>(k + 1) << 24);
}

// What a call did: the keel::errc it threw (0 for none); upd_end has a
// second one, its synchronize (-1 when not performed); an event query's
// second is its answer (1 true, 0 false).
struct outcome {
  int first = 0;
  int second = -1;
  bool operator==(const outcome& o) const { return first == o.first && second == o.second; }
  bool operator!=(const outcome& o) const { return !(*this == o); }
};

inline std::string errc_name(int c) {
  if (c < 0) return "-";
  if (c == 0) return "ok";
  return keel::make_error_code(static_cast<keel::errc>(c)).message();
}

inline bool is_query(const op& o) { return o.kind == op_kind::event_sync && o.b == 1; }

inline std::string render(const op& o, const outcome& r) {
  if (is_query(o)) return errc_name(r.first) + (r.second < 0 ? "" : r.second ? "/true" : "/false");
  return errc_name(r.first) + (r.second >= 0 ? "/" + errc_name(r.second) : "");
}

inline std::string describe(const op& o) {
  std::string s = "t" + std::to_string(o.thread) + " " + name_of(o.kind);
  switch (o.kind) {
    case op_kind::new_stream: case op_kind::drop_stream: case op_kind::sync: case op_kind::copy_blocking:
    case op_kind::cap_discard: case op_kind::group_begin: case op_kind::upd_end:
      return s + " s" + std::to_string(o.a);
    case op_kind::new_event: return s + " e" + std::to_string(o.a) + (o.b == 1 ? " external" : "");
    case op_kind::drop_event: return s + " e" + std::to_string(o.a);
    case op_kind::event_sync: return s + " e" + std::to_string(o.a) + (o.b == 1 ? " (query)" : "");
    case op_kind::launch_host:
      return s + " s" + std::to_string(o.a) + (o.b == 1 ? " slow" : "") + " #" + std::to_string(o.token);
    case op_kind::launch_throw:
    case op_kind::memset:
      return s + " s" + std::to_string(o.a) + " #" + std::to_string(o.token);
    case op_kind::launch_kernel:
      return s + " s" + std::to_string(o.a) + " k" + std::to_string(o.b) + " #" + std::to_string(o.token);
    case op_kind::record: case op_kind::record_ext: return s + " e" + std::to_string(o.a) + " on s" + std::to_string(o.b);
    case op_kind::wait: case op_kind::wait_ext: return s + " s" + std::to_string(o.a) + " on e" + std::to_string(o.b);
    case op_kind::cap_begin:
      return s + " s" + std::to_string(o.a) + " " + std::string(keel::to_string(static_cast<keel::capture_mode>(o.b)));
    case op_kind::cap_end: return s + " s" + std::to_string(o.a) + " -> m" + std::to_string(o.b);
    case op_kind::group_end: return s + " s" + std::to_string(o.a) + " -> g" + std::to_string(o.b);
    case op_kind::exec: return s + " m" + std::to_string(o.a) + " on s" + std::to_string(o.b);
    case op_kind::drop_model: return s + " m" + std::to_string(o.a);
    case op_kind::drop_group: return s + " g" + std::to_string(o.a);
    case op_kind::upd_begin: return s + " s" + std::to_string(o.a) + " g" + std::to_string(o.b);
    case op_kind::build: return s + " -> m" + std::to_string(o.a) + " shape " + std::to_string(o.b & 3) + " fault " +
                                std::to_string((o.b >> 2) & 7) + " value " + std::to_string((o.b >> 5) & 1) + " #" +
                                std::to_string(o.token);
    case op_kind::cond:
      return s + " s" + std::to_string(o.c & 3) + " -> m" + std::to_string(o.a) + " kind " + std::to_string(o.b & 3) +
             " n " + std::to_string((o.b >> 2) & 3) + ((o.b & 16) ? " nested" : "") + ((o.b & 32) ? " assign" : "") +
             " default " + std::to_string((o.c >> 2) & 3) + " fault " + std::to_string(o.b >> 6) + " #" +
             std::to_string(o.token);
    case op_kind::set_value: return s + " m" + std::to_string(o.a) + " = " + std::to_string(o.b);
    case op_kind::ctx_new: return s + " c" + std::to_string(o.a);
    case op_kind::ctx_close: return s + " c" + std::to_string(o.a) + (o.b == 1 ? " (held)" : "");
    case op_kind::ctx_stream:
      return s + " s" + std::to_string(o.a) + " in c" + std::to_string(o.b) + (o.c == 1 ? " (nested)" : "");
    case op_kind::upd_model:
      return s + " m" + std::to_string(o.a) + " from m" + std::to_string(o.b) + " on s" + std::to_string(o.c);
    case op_kind::task_disable:
      return s + " m" + std::to_string(o.a) + " task " + std::to_string(o.b & 127) + ((o.b & 128) ? " (foreign)" : "") +
             " on s" + std::to_string(o.c);
    case op_kind::task_args:
    case op_kind::task_handle:
      return s + " m" + std::to_string(o.a) + " task " + std::to_string(o.b & 63) + ((o.b & 64) ? " wrong type" : "") +
             ((o.b & 128) ? " (foreign)" : "") + " on s" + std::to_string(o.c) + " #" + std::to_string(o.token);
    case op_kind::fence_new:
      return s + " s" + std::to_string(o.a) + " variant " + std::to_string(o.b) + " #" + std::to_string(o.token);
    case op_kind::fence_exec: return s + " on s" + std::to_string(o.a) + " applied on s" + std::to_string(o.c);
    case op_kind::fence_apply:
      return s + " on s" + std::to_string(o.a) + " stage " + std::to_string(o.b) + " after an execution on s" +
             std::to_string(o.c) + " #" + std::to_string(o.token);
    case op_kind::pool_share: return s + " variant " + std::to_string(o.a);
    case op_kind::abort_nested: return s + " depth " + std::to_string(o.a);
    default: return s;
  }
}

// A wait ordered the waiter's later work after the recorder's earlier work:
// entry after_index of stream after_uid starts after entry before_index of
// stream before_uid has finished (indices into the per-stream logs).
struct barrier {
  std::uint64_t before_uid;
  std::size_t before_index;
  std::uint64_t after_uid;
  std::size_t after_index;
  bool dropped;  // a later signal of its external event may have released the wait instead
};

// A blocking call returned only after a stream's work: when call `call`
// returned, the first `count` tasks of stream `uid` had run.
struct host_wait {
  std::uint64_t uid;
  std::size_t count;
  std::size_t call;
};

// ---- the reference model -----------------------------------------------------

// A deliberate defect planted in the model, so that the test proves it can
// fail (--self-test): 0 none; 1 synchronize does not clear a stream's error
// state; 2 an update's replacement is never applied; 3 thread-local capture
// mode refuses unsafe calls from every thread; 4 a wait is bound to the
// event's latest record (a later record moves it) instead of the record that
// was the last one when the wait was issued; 5 a model's event records are
// skipped once its execution has failed (a task before them threw, or the
// stream was already in its error state); 6 a whole-model update
// (update_model) leaves the target's tasks as they were; 7 a WHILE task runs
// its body once more than its condition allows.
constexpr int reference_mutations = 7;
inline int& reference_mutation() {
  static int m = 0;
  return m;
}

// How often each call had each outcome in the sequences checked (--stats).
inline std::map<std::pair<int, int>, std::uint64_t>& outcome_stats() {
  static std::map<std::pair<int, int>, std::uint64_t> s;
  return s;
}

// A stream's uid is the index of the call that created it, plus one.
inline std::uint64_t uid_of_call(std::size_t i) { return i + 1; }

class reference {
 public:
  struct result {
    bool supported = true;
    outcome out;
  };

  // Applies call number `index` of a sequence; returns whether the
  // documentation defines its outcome deterministically, and the outcome. An
  // unsupported call leaves the model in an unspecified state (callers copy
  // the model first).
  result apply(const op& o, std::size_t index) {
    result r;
    auto err = [&](keel::errc e) {
      r.out.first = static_cast<int>(e);
      return r;
    };
    auto unsupported = [&] {
      r.supported = false;
      return r;
    };
    switch (o.kind) {
      case op_kind::new_stream: {
        rstream& s = streams_[o.a];
        if (s.alive && (s.cap >= 0 || s.upd_group >= 0 || marks_[o.a] == 1)) return unsupported();
        if (s.alive) drop_stream(o.a);
        s = rstream{};
        s.alive = true;
        s.uid = uid_of_call(index);
        logs_[s.uid];
        return r;
      }
      case op_kind::drop_stream: {
        rstream& s = streams_[o.a];
        if (s.alive && (s.cap >= 0 || s.upd_group >= 0 || marks_[o.a] == 1)) return unsupported();
        if (s.alive) drop_stream(o.a);
        return r;
      }
      case op_kind::new_event:
        event_recs_.emplace_back();
        event_recs_.back().external = o.b == 1;
        event_slots_[o.a] = static_cast<int>(event_recs_.size()) - 1;
        return r;
      case op_kind::drop_event: event_slots_[o.a] = -1; return r;
      case op_kind::launch_host:
      case op_kind::launch_kernel:
      case op_kind::launch_throw:
      case op_kind::memset: {
        // A memset follows a host callable's rules: a task of its own,
        // never in a task group or an update.
        rstream& s = streams_[o.a];
        const bool kernel = o.kind == op_kind::launch_kernel;
        const node_kind nk = o.kind == op_kind::launch_throw ? node_kind::fail
                             : o.kind == op_kind::memset     ? node_kind::memset
                                                             : node_kind::work;
        if (!s.alive) return err(keel::errc::invalid_handle);
        if (s.upd_group >= 0) {
          if (!kernel) return err(keel::errc::update_violation);
          s.staged.push_back({o.token, o.b});
          return r;
        }
        if (s.cap >= 0) {
          if (group_stream_ >= 0 && group_stream_ != o.a) return err(keel::errc::capture_violation);
          rcapture& c = captures_[s.cap];
          if (group_stream_ == o.a) {
            if (!kernel) return err(keel::errc::capture_violation);
            groups_[c.open_group].tasks.push_back({o.token, o.b});
            return r;
          }
          c.nodes.push_back(node{nk, o.token, -1, kernel ? static_cast<int>(o.b) : -1});
          return r;
        }
        run_task(s, nk, o.token);
        return r;
      }
      case op_kind::record: {
        const int id = event_slots_[o.a];
        rstream& s = streams_[o.b];
        if (id < 0 || !s.alive) return err(keel::errc::invalid_handle);
        if (s.upd_group >= 0) return unsupported();
        if (s.cap >= 0) {
          // An external event's record is captured as a node that signals
          // it; a default event's record inside a capture marks a fork or
          // join point, which the model does not follow.
          if (!event_recs_[static_cast<std::size_t>(id)].external) return unsupported();
          if (group_stream_ >= 0) return err(keel::errc::capture_violation);  // not an operator launch
          captures_[s.cap].nodes.push_back(node{node_kind::signal, 0, id});
          return r;
        }
        event_recs_[static_cast<std::size_t>(id)].plain = true;
        issue_record(id, s);
        return r;
      }
      case op_kind::record_ext:
      case op_kind::wait_ext: {
        // The rules of event_operation::external, in the order keel checks
        // them: a default event, a capturing stream, no plain record of the
        // event ever, one capture either records or waits on an event
        // externally, and (as for any task) no task group being marked.
        const bool rec = o.kind == op_kind::record_ext;
        const int id = event_slots_[rec ? o.a : o.b];
        rstream& s = streams_[rec ? o.b : o.a];
        if (id < 0 || !s.alive) return err(keel::errc::invalid_handle);
        const revent& e = event_recs_[static_cast<std::size_t>(id)];
        if (e.external) return err(keel::errc::invalid_parameter);
        if (s.upd_group >= 0) return unsupported();
        if (s.cap < 0) return err(keel::errc::capture_violation);
        if (e.plain) return err(keel::errc::invalid_state);
        rcapture& c = captures_[s.cap];
        const auto role = c.external_roles.find(id);
        if (role != c.external_roles.end() && role->second != rec) return err(keel::errc::capture_violation);
        if (group_stream_ >= 0) return err(keel::errc::capture_violation);
        c.external_roles.emplace(id, rec);
        c.nodes.push_back(node{rec ? node_kind::ext_record : node_kind::ext_wait, 0, id});
        return r;
      }
      case op_kind::wait: {
        rstream& s = streams_[o.a];
        const int id = event_slots_[o.b];
        if (id < 0 || !s.alive) return err(keel::errc::invalid_handle);
        if (s.cap >= 0 || s.upd_group >= 0) return unsupported();
        revent& e = event_recs_[static_cast<std::size_t>(id)];
        // An external wait blocks until the event is signalled: it would wait
        // forever (or for a record issued later) unless a record was issued.
        if (e.external && e.records == 0) return unsupported();
        issue_wait(id, s);
        return r;
      }
      case op_kind::sync: {
        rstream& s = streams_[o.a];
        if (!s.alive) return err(keel::errc::invalid_handle);
        if (s.cap >= 0 && refuses(captures_[s.cap], o.thread)) return err(keel::errc::capture_violation);
        drain(s, index);
        if (s.failed) {
          s.failed = reference_mutation() == 1;
          return err(keel::errc::task_failed);
        }
        return r;
      }
      case op_kind::sync_device: {
        for (int c : capture_order_)
          if (refuses(captures_[c], o.thread)) return err(keel::errc::capture_violation);
        bool failed = false;
        for (auto& s : streams_)
          if (s.alive) {
            drain(s, index);
            failed = failed || s.failed;
          }
        if (failed) return err(keel::errc::task_failed);
        return r;
      }
      case op_kind::copy_blocking: {
        rstream& s = streams_[o.a];
        if (!s.alive) return err(keel::errc::invalid_handle);
        for (int c : capture_order_)
          if (refuses(captures_[c], o.thread)) return err(keel::errc::capture_violation);
        drain(s, index);
        return r;
      }
      case op_kind::event_sync: {
        const int id = event_slots_[o.a];
        if (id < 0) return err(keel::errc::invalid_handle);
        revent& e = event_recs_[static_cast<std::size_t>(id)];
        if (is_query(o)) {
          // Defined once the answer cannot change any more: never recorded
          // (a default event is complete, an external one unsignalled), or
          // the last record (external: some record) has surely run.
          if (e.records == 0) {
            r.out.second = e.external ? 0 : 1;
            return r;
          }
          if (!e.complete) return unsupported();
          r.out.second = 1;
          return r;
        }
        if (e.external && e.records == 0) return unsupported();  // nothing will ever signal it
        if (e.records > 0 && (!e.external || e.records == 1)) host_waits_.push_back({e.uid, e.pos, index});
        e.complete = e.records > 0;
        return r;
      }
      case op_kind::cap_begin: {
        rstream& s = streams_[o.a];
        if (caps_[o.a] != 1) caps_[o.a] = 0;  // the runner drops an ended scope first
        if (!s.alive) return err(keel::errc::invalid_handle);
        if (s.cap >= 0 || s.upd_group >= 0) return err(keel::errc::capture_violation);
        if (live_models() >= max_live_models) return err(keel::errc::resource_limit);
        rcapture c;
        c.mode = static_cast<keel::capture_mode>(o.b);
        c.thread = o.thread;
        captures_.push_back(c);
        s.cap = static_cast<int>(captures_.size()) - 1;
        capture_order_.push_back(s.cap);
        caps_[o.a] = 1;
        return r;
      }
      case op_kind::cap_end: {
        if (caps_[o.a] == 0) return unsupported();
        if (caps_[o.a] == 2) return err(keel::errc::invalid_state);
        rstream& s = streams_[o.a];
        rcapture& c = captures_[s.cap];
        if (c.open_group >= 0) return err(keel::errc::capture_violation);
        if (models_[o.b] >= 0) drop_model(o.b);
        rmodel m;
        m.nodes = c.nodes;
        m.alive = true;
        model_recs_.push_back(m);
        const int id = static_cast<int>(model_recs_.size()) - 1;
        for (int g : c.groups) groups_[g].model = id;
        models_[o.b] = id;
        end_capture(o.a);
        return r;
      }
      case op_kind::cap_discard:
        if (caps_[o.a] != 1) return r;
        if (marks_[o.a] == 1) return unsupported();
        end_capture(o.a);
        return r;
      case op_kind::group_begin: {
        rstream& s = streams_[o.a];
        if (!s.alive) return err(keel::errc::invalid_handle);
        if (s.cap < 0) return err(keel::errc::capture_violation);
        if (group_stream_ >= 0) return err(keel::errc::capture_violation);
        rcapture& c = captures_[s.cap];
        groups_.push_back(rgroup{});
        const int g = static_cast<int>(groups_.size()) - 1;
        c.groups.push_back(g);
        c.nodes.push_back(node{node_kind::group, 0, g});
        c.open_group = g;
        group_stream_ = o.a;
        marks_[o.a] = 1;
        return r;
      }
      case op_kind::group_end: {
        if (marks_[o.a] == 0) return unsupported();
        if (marks_[o.a] == 2) return err(keel::errc::invalid_state);
        rcapture& c = captures_[streams_[o.a].cap];
        group_slots_[o.b] = c.open_group;
        c.open_group = -1;
        group_stream_ = -1;
        marks_[o.a] = 0;
        return r;
      }
      case op_kind::exec: {
        const int m = models_[o.a];
        rstream& s = streams_[o.b];
        if (m < 0 || !s.alive) return err(keel::errc::invalid_handle);
        if (s.cap >= 0) return unsupported();
        if (s.upd_group >= 0) return err(keel::errc::update_violation);
        // Two executions of a model with a device value in flight on two
        // streams read and write it in an order timing decides.
        if (model_recs_[m].cell >= 0 && pending_anywhere(m, o.b)) return unsupported();
        // So do two executions that memset the same byte (models updated from each other share memsets).
        if (memset_in_flight(model_recs_[m], o.b)) return unsupported();
        s.pending.insert(m);
        for (const node& n : model_recs_[m].nodes)
          if (n.kind == node_kind::memset) s.pending_memsets.insert(n.token);
        // The model runs in capture order on this stream. After a failure
        // (a task of the model threw, or the stream was already in its error
        // state) its work is skipped but its event records still run, so
        // that streams waiting on them never deadlock.
        run_nodes(model_recs_[m].nodes, s, s.failed);
        return r;
      }
      case op_kind::drop_model:
        if (models_[o.a] >= 0) drop_model(o.a);
        return r;
      case op_kind::drop_group: group_slots_[o.a] = -1; return r;
      case op_kind::upd_begin: {
        rstream& s = streams_[o.a];
        const int g = group_slots_[o.b];
        if (!s.alive || g < 0) return err(keel::errc::invalid_handle);
        if (upds_[o.a] == 1 || s.upd_group >= 0) {
          // a second scope on a stream already updating
          if (s.cap >= 0) return err(keel::errc::capture_violation);
          return err(keel::errc::update_violation);
        }
        if (s.cap >= 0) return err(keel::errc::capture_violation);
        rgroup& gr = groups_[g];
        if (gr.model < 0 || !model_recs_[gr.model].alive) return err(keel::errc::invalid_state);
        if (gr.updating) return err(keel::errc::update_violation);
        gr.updating = true;
        s.upd_group = g;
        s.staged.clear();
        upds_[o.a] = 1;
        return r;
      }
      case op_kind::upd_end: {
        if (upds_[o.a] == 0) return unsupported();
        if (upds_[o.a] == 2) return err(keel::errc::invalid_state);
        rstream& s = streams_[o.a];
        rgroup& gr = groups_[s.upd_group];
        const bool model_alive = gr.model >= 0 && model_recs_[gr.model].alive;
        if (gr.model >= 0)
          for (const auto& other : streams_)
            if (other.alive && other.pending.count(gr.model)) return unsupported();
        gr.updating = false;
        std::vector<task> staged = std::move(s.staged);
        s.staged.clear();
        s.upd_group = -1;
        upds_[o.a] = 0;
        if (!staged.empty()) {
          if (!model_alive) {
            r.out.first = static_cast<int>(keel::errc::invalid_state);
          } else if (staged.size() != gr.tasks.size()) {
            r.out.first = static_cast<int>(keel::errc::update_violation);
          } else {
            bool same = true;
            for (std::size_t i = 0; i < staged.size(); ++i) same = same && staged[i].kind == gr.tasks[i].kind;
            if (same && reference_mutation() != 2)
              gr.tasks = staged;
            else if (same)
              (void)0;
            else
              r.out.first = static_cast<int>(keel::errc::update_violation);
          }
        }
        if (r.out.first != 0) return r;  // end() threw: no synchronize follows
        drain(s, index);
        r.out.second = 0;
        if (s.failed) {
          s.failed = false;
          r.out.second = static_cast<int>(keel::errc::task_failed);
        }
        return r;
      }
      case op_kind::build: {
        // A built model of 1-3 bound streams (the runner's own persistent
        // ones): the head runs kernel 0; shape 1 activates a second stream,
        // shapes 2 and 3 switch to it when the value is 1 (else the head goes
        // on with another kernel), shape 3's second stream activates a
        // third. Faults break one rule each, in the order the runner issues
        // them; the builder is then cancelled and the slot keeps its model.
        const int shape = o.b & 3, fault = (o.b >> 2) & 7;
        if (live_models() >= max_live_models) return err(keel::errc::resource_limit);
        const int other = models_[(o.a + 1) % n_models];
        if (fault == 3) return err(keel::errc::invalid_parameter);  // a stream that is not persistent
        if (group_stream_ >= 0) return err(keel::errc::capture_violation);  // work while a task group is marked
        if (fault == 6 && other >= 0 && model_recs_[other].kind == model_kind::built)
          return err(keel::errc::invalid_state);  // a stream bound to another model
        if (fault == 5) return err(keel::errc::invalid_parameter);  // activating a stream not bound to the model
        if (fault == 4) return err(keel::errc::invalid_state);  // work after the stream's end task
        if (fault == 1 || fault == 2) return err(keel::errc::invalid_state);  // no end task; no head stream
        const std::uint32_t t = o.token;
        std::vector<node> head{node{node_kind::work, sub_token(t, 0), -1, 0}};
        const int cell = new_cell((o.b >> 5) & 1);
        std::vector<node> third{node{node_kind::work, sub_token(t, 3), -1, 0}};
        std::vector<node> second{node{node_kind::work, sub_token(t, 1), -1, 1}};
        if (shape == 3) second.push_back(node{node_kind::cond, 0, new_cond(cond_kind::activate, -1, {third})});
        if (shape == 1) head.push_back(node{node_kind::cond, 0, new_cond(cond_kind::activate, -1, {second})});
        if (shape >= 2) {
          head.push_back(node{node_kind::cond, 0, new_cond(cond_kind::stream_switch, cell, {second})});
          head.push_back(node{node_kind::work, sub_token(t, 2), -1, 0});
        }
        put_model(o.a, add_model(std::move(head), model_kind::built, cell));
        return r;
      }
      case op_kind::cond: {
        // A captured model: [the condition's default] kernel 0, the
        // conditional task, kernel 1. Each body runs a kernel (WHILE's also
        // subtracts 1 from the condition); nested: body 0 also holds an IF
        // on a condition of its own. Faults: 1 a condition of another model
        // (none there: an empty one), 2 the task on a stream that is not
        // capturing, 3 a branch count the kind does not take (SWITCH 0 is
        // one without a fault too).
        rstream& s = streams_[o.c & 3];
        if (!s.alive) return err(keel::errc::invalid_handle);
        if (s.cap >= 0 || s.upd_group >= 0) return err(keel::errc::capture_violation);
        if (live_models() >= max_live_models) return err(keel::errc::resource_limit);
        if (group_stream_ >= 0) return unsupported();
        const int kind = o.b & 3, fault = o.b >> 6;
        const bool nested = (o.b & 16) != 0, assign = (o.b & 32) != 0;
        std::size_t n = kind == 1 ? 2 : kind == 3 ? static_cast<std::size_t>((o.b >> 2) & 3) : 1;
        if (fault == 3) n = kind == 3 ? 0 : 3;
        // add_conditional checks an empty condition, the branch count, the
        // capturing stream, then the condition's model.
        const int other = models_[(o.a + 1) % n_models];
        const bool foreign = other >= 0 && model_recs_[other].kind == model_kind::conditional;
        if (fault == 1 && !foreign) return err(keel::errc::invalid_handle);
        if (n == 0 || (kind <= 1 && n > 2) || (kind == 2 && n != 1)) return err(keel::errc::invalid_parameter);
        if (fault == 2) return err(keel::errc::capture_violation);
        if (fault == 1) return err(keel::errc::invalid_parameter);
        const std::uint32_t t = o.token;
        const std::uint64_t value = (o.c >> 2) & 3;
        const int cell = new_cell(value);
        std::vector<node> nodes;
        if (assign) nodes.push_back(node{node_kind::assign, static_cast<std::uint32_t>(value), cell});
        nodes.push_back(node{node_kind::work, sub_token(t, 0), -1, 0});
        std::vector<std::vector<node>> bodies(n);
        for (std::size_t i = 0; i < n; ++i) {
          bodies[i].push_back(node{node_kind::work, sub_token(t, 1 + static_cast<int>(i)), -1, 0});
          if (kind == 2) bodies[i].push_back(node{node_kind::decr, sub_token(t, 5), cell});
          if (nested && i == 0) {
            const std::uint32_t inner_value = (o.c >> 4) & 1;
            const int inner = new_cell(inner_value);
            bodies[i].push_back(node{node_kind::assign, inner_value, inner});
            std::vector<node> then{node{node_kind::work, sub_token(t, 6), -1, 1}};
            bodies[i].push_back(node{node_kind::cond, 0, new_cond(cond_kind::if_, inner, {then})});
          }
        }
        const cond_kind k = kind <= 1 ? cond_kind::if_ : kind == 2 ? cond_kind::while_ : cond_kind::switch_;
        nodes.push_back(node{node_kind::cond, 0, new_cond(k, cell, std::move(bodies))});
        nodes.push_back(node{node_kind::work, sub_token(t, 8), -1, 1});
        put_model(o.a, add_model(std::move(nodes), model_kind::conditional, cell));
        return r;
      }
      case op_kind::set_value: {
        const int m = models_[o.a];
        if (m < 0 || model_recs_[m].cell < 0) return r;
        if (pending_anywhere(m)) return unsupported();  // an execution in flight reads it
        cells_[static_cast<std::size_t>(model_recs_[m].cell)] = o.b;
        return r;
      }
      case op_kind::ctx_new: contexts_[o.a] = true; return r;
      case op_kind::ctx_close:
        if (!contexts_[o.a]) return err(keel::errc::invalid_handle);
        if (o.b == 1) return err(keel::errc::invalid_state);  // a scope has it current
        contexts_[o.a] = false;
        return r;
      case op_kind::ctx_stream: {
        if (!contexts_[o.b] || (o.c == 1 && !contexts_[1 - o.b])) return err(keel::errc::invalid_handle);
        op plain = o;
        plain.kind = op_kind::new_stream;
        r = apply(plain, index);
        r.out.second = 1;  // the context was current inside, the previous one afterwards
        return r;
      }
      case op_kind::upd_model: {
        const int t = models_[o.a], src = models_[o.b];
        rstream& s = streams_[o.c];
        if (t < 0 || src < 0 || !s.alive) return err(keel::errc::invalid_handle);
        if (t == src) return err(keel::errc::invalid_parameter);
        if (s.cap >= 0) return err(keel::errc::capture_violation);
        if (s.upd_group >= 0) return unsupported();
        if (!same_topology(model_recs_[t], model_recs_[src])) return err(keel::errc::update_violation);
        // In s's order: an execution issued elsewhere may run either side of it.
        if (pending_anywhere(t, o.c)) return unsupported();
        // A source that runs the target's tasks (updated from it before, or
        // through a ring of models) is fine: models keep the tasks they run,
        // never each other (LeakSanitizer would report a cycle).
        std::vector<node> nodes = model_recs_[src].nodes;
        for (std::size_t i = 0; i < nodes.size(); ++i)
          if (nodes[i].kind == node_kind::group) nodes[i] = model_recs_[t].nodes[i];  // groups keep their tasks
        if (reference_mutation() != 6) model_recs_[t].nodes = std::move(nodes);
        return sync_after(s, index, r);
      }
      case op_kind::task_disable:
      case op_kind::task_args:
      case op_kind::task_handle: {
        // One per-task change (see task_update() in the runner): disable, or
        // set_arguments or a kernel_task's update, which then logs this op's
        // token. A kernel_task names a task: a model with none has no call.
        const bool args = o.kind != op_kind::task_disable;
        const int m = models_[o.a];
        if (m < 0) return err(keel::errc::invalid_handle);
        if (model_recs_[m].kind != model_kind::captured) return unsupported();  // tasks() of a captured model only
        rstream& s = streams_[o.c];
        const auto tasks = task_list(model_recs_[m]);
        if (o.kind == op_kind::task_handle && tasks.empty()) return unsupported();
        node* target = nullptr;
        if (!tasks.empty()) {
          if (o.b & 128) return err(keel::errc::invalid_parameter);  // no such task
          const auto& pick = tasks[static_cast<std::size_t>(o.b & (args ? 63 : 127)) % tasks.size()];
          node& n = model_recs_[m].nodes[pick.first];
          // Only kernels and copies outside task groups are disabled, or take
          // arguments (of their launch's types).
          if (pick.second >= 0 || n.kind != node_kind::work || n.kernel < 0) return err(keel::errc::invalid_parameter);
          if (args && (o.b & 64)) return err(keel::errc::invalid_parameter);
          if (args && n.disabled) return unsupported();
          target = &n;
        }
        if (!s.alive) return err(keel::errc::invalid_handle);
        if (s.cap >= 0) return err(keel::errc::capture_violation);
        if (s.upd_group >= 0) return unsupported();
        if (target == nullptr) return r;  // nothing staged: nothing committed, no synchronize
        if (pending_anywhere(m, o.c)) return unsupported();
        if (args)
          target->token = o.token;
        else
          target->disabled = true;
        return sync_after(s, index, r);
      }
      case op_kind::fence_new: {
        // The runner drops the fenced model, then captures a new one on
        // stream a: kernel 0, the fence and its group of 1-2 kernels, kernel 1.
        if (fence_.model >= 0 && model_recs_[fence_.model].alive) {
          if (pending_anywhere(fence_.model)) return unsupported();
          model_recs_[fence_.model].alive = false;
        }
        fence_ = rfence{};
        rstream& s = streams_[o.a];
        if (!s.alive) return err(keel::errc::invalid_handle);
        if (s.cap >= 0 || s.upd_group >= 0) return err(keel::errc::capture_violation);
        if (live_models() >= max_live_models) return err(keel::errc::resource_limit);
        if (group_stream_ >= 0) return unsupported();
        groups_.push_back(rgroup{});
        fence_.group = static_cast<int>(groups_.size()) - 1;
        fence_.size = 1 + (o.b & 1);
        fence_.kinds = (o.b >> 1) & 3;
        for (int i = 0; i < fence_.size; ++i)
          groups_[fence_.group].tasks.push_back({sub_token(o.token, 1 + i), (fence_.kinds >> i) & 1});
        std::vector<node> nodes{node{node_kind::work, sub_token(o.token, 0), -1, 0},
                                node{node_kind::group, 0, fence_.group},
                                node{node_kind::work, sub_token(o.token, 8), -1, 1}};
        fence_.model = add_model(std::move(nodes), model_kind::fenced, -1);
        groups_[fence_.group].model = fence_.model;
        fence_.present = true;
        return r;
      }
      case op_kind::pool_share:
        // Its own streams and pool: only the device's model limit and the
        // captures in progress (whose modes may refuse its synchronizes) reach it.
        if (!capture_order_.empty() || group_stream_ >= 0) return unsupported();
        if (live_models() + 2 > max_live_models) return unsupported();
        if (o.a == 0) return err(keel::errc::invalid_state);
        return r;
      case op_kind::abort_nested:
        // Its own streams: only the device's model limit and the captures
        // in progress reach it. abort() ends the loop, whatever its depth.
        if (!capture_order_.empty() || group_stream_ >= 0) return unsupported();
        if (live_models() + 1 > max_live_models) return unsupported();
        r.out = {static_cast<int>(keel::errc::task_failed), 0};
        return r;
      case op_kind::fence_exec:
      case op_kind::fence_apply: {
        // One step: stage (fence_apply's b: 0 nothing; 1 a replacement of
        // the group's kinds; 2 one needing more workspace than captured; 3
        // a fence that does not exist; 4 the first kernel of another kind;
        // 5 one kernel too many), execute on the execution stream, apply()
        // on the update stream. b 6: apply() alone, which every issued
        // execution having its signal refuses. b 7: as 1, but the fenced
        // model is destroyed instead of apply(), its execution still waiting
        // at the fence. fence_exec: nothing staged.
        const bool step = o.kind == op_kind::fence_exec;
        const int variant = step ? 0 : o.b;
        const int ui = step ? o.c : o.a, ei = step ? o.a : o.c;
        rstream& u = streams_[ui];
        if (variant == 6) {
          // apply() checks its stream first; a refusal keeps what stage() queued.
          if (!u.alive) return err(keel::errc::invalid_handle);
          if (u.cap >= 0) return err(keel::errc::capture_violation);  // its signals would never reach the execution
          if (upds_[ui] == 1 || u.upd_group >= 0) return unsupported();
          return err(keel::errc::invalid_state);  // a signal ahead of its execution
        }
        if (variant >= 1 && !fence_.present) return err(keel::errc::invalid_parameter);
        if (variant == 3) return err(keel::errc::invalid_parameter);
        if (variant == 2) return err(keel::errc::resource_limit);
        if (variant >= 1) {
          fence_.pending = true;
          fence_.staged.clear();
          const int count = fence_.size + (variant == 5 ? 1 : 0);
          for (int i = 0; i < count; ++i) {
            int kind = i < fence_.size ? (fence_.kinds >> i) & 1 : 0;
            if (variant == 4 && i == 0) kind = 1 - kind;
            fence_.staged.push_back({sub_token(o.token, 1 + i), kind});
          }
        }
        if (!fence_.present) return err(keel::errc::invalid_state);
        rstream& s = streams_[ei];
        if (!s.alive) return err(keel::errc::invalid_handle);
        if (s.cap >= 0) return unsupported();
        if (s.upd_group >= 0) return err(keel::errc::update_violation);
        if (variant == 7) {
          // The destruction signals the waiting execution (it runs the group
          // as it stands: the staged replacement goes with the fenced model)
          // and waits for it; then the execution's stream is synchronized.
          run_nodes(model_recs_[fence_.model].nodes, s, s.failed);
          model_recs_[fence_.model].alive = false;
          fence_ = rfence{};
          return sync_after(s, index, r);
        }
        // The execution waits at the fence for this step's apply(): one the
        // update stream would refuse (or that shares the execution's stream)
        // would leave it waiting until the fenced model goes.
        if (ei == ui || !u.alive || u.cap >= 0 || upds_[ui] == 1 || u.upd_group >= 0) return unsupported();
        ++fence_.executions;
        s.pending.insert(fence_.model);
        ++fence_.signals;
        if (fence_.pending) {
          fence_.pending = false;
          rgroup& g = groups_[fence_.group];
          bool same = fence_.staged.size() == g.tasks.size();
          for (std::size_t i = 0; same && i < g.tasks.size(); ++i) same = fence_.staged[i].kind == g.tasks[i].kind;
          if (same)
            g.tasks = fence_.staged;
          else
            r.out.first = static_cast<int>(keel::errc::update_violation);
        }
        run_nodes(model_recs_[fence_.model].nodes, s, s.failed);  // past the fence: the group as updated
        return sync_after(u, index, r);
      }
      default: return unsupported();
    }
  }

  // The state queries the generator steers by.
  bool stream_alive(int s) const { return streams_[s].alive; }
  bool capturing(int s) const { return streams_[s].alive && streams_[s].cap >= 0; }
  bool updating(int s) const { return upds_[s] == 1; }
  bool marking(int s) const { return marks_[s] == 1; }
  bool model_present(int m) const { return models_[m] >= 0; }
  bool group_present(int g) const { return group_slots_[g] >= 0; }
  bool context_present(int c) const { return contexts_[c]; }
  std::size_t group_size(int g) const { return group_slots_[g] >= 0 ? groups_[group_slots_[g]].tasks.size() : 0; }
  int group_kind(int g, std::size_t i) const { return groups_[group_slots_[g]].tasks[i].kind; }
  // The kind an update on stream s must issue next to match its group, or -1.
  int update_kind(int s) const {
    const rstream& st = streams_[s];
    if (st.upd_group < 0) return -1;
    const auto& tasks = groups_[st.upd_group].tasks;
    return st.staged.size() < tasks.size() ? tasks[st.staged.size()].kind : -1;
  }

  const std::map<std::uint64_t, std::vector<std::uint32_t>>& logs() const { return logs_; }
  // The memsets that ran (at least once), by their calls' tokens.
  const std::set<std::uint32_t>& memsets() const { return memsets_; }
  const std::vector<barrier>& barriers() const { return barriers_; }
  const std::vector<host_wait>& host_waits() const { return host_waits_; }
  int reports() const { return reports_; }
  bool event_external(int slot) const {
    return event_slots_[slot] >= 0 && event_recs_[static_cast<std::size_t>(event_slots_[slot])].external;
  }
  bool event_present(int slot) const { return event_slots_[slot] >= 0; }
  // A default event no plain record has recorded: one an external operation takes.
  bool event_external_ready(int slot) const {
    if (event_slots_[slot] < 0) return false;
    const revent& e = event_recs_[static_cast<std::size_t>(event_slots_[slot])];
    return !e.external && !e.plain;
  }

 private:
  struct task {
    std::uint32_t token;
    int kind;
  };
  // work: a host callable or kernel that logs its token; fail: one that logs
  // and throws; group: a task group (id: its record); signal: an external
  // event's record (id: the event's record).
  // ext_record / ext_wait: a default event's external record or wait (id: the event's record).
  // cond: a conditional, activation or switch task (id: its record in
  // conds_); assign: a condition set to its default (id: the cell, token:
  // the value; it runs in the error state too, as an event task does); decr:
  // a kernel that logs its token and subtracts 1 from cell id; memset: a
  // memset, which sets its call's byte (by token) and logs nothing.
  enum class node_kind : std::uint8_t { work, fail, group, signal, ext_record, ext_wait, cond, assign, decr, memset };
  struct node {
    node_kind kind;
    std::uint32_t token;
    int id;
    int kernel = -1;  // work: the kernel's kind (0/1), -1 for a host callable
    bool disabled = false;
  };
  // A task that chooses bodies when it runs: IF (then, else), WHILE, SWITCH
  // (body `value`), a built model's switch (runs body 0 and ends the
  // switching part when the value is 1) and activation (runs body 0).
  enum class cond_kind : std::uint8_t { if_, while_, switch_, stream_switch, activate };
  struct rcond {
    cond_kind kind;
    int cell;  // -1 for an activation
    std::vector<std::vector<node>> bodies;
  };
  struct rstream {
    bool alive = false;
    std::uint64_t uid = 0;
    bool failed = false;
    int cap = -1;        // capture record, while capturing
    int upd_group = -1;  // group record, while updating
    std::vector<task> staged;
    std::set<int> pending;  // models executed here since the stream was last drained
    std::set<std::uint32_t> pending_memsets;  // the memsets (by token) those executions run
  };
  // One event, for as long as a handle or a model holds it (a model keeps
  // the events it recorded alive).
  struct revent {
    bool external = false;
    int records = 0;          // records issued (external: signals issued)
    std::uint64_t uid = 0;    // the last record's stream,
    std::size_t pos = 0;      // and how many tasks that stream had run before it
    // The last record (external: some record) has surely run: its stream
    // was drained since, or the event synchronized.
    bool complete = false;
    std::vector<std::uint64_t> unfinished;  // external: streams holding a signal not known to have run
    std::vector<std::size_t> waits;         // barriers of the waits on the last record
    bool plain = false;                     // a plain record was issued (no external operation takes it)
  };
  struct rcapture {
    keel::capture_mode mode = keel::capture_mode::global;
    int thread = 0;
    std::vector<node> nodes;
    std::vector<int> groups;
    int open_group = -1;
    std::map<int, bool> external_roles;  // event record -> whether this capture records (else waits on) it externally
  };
  struct rgroup {
    std::vector<task> tasks;
    int model = -1;  // set when its capture ends
    bool updating = false;
  };
  enum class model_kind : std::uint8_t { captured, built, conditional, fenced };
  struct rmodel {
    std::vector<node> nodes;
    bool alive = false;
    model_kind kind = model_kind::captured;
    int cell = -1;  // the device value set_value writes (a switch's or a condition's), -1 for none
  };
  // The fenced model (one, basic_fenced_model): its model record and group,
  // and apply()'s counts.
  struct rfence {
    bool present = false;  // fenced_update() registered its fence and the model was adopted
    int model = -1, group = -1;
    int kinds = 0, size = 0;  // the group's kernels as captured
    int signals = 0, executions = 0;
    bool pending = false;  // a replacement staged for the next apply()
    std::vector<task> staged;
  };

  static bool refuses(const rcapture& c, int thread) {
    return c.mode == keel::capture_mode::global ||
           (c.mode == keel::capture_mode::thread_local_ && (c.thread == thread || reference_mutation() == 3));
  }
  std::size_t live_models() const {
    std::size_t n = capture_order_.size();
    for (const auto& m : model_recs_) n += m.alive ? 1 : 0;
    return n;
  }
  void drop_stream(int i) {
    // Destroying a stream waits for its work and reports a pending failure.
    if (streams_[i].failed) ++reports_;
    finished(streams_[i].uid);
    streams_[i] = rstream{};
  }
  // A task issued (or replayed) on s, outside capture and update.
  void run_task(rstream& s, node_kind kind, std::uint32_t token) {
    if (s.failed) return;  // skipped until a synchronize reports the failure
    if (kind == node_kind::memset) {
      memsets_.insert(token);
      return;
    }
    logs_[s.uid].push_back(token);
    if (kind == node_kind::fail) s.failed = true;
  }
  // A record of event `id` reaches stream s's queue (directly, or as a node
  // of a model executed there); records run even on a stream in its error
  // state.
  // A wait issued on s: it refers to the record that is the event's last one
  // now. An external event is a flag any signal sets, earlier or later than
  // the wait: the order is known only while exactly one signal is issued (a
  // later one drops the barrier, see issue_record).
  void issue_wait(int id, const rstream& s) {
    revent& e = event_recs_[static_cast<std::size_t>(id)];
    if (e.records > 0 && e.pos > 0 && (!e.external || e.records == 1)) {
      e.waits.push_back(barriers_.size());
      barriers_.push_back({e.uid, e.pos - 1, s.uid, logs_[s.uid].size(), false});
    }
  }
  void issue_record(int id, const rstream& s) {
    revent& e = event_recs_[static_cast<std::size_t>(id)];
    if (e.external) {
      for (std::size_t b : e.waits) barriers_[b].dropped = true;
      e.waits.clear();
    } else if (reference_mutation() == 4 && !logs_[s.uid].empty()) {
      for (std::size_t b : e.waits) {
        barriers_[b].before_uid = s.uid;
        barriers_[b].before_index = logs_[s.uid].size() - 1;
      }
    } else {
      e.waits.clear();
    }
    ++e.records;
    e.uid = s.uid;
    e.pos = logs_[s.uid].size();
    if (e.external) {
      e.unfinished.push_back(s.uid);
    } else {
      e.complete = false;
    }
  }
  // The synchronize of s a call makes after its update (second outcome).
  result sync_after(rstream& s, std::size_t index, result r) {
    drain(s, index);
    r.out.second = 0;
    if (s.failed) {
      s.failed = false;
      r.out.second = static_cast<int>(keel::errc::task_failed);
    }
    return r;
  }
  // Call `index` returned after all work issued to s had run.
  void drain(rstream& s, std::size_t index) {
    s.pending.clear();
    s.pending_memsets.clear();
    host_waits_.push_back({s.uid, logs_[s.uid].size(), index});
    finished(s.uid);
  }
  void finished(std::uint64_t uid) {
    for (revent& e : event_recs_) {
      if (e.external) {
        if (std::find(e.unfinished.begin(), e.unfinished.end(), uid) != e.unfinished.end()) e.complete = true;
      } else if (e.records > 0 && e.uid == uid) {
        e.complete = true;
      }
    }
  }
  void drop_model(int slot) {
    model_recs_[models_[slot]].alive = false;
    models_[slot] = -1;
  }
  void end_capture(int s) {
    const int c = streams_[s].cap;
    capture_order_.erase(std::find(capture_order_.begin(), capture_order_.end(), c));
    streams_[s].cap = -1;
    caps_[s] = 2;
  }

  rstream streams_[n_streams];
  int event_slots_[n_events] = {-1, -1, -1};
  std::vector<revent> event_recs_;
  int models_[n_models] = {-1, -1, -1};
  int group_slots_[n_groups] = {-1, -1, -1};
  // Scope objects the runner holds per stream: 0 none, 1 active, 2 ended.
  int caps_[n_streams] = {}, marks_[n_streams] = {}, upds_[n_streams] = {};
  int group_stream_ = -1;
  std::vector<rcapture> captures_;
  std::vector<int> capture_order_;  // active captures, in order of begin
  std::vector<rgroup> groups_;
  std::vector<rmodel> model_recs_;
  std::map<std::uint64_t, std::vector<std::uint32_t>> logs_;
  std::vector<barrier> barriers_;
  std::vector<host_wait> host_waits_;
  int reports_ = 0;
  std::vector<rcond> conds_;
  std::vector<std::uint64_t> cells_;
  std::set<std::uint32_t> memsets_;
  bool contexts_[n_contexts] = {};
  rfence fence_;

  // Runs a model's nodes on s as the host backend replays them: after a
  // failure work is skipped, event records and condition defaults still run.
  // Returns false when a built model's switch that held ended this part.
  bool run_nodes(const std::vector<node>& nodes, rstream& s, bool skipped) {
    for (const node& n : nodes) {
      if (n.disabled) continue;
      switch (n.kind) {
        case node_kind::signal:
          if (reference_mutation() == 5 && (skipped || s.failed)) break;
          issue_record(n.id, s);
          break;
        // An external operation takes its point when the execution is
        // issued, in this stream's order, and runs after a failure too.
        case node_kind::ext_record: issue_record(n.id, s); break;
        case node_kind::ext_wait: issue_wait(n.id, s); break;
        case node_kind::group:
          if (!s.failed)
            for (const task& t : groups_[n.id].tasks) logs_[s.uid].push_back(t.token);
          break;
        case node_kind::assign: cells_[static_cast<std::size_t>(n.id)] = n.token; break;
        case node_kind::decr:
          if (s.failed) break;
          logs_[s.uid].push_back(n.token);
          --cells_[static_cast<std::size_t>(n.id)];
          break;
        case node_kind::cond:
          if (!run_cond(static_cast<std::size_t>(n.id), s, skipped)) return false;
          break;
        default: run_task(s, n.kind, n.token); break;
      }
    }
    return true;
  }
  bool run_cond(std::size_t id, rstream& s, bool skipped) {
    const rcond c = conds_[id];  // a copy: bodies do not change while they run
    const std::uint64_t value = c.cell >= 0 ? cells_[static_cast<std::size_t>(c.cell)] : 0;
    switch (c.kind) {
      case cond_kind::if_:
        if (value != 0)
          run_nodes(c.bodies[0], s, skipped);
        else if (c.bodies.size() > 1)
          run_nodes(c.bodies[1], s, skipped);
        return true;
      case cond_kind::while_:
        // After a failure the body's work would not run and nothing would end the loop: it does not start.
        if (s.failed) return true;
        for (int guard = 0; cells_[static_cast<std::size_t>(c.cell)] != 0 && guard < 64; ++guard)
          run_nodes(c.bodies[0], s, skipped);
        if (reference_mutation() == 7 && value != 0) run_nodes(c.bodies[0], s, skipped);
        return true;
      case cond_kind::switch_:
        if (value < c.bodies.size()) run_nodes(c.bodies[static_cast<std::size_t>(value)], s, skipped);
        return true;
      case cond_kind::stream_switch:
        if (value != 1) return true;
        run_nodes(c.bodies[0], s, skipped);
        return false;
      case cond_kind::activate: run_nodes(c.bodies[0], s, skipped); return true;
    }
    return true;
  }
  bool pending_anywhere(int model, int except = -1) const {
    for (int i = 0; i < n_streams; ++i)
      if (i != except && streams_[i].alive && streams_[i].pending.count(model)) return true;
    return false;
  }
  // Whether an execution pending on a stream other than @p except runs a
  // memset of @p m (the same call's, by token).
  bool memset_in_flight(const rmodel& m, int except) const {
    for (const node& n : m.nodes) {
      if (n.kind != node_kind::memset) continue;
      for (int i = 0; i < n_streams; ++i)
        if (i != except && streams_[i].alive && streams_[i].pending_memsets.count(n.token)) return true;
    }
    return false;
  }
  int new_cell(std::uint64_t value) {
    cells_.push_back(value);
    return static_cast<int>(cells_.size()) - 1;
  }
  int new_cond(cond_kind k, int cell, std::vector<std::vector<node>> bodies) {
    conds_.push_back(rcond{k, cell, std::move(bodies)});
    return static_cast<int>(conds_.size()) - 1;
  }
  int add_model(std::vector<node> nodes, model_kind kind, int cell) {
    rmodel m;
    m.nodes = std::move(nodes);
    m.alive = true;
    m.kind = kind;
    m.cell = cell;
    model_recs_.push_back(std::move(m));
    return static_cast<int>(model_recs_.size()) - 1;
  }
  // Puts model record id into slot (the model it held is destroyed).
  void put_model(int slot, int id) {
    if (models_[slot] >= 0) drop_model(slot);
    models_[slot] = id;
  }
  model_kind slot_kind(int slot) const { return model_recs_[static_cast<std::size_t>(models_[slot])].kind; }
  // A captured model's tasks as model.tasks() lists them: one per node, a
  // task group's tasks in its place. {node index, group task index or -1}.
  std::vector<std::pair<std::size_t, int>> task_list(const rmodel& m) const {
    std::vector<std::pair<std::size_t, int>> out;
    for (std::size_t i = 0; i < m.nodes.size(); ++i) {
      if (m.nodes[i].kind != node_kind::group) {
        out.push_back({i, -1});
        continue;
      }
      for (std::size_t t = 0; t < groups_[m.nodes[i].id].tasks.size(); ++t) out.push_back({i, static_cast<int>(t)});
    }
    return out;
  }
  // What a whole-model update compares of a captured model's node: its
  // task type and kernel kind, a group's kernels, and which event.
  std::string shape_of(const node& n) const {
    switch (n.kind) {
      case node_kind::work: return n.kernel < 0 ? "h" : "k" + std::to_string(n.kernel);
      case node_kind::fail: return "h";
      case node_kind::memset: return "m";
      case node_kind::signal: return "r";
      case node_kind::ext_record: return "R";
      case node_kind::ext_wait: return "W";
      case node_kind::group: {
        std::string g = "g";
        for (const task& t : groups_[n.id].tasks) g += std::to_string(t.kind);
        return g;
      }
      default: return "?";
    }
  }
  static bool has_event(const node& n) {
    return n.kind == node_kind::signal || n.kind == node_kind::ext_record || n.kind == node_kind::ext_wait;
  }
  // Whether keel::update_model takes source's tasks into target: both
  // captured (built and conditional models hold tasks it does not replace),
  // the same tasks in the same order, the same event pairing.
  bool same_topology(const rmodel& t, const rmodel& src) const {
    if (t.kind != model_kind::captured || src.kind != model_kind::captured) return false;
    if (t.nodes.size() != src.nodes.size()) return false;
    for (std::size_t i = 0; i < t.nodes.size(); ++i)
      if (shape_of(t.nodes[i]) != shape_of(src.nodes[i])) return false;
    for (std::size_t i = 0; i < t.nodes.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (has_event(t.nodes[i]) && has_event(t.nodes[j]) &&
            (t.nodes[i].id == t.nodes[j].id) != (src.nodes[i].id == src.nodes[j].id))
          return false;
    return true;
  }
};

// Whether every call of the sequence has a defined outcome; fills the
// expected outcomes and the final model.
inline bool simulate(const std::vector<op>& ops, reference& ref, std::vector<outcome>* expected) {
  for (std::size_t i = 0; i < ops.size(); ++i) {
    auto r = ref.apply(ops[i], i);
    if (!r.supported) return false;
    if (expected) expected->push_back(r.out);
  }
  return true;
}

// ---- the runner: the same calls, issued to keel --------------------------------

struct log_entry {
  std::uint64_t uid;
  std::uint32_t token;
};

// The tasks' shared log. One per process: tasks reach it through a pointer
// set by the runner (runs never overlap).
struct task_log {
  std::mutex m;
  std::vector<log_entry> entries;
};
inline std::atomic<task_log*>& current_log() {
  static std::atomic<task_log*> log{nullptr};
  return log;
}
// Set by a probe task on each stream's worker: the uid of the stream whose
// worker this is (model replays run on the executing stream's worker).
inline thread_local std::uint64_t t_stream_uid = 0;

inline void log_task(std::uint32_t token) {
  task_log* l = current_log().load(std::memory_order_acquire);
  std::lock_guard<std::mutex> lock(l->m);
  l->entries.push_back({t_stream_uid, token});
}

inline std::atomic<int>& handler_reports() {
  static std::atomic<int> n{0};
  return n;
}
inline void counting_handler(std::error_code, const char*, const char*) noexcept {
  handler_reports().fetch_add(1, std::memory_order_relaxed);
}

struct kernel_fn {
  void operator()(keel::host::launch_context&, std::uint32_t token) const { log_task(token); }
};

inline keel::kernel_kind kind_of(int k) { return k == 0 ? keel::kernel_kind{"k0"} : keel::kernel_kind{"k1"}; }

// A WHILE body's kernel: logs its token and counts the condition down.
struct decrement_fn {
  void operator()(keel::host::launch_context&, std::uint32_t token, std::uint64_t* value) const {
    log_task(token);
    --*value;
  }
};
constexpr keel::kernel_kind decrement_kind{"decrement"};

// How long the run may make no progress (no call returns, the final drain
// does not advance) before the watchdog calls it a hang. Far above any
// legitimate blocking call: the slowest waits for a few slow tasks.
constexpr std::chrono::milliseconds hang_after{2000};

class runner {
 public:
  runner()
      : dev_(keel::host::device_options{1, max_live_models, max_external_events}),
        rescue_(dev_),
        side_(dev_),
        side2_(dev_),
        plain_(dev_),
        loose_(keel::make_persistent_stream<keel::host::backend>(dev_)) {
    fm_.emplace(dev_);
  }

  // Issues the calls from `threads` threads, one at a time in sequence
  // order; returns the outcomes. Afterwards drains everything.
  std::vector<outcome> run(const std::vector<op>& ops, int threads) {
    current_log().store(&log_, std::memory_order_release);
    // Each memset call's byte, made before any call runs (no call changes the map).
    for (const op& o : ops)
      if (o.kind == op_kind::memset) memset_cells_[o.token] = 0;
    std::vector<outcome> got(ops.size());
    returned_.assign(ops.size(), 0);
    std::size_t turn = 0;
    std::mutex m;
    std::condition_variable cv;
    auto body = [&](int t) {
      for (std::size_t i = 0; i < ops.size(); ++i) {
        if (ops[i].thread % threads != t) continue;
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return turn == i; });
        lock.unlock();
        got[i] = call(ops[i], i);
        {
          std::lock_guard<std::mutex> entries_lock(log_.m);
          returned_[i] = log_.entries.size();
        }
        progress_.fetch_add(1, std::memory_order_release);
        lock.lock();
        ++turn;
        cv.notify_all();
      }
    };
    std::thread watchdog([&] { watch(ops); });
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(body, t);
    for (auto& th : pool) th.join();
    reports_ = handler_reports().load();
    finish();
    {
      std::lock_guard<std::mutex> lock(watch_m_);
      watch_stop_ = true;
    }
    watch_cv_.notify_all();
    watchdog.join();
    return got;
  }

  std::vector<log_entry> entries() {
    std::lock_guard<std::mutex> lock(log_.m);
    return log_.entries;
  }
  // For each call, how many tasks had been logged when it returned.
  const std::vector<std::size_t>& returned() const { return returned_; }
  // The memsets that ran, by their calls' tokens (after run(): every stream drained).
  std::set<std::uint32_t> memsets() const {
    std::set<std::uint32_t> out;
    for (const auto& [token, cell] : memset_cells_)
      if (cell != 0) out.insert(token);
    return out;
  }
  int reports() const { return reports_; }
  // Whether the run hung, and where: the index of the call that did not
  // return (the sequence's length: the final drain).
  bool hung() const { return hung_; }
  std::size_t hung_at() const { return hung_at_; }

 private:
  template <class F>
  static int code_of(F&& f) {
    try {
      f();
    } catch (const keel::error& e) {
      return e.code().value() == 0 ? 100 : e.code().value();
    }
    return 0;
  }

  outcome call(const op& o, std::size_t index) {
    outcome r;
    auto& st = streams_[o.a % n_streams];
    switch (o.kind) {
      case op_kind::new_stream: r.first = code_of([&] { make_stream(st, index); }); break;
      case op_kind::drop_stream: st.reset(); break;
      case op_kind::new_event:
        r.first = code_of([&] {
          keel::host::event e(dev_, o.b == 1 ? keel::event_flags::external : keel::event_flags::default_);
          std::lock_guard<std::mutex> lock(events_m_);
          retire(events_[o.a]);
          events_[o.a] = std::move(e);
        });
        break;
      case op_kind::drop_event: {
        std::lock_guard<std::mutex> lock(events_m_);
        retire(events_[o.a]);
        events_[o.a].reset();
        break;
      }
      case op_kind::launch_host:
        if (o.b == 1)
          r.first = code_of([&, tok = o.token] {
            st.launch_host([tok] {
              std::this_thread::sleep_for(slow_task);
              log_task(tok);
            });
          });
        else
          r.first = code_of([&, tok = o.token] { st.launch_host([tok] { log_task(tok); }); });
        break;
      case op_kind::launch_kernel:
        r.first = code_of([&] { st.launch(kind_of(o.b), kernel_fn{}, o.token); });
        break;
      case op_kind::memset:
        r.first = code_of([&] { st.memset_async(&memset_cells_.at(o.token), 1, 1); });
        break;
      case op_kind::launch_throw:
        r.first = code_of([&, tok = o.token] {
          st.launch_host([tok] {
            log_task(tok);
            throw std::runtime_error("injected failure");
          });
        });
        break;
      case op_kind::record: r.first = code_of([&] { events_[o.a].record(streams_[o.b]); }); break;
      case op_kind::wait: r.first = code_of([&] { st.wait(events_[o.b]); }); break;
      case op_kind::record_ext:
        r.first = code_of([&] { events_[o.a].record(streams_[o.b], keel::event_operation::external); });
        break;
      case op_kind::wait_ext: r.first = code_of([&] { st.wait(events_[o.b], keel::event_operation::external); }); break;
      case op_kind::sync: r.first = code_of([&] { st.synchronize(); }); break;
      case op_kind::sync_device: r.first = code_of([&] { keel::host::synchronize(dev_); }); break;
      case op_kind::copy_blocking:
        r.first = code_of([&] {
          std::uint64_t from = 7, to = 0;
          st.copy(&to, &from, sizeof from, keel::copy_kind::host_to_host);
          if (to != from) throw std::logic_error("blocking copy did not copy");
        });
        break;
      case op_kind::event_sync:
        if (is_query(o))
          r.first = code_of([&] { r.second = events_[o.a].query() ? 1 : 0; });
        else
          r.first = code_of([&] { events_[o.a].synchronize(); });
        break;
      case op_kind::cap_begin: {
        auto& cap = caps_[o.a];
        const auto mode = static_cast<keel::capture_mode>(o.b);
        if (cap && cap->active()) {
          r.first = code_of([&] {
            keel::host::capture_scope extra(st, mode);
            extra.cancel();
          });
        } else {
          cap.reset();
          r.first = code_of([&] { cap.emplace(st, mode); });
        }
        break;
      }
      case op_kind::cap_end:
        r.first = code_of([&] { put_model(o.b, caps_[o.a]->end()); });
        break;
      case op_kind::cap_discard:
        if (caps_[o.a]) caps_[o.a]->cancel();
        break;
      case op_kind::group_begin: {
        auto& mark = marks_[o.a];
        if (mark) {
          r.first = code_of([&] {
            keel::host::task_group_scope extra(st);
            (void)extra.end();
          });
        } else {
          r.first = code_of([&] { mark.emplace(st); });
        }
        break;
      }
      case op_kind::group_end:
        r.first = code_of([&] { groups_[o.b] = marks_[o.a]->end(); });
        if (r.first == 0) marks_[o.a].reset();
        break;
      case op_kind::exec:
        r.first = code_of([&] { models_[o.a].execute(streams_[o.b]); });
        break;
      case op_kind::drop_model: put_model(o.a, keel::host::model()); break;
      case op_kind::drop_group: groups_[o.a].reset(); break;
      case op_kind::upd_begin: {
        auto& upd = upds_[o.a];
        if (upd) {
          r.first = code_of([&] {
            keel::host::update_scope extra(st, groups_[o.b]);
            extra.cancel();
          });
        } else {
          r.first = code_of([&] { upd.emplace(st, groups_[o.b]); });
        }
        break;
      }
      case op_kind::upd_end:
        r.first = code_of([&] { upds_[o.a]->end(); });
        upds_[o.a].reset();
        if (r.first == 0) r.second = code_of([&] { st.synchronize(); });
        break;
      case op_kind::build: r.first = code_of([&] { build(o); }); break;
      case op_kind::cond: r.first = code_of([&] { conditional(o); }); break;
      case op_kind::set_value:
        if (cells_[o.a] != nullptr) *cells_[o.a] = o.b;
        if (flags_[o.a]) *flags_[o.a] = o.b;
        break;
      case op_kind::ctx_new: r.first = code_of([&] { contexts_[o.a] = keel::host::context(dev_); }); break;
      case op_kind::ctx_close:
        r.first = code_of([&] {
          keel::host::context& c = contexts_[o.a];
          if (o.b == 1) {
            keel::host::context_scope held{c};
            c.close();
          } else {
            c.close();
          }
        });
        break;
      case op_kind::ctx_stream: {
        bool restored = true;
        r.first = code_of([&] {
          const keel::host::context_ref before = keel::host::context_ref::current(dev_);
          {
            std::optional<keel::host::context_scope> outer;
            if (o.c == 1) outer.emplace(contexts_[1 - o.b]);
            keel::host::context_scope inner{contexts_[o.b]};
            restored = contexts_[o.b].is_current();
            make_stream(st, index);
          }
          restored = restored && keel::host::context_ref::current(dev_) == before;
        });
        if (r.first == 0) r.second = restored ? 1 : 0;
        break;
      }
      case op_kind::upd_model:
        r.first = code_of([&] { keel::update_model<keel::host::backend>(models_[o.a], models_[o.b], streams_[o.c]); });
        if (r.first == 0) r.second = code_of([&] { streams_[o.c].synchronize(); });
        break;
      case op_kind::task_disable: case op_kind::task_args: task_update(o, r); break;
      case op_kind::task_handle: kernel_task_update(o, r); break;
      case op_kind::fence_new: r.first = code_of([&] { fence_new(o); }); break;
      case op_kind::fence_exec: case op_kind::fence_apply: fence_step(o, r); break;
      case op_kind::pool_share: r.first = pool_share(o.a); break;
      case op_kind::abort_nested: abort_nested(o.a, r); break;
      default: break;
    }
    return r;
  }

  void make_stream(keel::host::stream& st, std::size_t index) {
    st = keel::host::stream();
    st = keel::host::stream(dev_);
    const std::uint64_t uid = uid_of_call(index);
    st.launch_host([uid] { t_stream_uid = uid; });
  }

  // Slot `slot` takes model m (its old model is destroyed first, then the
  // streams bound to it), with the device value set_value writes.
  void put_model(int slot, keel::host::model m, keel::host::model_condition c = {}, std::uint64_t* cell = nullptr) {
    models_[slot] = std::move(m);
    bound_[slot].clear();
    // An execution still in flight reads the switch value: it stays until the run ends.
    if (flags_[slot]) retired_flags_.push_back(std::move(flags_[slot]));
    conditions_[slot] = c;
    cells_[slot] = cell;
  }

  // See op_kind::build and the reference's case: the faults in this order.
  void build(const op& o) {
    using B = keel::host::backend;
    const int shape = o.b & 3, fault = (o.b >> 2) & 7;
    const int parts = shape == 0 ? 1 : shape == 3 ? 3 : 2;
    std::vector<keel::host::stream> bound;
    for (int i = 0; i < parts; ++i) bound.push_back(keel::make_persistent_stream<B>(dev_));
    auto flag = std::make_unique<std::int32_t>((o.b >> 5) & 1);
    static const std::int32_t one = 1;
    keel::host::model_builder builder{dev_};
    try {
      if (fault == 3) builder.bind(plain_);
      const auto& other = bound_[(o.a + 1) % n_models];
      if (fault == 6 && !other.empty()) builder.bind(other[0]);
      builder.bind(bound[0], fault == 2 ? keel::bound_stream::activated : keel::bound_stream::head);
      for (int i = 1; i < parts; ++i) builder.bind(bound[static_cast<std::size_t>(i)]);
      bound[0].launch(kind_of(0), kernel_fn{}, sub_token(o.token, 0));
      if (fault == 5) builder.activate(bound[0], loose_);
      if (shape == 1) builder.activate(bound[0], bound[1]);
      if (shape >= 2) {
        builder.switch_to(bound[0], flag.get(), keel::compare_condition::equal, &one, bound[1]);
        bound[0].launch(kind_of(0), kernel_fn{}, sub_token(o.token, 2));
      }
      if (fault != 1) builder.end_task(bound[0]);
      if (fault == 4) bound[0].launch(kind_of(0), kernel_fn{}, sub_token(o.token, 4));
      if (parts > 1) {
        bound[1].launch(kind_of(1), kernel_fn{}, sub_token(o.token, 1));
        if (shape == 3) builder.activate(bound[1], bound[2]);
        if (fault != 1) builder.end_task(bound[1]);
      }
      if (parts > 2) {
        bound[2].launch(kind_of(0), kernel_fn{}, sub_token(o.token, 3));
        if (fault != 1) builder.end_task(bound[2]);
      }
      put_model(o.a, builder.end());
      bound_[o.a] = std::move(bound);
      flags_[o.a] = std::move(flag);
    } catch (...) {
      builder.cancel();
      throw;
    }
  }

  // See op_kind::cond and the reference's case.
  void conditional(const op& o) {
    using B = keel::host::backend;
    keel::host::stream& st = streams_[o.c & 3];
    const int kind = o.b & 3, fault = o.b >> 6;
    const bool nested = (o.b & 16) != 0, assign = (o.b & 32) != 0;
    std::size_t n = kind == 1 ? 2 : kind == 3 ? static_cast<std::size_t>((o.b >> 2) & 3) : 1;
    if (fault == 3) n = kind == 3 ? 0 : 3;
    const keel::conditional_kind k = kind <= 1   ? keel::conditional_kind::if_
                                     : kind == 2 ? keel::conditional_kind::while_
                                                 : keel::conditional_kind::switch_;
    keel::host::capture_scope capture(st, keel::capture_mode::relaxed);
    try {
      const auto c = keel::make_condition<B>(st, (o.c >> 2) & 3, assign);
      st.launch(kind_of(0), kernel_fn{}, sub_token(o.token, 0));
      const auto bodies = keel::add_conditional<B>(fault == 2 ? side_ : st,
                                                   fault == 1 ? conditions_[(o.a + 1) % n_models] : c, k, n);
      for (std::size_t i = 0; i < bodies.size(); ++i) {
        keel::host::body_capture_scope into{side_, bodies[i], keel::capture_mode::relaxed};
        side_.launch(kind_of(0), kernel_fn{}, sub_token(o.token, 1 + static_cast<int>(i)));
        if (kind == 2) side_.launch(decrement_kind, decrement_fn{}, sub_token(o.token, 5), c.value());
        if (nested && i == 0) {
          const auto inner = keel::make_condition<B>(side_, (o.c >> 4) & 1, true);
          const auto then = keel::if_<B>(side_, inner);
          keel::host::body_capture_scope deeper{side2_, then, keel::capture_mode::relaxed};
          side2_.launch(kind_of(1), kernel_fn{}, sub_token(o.token, 6));
          deeper.end();
        }
        into.end();
      }
      st.launch(kind_of(1), kernel_fn{}, sub_token(o.token, 8));
      put_model(o.a, capture.end(), c, c.value());
    } catch (...) {
      capture.cancel();
      throw;
    }
  }

  // One per-task change (the call's kind) of model a's task b, committed on
  // stream c, which is then synchronized. A change kind is one case here.
  void task_update(const op& o, outcome& r) {
    bool staged = false;
    r.first = code_of([&] {
      keel::host::task_update_scope update{models_[o.a]};
      try {
        const auto tasks = models_[o.a].tasks();
        if (!tasks.empty()) {
          const int pick = o.kind == op_kind::task_args ? (o.b & 63) : (o.b & 127);
          keel::task_info t = tasks[static_cast<std::size_t>(pick) % tasks.size()];
          if (o.b & 128) t.sequence += 1000;  // a task the model does not have
          switch (o.kind) {
            case op_kind::task_disable: update.disable(t); break;
            case op_kind::task_args:
              if (o.b & 64)
                update.set_arguments(t, 1.5f);  // the kernels take a std::uint32_t token
              else
                update.set_arguments(t, o.token);
              break;
            default: throw std::logic_error("not a per-task change");
          }
          staged = true;
        }
        update.end(streams_[o.c]);
      } catch (...) {
        update.cancel();
        throw;
      }
    });
    if (r.first == 0 && staged) r.second = code_of([&] { streams_[o.c].synchronize(); });
  }

  // Model a's task b given this call's token by a kernel_task made for it,
  // committed on stream c, which is then synchronized.
  void kernel_task_update(const op& o, outcome& r) {
    bool named = false;
    r.first = code_of([&] {
      const auto tasks = models_[o.a].tasks();
      if (tasks.empty()) throw std::logic_error("a kernel_task of a model with no task");  // the reference has no call
      keel::task_info t = tasks[static_cast<std::size_t>(o.b & 63) % tasks.size()];
      if (o.b & 128) t.sequence += 1000;  // a task the model does not have
      if (o.b & 64) {
        if (o.token & 1) {  // the kernels are no operator's launches
          const keel::ops::basic_operator_task<keel::host::backend> wrong{models_[o.a], t};
          throw std::logic_error("an operator task of a kernel launch was made");
        }
        const keel::host::kernel_task<float> wrong{models_[o.a], t};  // the kernels take a std::uint32_t token
        throw std::logic_error("a kernel_task of the wrong type was made");
      }
      keel::host::kernel_task<std::uint32_t> task{models_[o.a], t};
      named = true;
      task.update(streams_[o.c], o.token);
    });
    if (r.first == 0 && named) r.second = code_of([&] { streams_[o.c].synchronize(); });
  }

  // See op_kind::pool_share. The models' first task holds the device's one
  // compute worker until the call has issued what it checks; the answer is
  // the decisive call's errc, or a code no errc has when the pool let two
  // executions run at once or out of order.
  int pool_share(int variant) {
    static constexpr int overlapped = 1000;
    keel::host::memory_pool pool{dev_, {"pool_share"}};
    keel::host::stream s{dev_}, t{dev_};
    std::atomic<bool> open{false};
    std::vector<int> ran;
    std::mutex ran_m;
    auto capture = [&](int which) {
      keel::host::capture_scope scope{s, pool};
      auto tmp = pool.allocate(s, 4096);  // released inside the capture: the next capture shares it
      s.launch_host([&open, &ran, &ran_m, which] {
        while (!open.load()) std::this_thread::yield();
        std::lock_guard<std::mutex> lock(ran_m);
        ran.push_back(which);
      });
      tmp.reset();
      return scope.end();
    };
    keel::host::model a = capture(0), b = capture(1);
    int answer = 0;
    if (variant == 2) {
      std::atomic<int> refused{0}, ready{0};
      auto run = [&](keel::host::model& m, keel::host::stream& on) {
        ++ready;
        while (ready.load() < 2) {
        }
        if (code_of([&] { m.execute(on); }) == static_cast<int>(keel::errc::invalid_state)) ++refused;
      };
      std::thread other([&] { run(b, t); });
      run(a, s);
      other.join();
      answer = refused.load() == 1 ? 0 : overlapped;
    } else {
      a.execute(s);
      if (variant == 1) {
        keel::host::event after{dev_};
        after.record(s);
        t.wait(after);
      }
      answer = code_of([&] { b.execute(t); });
    }
    open = true;
    s.synchronize();
    t.synchronize();
    if (variant == 1 && answer == 0 && ran != std::vector<int>{0, 1}) answer = overlapped;
    return answer;
  }

  // See op_kind::abort_nested. Bounded waits: a loop the abort did not reach
  // answers timeout instead of hanging the run.
  void abort_nested(int depth, outcome& r) {
    using B = keel::host::backend;
    keel::host::stream s{dev_}, side{dev_}, inner_side{dev_};
    std::atomic<int> runs{0};
    std::uint64_t* loop_value = nullptr;
    keel::host::model m;
    {
      keel::host::capture_scope capture{s, keel::capture_mode::relaxed};
      auto capture_loop = [&](keel::host::stream& on, keel::host::stream& in) {
        auto loop = keel::make_condition<B>(on, 1, false);  // nothing in the loop clears it
        loop_value = loop.value();
        auto body = keel::while_<B>(on, loop);
        keel::host::body_capture_scope into{in, body, keel::capture_mode::relaxed};
        in.launch_host([&runs] { ++runs; });
        into.end();
      };
      if (depth == 0) {
        capture_loop(s, side);
      } else {
        auto outer = keel::make_condition<B>(s, 1);
        auto then_body = keel::if_<B>(s, outer);
        keel::host::body_capture_scope into{side, then_body, keel::capture_mode::relaxed};
        capture_loop(side, inner_side);
        into.end();
      }
      m = capture.end();
    }
    m.execute(s);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (runs.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    r.first = code_of([&] {
      m.abort();
      s.synchronize(std::chrono::seconds(10));
    });
    *loop_value = 0;  // the model and its stream stay usable: the loop now ends at once
    r.second = code_of([&] {
      m.execute(s);
      s.synchronize(std::chrono::seconds(10));
    });
  }

  // See op_kind::fence_new: the old fenced model goes first.
  void fence_new(const op& o) {
    fm_.reset();
    fm_.emplace(dev_);
    fence_size_ = 1 + (o.b & 1);
    fence_kinds_ = (o.b >> 1) & 3;
    fence_workspace_ = (o.b & 8) ? 256 : 0;
    keel::host::stream& st = streams_[o.a];
    keel::host::capture_scope capture(st, keel::capture_mode::relaxed);
    try {
      st.launch(kind_of(0), kernel_fn{}, sub_token(o.token, 0));
      fm_->fenced_update(st, fence_workspace_, [&](keel::host::stream_ref c) {
        for (int i = 0; i < fence_size_; ++i)
          c.launch(kind_of((fence_kinds_ >> i) & 1), kernel_fn{}, sub_token(o.token, 1 + i));
      });
      st.launch(kind_of(1), kernel_fn{}, sub_token(o.token, 8));
      fm_->adopt(capture.end());
    } catch (...) {
      capture.cancel();
      throw;
    }
  }

  // See the reference's case for what b stages before the execution and apply().
  void fence_step(const op& o, outcome& r) {
    const bool step = o.kind == op_kind::fence_exec;
    const int variant = step ? 0 : o.b;
    keel::host::stream& u = streams_[step ? o.c : o.a];
    keel::host::stream& s = streams_[step ? o.a : o.c];
    if (variant != 6) {
      r.first = code_of([&] {
        if (variant == 0) return;
        const std::uint32_t token = o.token;
        const int size = fence_size_, kinds = fence_kinds_;
        fm_->stage(variant == 3 ? 1 : 0, variant == 2 ? fence_workspace_ + 64 : 0, [=](keel::host::stream_ref us) {
          const int count = size + (variant == 5 ? 1 : 0);
          for (int i = 0; i < count; ++i) {
            int kind = i < size ? (kinds >> i) & 1 : 0;
            if (variant == 4 && i == 0) kind = 1 - kind;
            us.launch(kind_of(kind), kernel_fn{}, sub_token(token, 1 + i));
          }
        });
      });
      if (r.first != 0) return;
      r.first = code_of([&] { fm_->execute(s); });
      if (r.first != 0) return;
      if (variant == 7) {
        fm_.reset();  // with the execution waiting at the fence: it is signalled, not left to hang
        fm_.emplace(dev_);
        r.second = code_of([&] { s.synchronize(); });
        return;
      }
    }
    r.first = code_of([&] { fm_->apply(u); });
    if (r.first == 0 || r.first == static_cast<int>(keel::errc::update_violation))
      r.second = code_of([&] { u.synchronize(); });
  }

  void finish() {
    for (auto& u : upds_)
      if (u) u->cancel();
    for (auto& g : marks_)
      if (g) g->cancel();
    for (auto& c : caps_)
      if (c) c->cancel();
    for (auto& s : streams_) {
      if (s) code_of([&] { s.synchronize(); });
      progress_.fetch_add(1, std::memory_order_release);
    }
  }

  // An external event leaving its slot is kept until the run ends, so that
  // the watchdog can still signal it (a pending wait holds it anyway).
  // Caller holds events_m_.
  void retire(keel::host::event& e) {
    if (e && e.flags() == keel::event_flags::external) retired_.push_back(std::move(e));
  }

  // The watchdog. A call that does not return (or a final drain that does
  // not advance) for hang_after is a hang: a stream waits for a signal that
  // never comes. It is recorded, and every external event the run made is
  // signalled from a stream of the watchdog's own so that the run can end
  // and the mismatch be reported and shrunk. A hang that survives that is
  // not one the harness can undo: it prints the calls and aborts.
  void watch(const std::vector<op>& ops) {
    std::unique_lock<std::mutex> lock(watch_m_);
    std::size_t seen = progress_.load(std::memory_order_acquire);
    auto since = std::chrono::steady_clock::now();
    int rescues = 0;
    while (!watch_cv_.wait_for(lock, std::chrono::milliseconds(20), [&] { return watch_stop_; })) {
      const std::size_t now_at = progress_.load(std::memory_order_acquire);
      const auto now = std::chrono::steady_clock::now();
      if (now_at != seen) {
        seen = now_at;
        since = now;
        continue;
      }
      if (now - since < hang_after) continue;
      if (!hung_) {
        hung_ = true;
        hung_at_ = std::min(now_at, ops.size());
      }
      if (rescues == 2) {
        std::fprintf(stderr, "keel differential: the run is stuck at %s even after every external event was "
                             "signalled; the calls:\n",
                     now_at < ops.size() ? describe(ops[now_at]).c_str() : "the final drain");
        for (std::size_t i = 0; i < ops.size(); ++i) std::fprintf(stderr, "  %3zu %s\n", i, describe(ops[i]).c_str());
        std::abort();
      }
      ++rescues;
      since = now;
      std::lock_guard<std::mutex> events_lock(events_m_);
      auto signal = [&](const keel::host::event& e) {
        if (e && e.flags() == keel::event_flags::external) code_of([&] { e.record(rescue_); });
      };
      for (const auto& e : events_) signal(e);
      for (const auto& e : retired_) signal(e);
    }
  }

  keel::host::device dev_;
  keel::host::stream rescue_;  // the watchdog's: signals external events after a hang
  keel::host::context contexts_[n_contexts];
  // The conditional calls' body streams, a stream that is not persistent and
  // a persistent one bound to nothing (the build's faults).
  keel::host::stream side_, side2_, plain_, loose_;
  // Declared after the device (destroyed before it), scopes after streams.
  keel::host::stream streams_[n_streams];
  keel::host::event events_[n_events];
  std::vector<keel::host::event> retired_;
  std::mutex events_m_;  // guards events_ and retired_ against the watchdog
  std::vector<std::size_t> returned_;
  std::map<std::uint32_t, unsigned char> memset_cells_;  // memset: its call's byte, by token
  std::atomic<std::size_t> progress_{0};
  std::mutex watch_m_;
  std::condition_variable watch_cv_;
  bool watch_stop_ = false;  // guarded by watch_m_
  // Written by the watchdog, read after it is joined.
  bool hung_ = false;
  std::size_t hung_at_ = 0;
  // A built model's streams and switch value: destroyed after the model.
  std::vector<keel::host::stream> bound_[n_models];
  std::unique_ptr<std::int32_t> flags_[n_models];
  std::vector<std::unique_ptr<std::int32_t>> retired_flags_;
  keel::host::model models_[n_models];
  keel::host::model_condition conditions_[n_models];  // a conditional model's condition,
  std::uint64_t* cells_[n_models] = {};                // and its value
  std::optional<keel::host::fenced_model> fm_;
  int fence_size_ = 1, fence_kinds_ = 0;
  std::size_t fence_workspace_ = 0;
  keel::host::task_group groups_[n_groups];
  std::optional<keel::host::capture_scope> caps_[n_streams];
  std::optional<keel::host::task_group_scope> marks_[n_streams];
  std::optional<keel::host::update_scope> upds_[n_streams];
  task_log log_;
  int reports_ = 0;
};

// ---- comparison -----------------------------------------------------------------

// Runs the sequence on keel and compares with the model; returns "" when
// they agree, else what differs. The sequence must be supported.
inline std::string check(const std::vector<op>& ops, int threads) {
  reference ref;
  std::vector<outcome> expected;
  if (!simulate(ops, ref, &expected)) return "";
  handler_reports().store(0);
  const keel::error_handler previous = keel::set_error_handler(&counting_handler);
  std::vector<outcome> got;
  std::vector<log_entry> entries;
  std::vector<std::size_t> returned;
  std::set<std::uint32_t> memsets;
  int reports = 0;
  bool hung = false;
  std::size_t hung_at = 0;
  {
    runner run;
    got = run.run(ops, threads);
    entries = run.entries();
    returned = run.returned();
    memsets = run.memsets();
    reports = run.reports();
    hung = run.hung();
    hung_at = run.hung_at();
  }
  keel::set_error_handler(previous);
  std::string diff;
  if (hung)
    return (hung_at < ops.size() ? "call " + std::to_string(hung_at) + " (" + describe(ops[hung_at]) + ")"
                                 : std::string("the final drain of every stream")) +
           " hung: nothing progressed for " + std::to_string(hang_after.count()) +
           " ms, until the harness signalled every external event (a wait was never released)\n";
  for (std::size_t i = 0; i < ops.size(); ++i) ++outcome_stats()[{static_cast<int>(ops[i].kind), got[i].first}];
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (got[i] != expected[i]) {
      diff += "call " + std::to_string(i) + " (" + describe(ops[i]) + "): expected " + render(ops[i], expected[i]) +
              ", got " + render(ops[i], got[i]) + "\n";
      return diff;  // later calls depend on this one
    }
  // Per-stream logs, and the position of every entry in the global order.
  std::map<std::uint64_t, std::vector<std::uint32_t>> actual;
  std::map<std::uint64_t, std::vector<std::size_t>> seq;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    actual[entries[i].uid].push_back(entries[i].token);
    seq[entries[i].uid].push_back(i);
  }
  auto tokens = [](const std::vector<std::uint32_t>& v) {
    std::string s;
    for (auto t : v) s += " #" + std::to_string(t);
    return s.empty() ? std::string(" (none)") : s;
  };
  for (const auto& [uid, want] : ref.logs()) {
    const auto it = actual.find(uid);
    const std::vector<std::uint32_t> have = it == actual.end() ? std::vector<std::uint32_t>{} : it->second;
    if (have != want)
      diff += "stream made by call " + std::to_string(uid - 1) + " ran" + tokens(have) + "; expected" + tokens(want) +
              "\n";
  }
  for (const auto& [uid, have] : actual)
    if (!ref.logs().count(uid)) diff += "tasks ran on an unknown stream (uid " + std::to_string(uid) + ")" + tokens(have) + "\n";
  if (!diff.empty()) return diff;
  // The logs agree, so a stream's n-th task is the model's n-th token.
  auto task_name = [&](std::uint64_t uid, std::size_t index) {
    return "task #" + std::to_string(ref.logs().at(uid)[index]) + " (stream made by call " + std::to_string(uid - 1) +
           ")";
  };
  for (const barrier& b : ref.barriers()) {
    if (b.dropped) continue;
    const auto& before = seq[b.before_uid];
    const auto& after = seq[b.after_uid];
    if (b.before_index < before.size() && b.after_index < after.size() &&
        before[b.before_index] > after[b.after_index])
      diff += "a wait did not order " + task_name(b.after_uid, b.after_index) + " after " +
              task_name(b.before_uid, b.before_index) + "\n";
  }
  // A blocking call returned only after the work it waited for had run.
  for (const host_wait& w : ref.host_waits()) {
    if (w.count == 0) continue;
    const auto& positions = seq[w.uid];
    if (positions.size() < w.count || positions[w.count - 1] >= returned[w.call])
      diff += "call " + std::to_string(w.call) + " (" + describe(ops[w.call]) + ") returned before " +
              task_name(w.uid, w.count - 1) + " had run\n";
  }
  // Which memsets ran: a memset logs nothing, its byte says.
  if (memsets != ref.memsets()) {
    auto listed = [](const std::set<std::uint32_t>& v) {
      std::string s;
      for (auto t : v) s += " #" + std::to_string(t);
      return s.empty() ? std::string(" (none)") : s;
    };
    diff += "the memsets that ran were" + listed(memsets) + "; expected" + listed(ref.memsets()) + "\n";
  }
  if (reports != ref.reports())
    diff += "the error handler received " + std::to_string(reports) + " reports; expected " +
            std::to_string(ref.reports()) + "\n";
  return diff;
}

// ---- the generator ---------------------------------------------------------------

class generator {
 public:
  generator(std::uint64_t seed, int threads) : rng_(seed), threads_(threads) {}

  std::vector<op> make(std::size_t length) {
    std::vector<op> ops;
    reference ref;
    // Start with two streams and an event so most calls do something.
    for (op o : {op{op_kind::new_stream, 0, 0, 0, 0}, op{op_kind::new_stream, 0, 1, 0, 0},
                 op{op_kind::new_event, 0, 0, 0, 0}}) {
      o.thread = static_cast<std::uint8_t>(pick(threads_));
      ref.apply(o, ops.size());
      ops.push_back(o);
    }
    auto push = [&](op o) {
      if (ops.size() >= length) return;
      o.token = static_cast<std::uint32_t>(ops.size() + 1);
      reference trial = ref;
      if (!trial.apply(o, ops.size()).supported) return;
      ref = std::move(trial);
      ops.push_back(o);
    };
    while (ops.size() < length) {
      const int burst = pick(100);
      if (burst < 6) {
        update_scenario(push);
        continue;
      }
      if (burst < 11) {
        records_scenario(push, ref);
        continue;
      }
      if (burst < 15) {
        failing_model_scenario(push, ref);
        continue;
      }
      if (burst < 21) {
        models_scenario(push, ref);
        continue;
      }
      for (int attempt = 0; attempt < 50; ++attempt) {
        op o = propose(ref, static_cast<std::uint32_t>(ops.size() + 1));
        reference trial = ref;
        if (!trial.apply(o, ops.size()).supported) continue;
        ref = std::move(trial);
        ops.push_back(o);
        break;
      }
    }
    return ops;
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<std::uint64_t>(n)); }
  bool chance(int percent) { return pick(100) < percent; }

  // A slot satisfying pred, most of the time, else any slot.
  template <class Pred>
  int slot(int n, Pred pred) {
    if (chance(85)) {
      std::vector<int> ok;
      for (int i = 0; i < n; ++i)
        if (pred(i)) ok.push_back(i);
      if (!ok.empty()) return ok[static_cast<std::size_t>(pick(static_cast<int>(ok.size())))];
    }
    return pick(n);
  }

  // A coherent burst: capture a model with a task group on one stream,
  // execute it, update the group from another thread (sometimes with a
  // wrong kind or count), execute again. Calls the model refuses are
  // dropped, so the burst interleaves safely with whatever came before.
  template <class Push>
  void update_scenario(Push& push) {
    auto th = [&] { return static_cast<std::uint8_t>(pick(threads_)); };
    const auto s = static_cast<std::uint8_t>(pick(n_streams));
    const auto u = static_cast<std::uint8_t>(pick(n_streams));
    const auto m = static_cast<std::uint8_t>(pick(n_models));
    const auto g = static_cast<std::uint8_t>(pick(n_groups));
    const auto x = static_cast<std::uint8_t>(pick(n_streams));
    push(op{op_kind::cap_begin, th(), s, static_cast<std::uint8_t>(pick(3)), 0});
    push(op{op_kind::launch_host, th(), s, 0, 0});
    push(op{op_kind::group_begin, th(), s, 0, 0});
    const int n = 1 + pick(3);
    std::vector<std::uint8_t> kinds;
    for (int i = 0; i < n; ++i) {
      kinds.push_back(static_cast<std::uint8_t>(pick(2)));
      push(op{op_kind::launch_kernel, th(), s, kinds.back(), 0});
    }
    push(op{op_kind::group_end, th(), s, g, 0});
    push(op{op_kind::launch_kernel, th(), s, static_cast<std::uint8_t>(pick(2)), 0});
    push(op{op_kind::cap_end, th(), s, m, 0});
    push(op{op_kind::exec, th(), m, x, 0});
    if (chance(70)) push(op{op_kind::sync, th(), x, 0, 0});
    push(op{op_kind::upd_begin, th(), u, g, 0});
    const int wrong = pick(10);  // 0: a kind differs; 1: one task too many; 2: none
    for (int i = 0; i < n && wrong != 2; ++i)
      push(op{op_kind::launch_kernel, th(), u, static_cast<std::uint8_t>(wrong == 0 && i == 0 ? 1 - kinds[0] : kinds[static_cast<std::size_t>(i)]), 0});
    if (wrong == 1) push(op{op_kind::launch_kernel, th(), u, 0, 0});
    push(op{op_kind::upd_end, th(), u, 0, 0});
    push(op{op_kind::exec, th(), m, x, 0});
    if (chance(50)) push(op{op_kind::exec, th(), m, u, 0});
  }

  // A stream the burst can use: live and not capturing or updating, most of
  // the time; a dead slot gets a new stream first.
  template <class Push>
  std::uint8_t usable_stream(Push& push, const reference& ref) {
    const int s = slot(n_streams, [&](int i) { return ref.stream_alive(i) && !ref.capturing(i) && !ref.updating(i); });
    if (!ref.stream_alive(s)) push(op{op_kind::new_stream, static_cast<std::uint8_t>(pick(threads_)), static_cast<std::uint8_t>(s), 0, 0});
    return static_cast<std::uint8_t>(s);
  }

  // Several records of one event on different streams, with waits between
  // them: a wait must wait for the record that was the event's last one
  // when it was issued, not for a later record on a stream that finishes
  // first. Slow host callables make the order of completion differ from the
  // order of issue.
  template <class Push>
  void records_scenario(Push& push, const reference& ref) {
    auto th = [&] { return static_cast<std::uint8_t>(pick(threads_)); };
    const auto e = static_cast<std::uint8_t>(pick(n_events));
    if (!ref.event_present(e) || chance(20)) push(op{op_kind::new_event, th(), e, static_cast<std::uint8_t>(chance(20)), 0});
    const int records = 2 + pick(2);
    for (int i = 0; i < records; ++i) {
      const std::uint8_t recorder = usable_stream(push, ref);
      if (chance(60)) push(op{op_kind::launch_host, th(), recorder, 1, 0});  // slow
      if (chance(40)) push(op{op_kind::launch_kernel, th(), recorder, static_cast<std::uint8_t>(pick(2)), 0});
      push(op{op_kind::record, th(), e, recorder, 0});
      const int waits = pick(3);
      for (int w = 0; w < waits; ++w) {
        const std::uint8_t waiter = usable_stream(push, ref);
        push(op{op_kind::wait, th(), waiter, e, 0});
        push(op{op_kind::launch_host, th(), waiter, static_cast<std::uint8_t>(chance(15)), 0});
      }
    }
    if (chance(40)) push(op{op_kind::event_sync, th(), e, static_cast<std::uint8_t>(pick(2)), 0});
    if (chance(30)) push(op{op_kind::sync_device, th(), 0, 0, 0});
    if (chance(40)) push(op{op_kind::event_sync, th(), e, 1, 0});
  }

  // A captured model that holds an external event's record, with a task
  // that throws before it, executed on a stream that is sometimes already
  // in its error state (the whole execution is skipped); another stream
  // waits on the event. The record must run either way.
  template <class Push>
  void failing_model_scenario(Push& push, const reference& ref) {
    auto th = [&] { return static_cast<std::uint8_t>(pick(threads_)); };
    const auto e = static_cast<std::uint8_t>(pick(n_events));
    const auto m = static_cast<std::uint8_t>(pick(n_models));
    if (!ref.event_external(e) || chance(30)) push(op{op_kind::new_event, th(), e, 1, 0});
    push(op{op_kind::drop_model, th(), m, 0, 0});  // room under the live-model limit
    const std::uint8_t x = usable_stream(push, ref);
    push(op{op_kind::cap_begin, th(), x, static_cast<std::uint8_t>(pick(3)), 0});
    if (chance(50)) push(op{op_kind::launch_host, th(), x, 0, 0});
    if (chance(75)) push(op{op_kind::launch_throw, th(), x, 0, 0});
    if (chance(40)) push(op{op_kind::launch_kernel, th(), x, static_cast<std::uint8_t>(pick(2)), 0});
    push(op{op_kind::record, th(), e, x, 0});
    if (chance(50)) push(op{op_kind::launch_host, th(), x, 0, 0});
    push(op{op_kind::cap_end, th(), x, m, 0});
    const std::uint8_t y = usable_stream(push, ref);
    if (chance(35)) push(op{op_kind::launch_throw, th(), y, 0, 0});  // the execution is skipped
    push(op{op_kind::exec, th(), m, y, 0});
    const std::uint8_t z = usable_stream(push, ref);
    push(op{op_kind::wait, th(), z, e, 0});
    push(op{op_kind::launch_host, th(), z, 0, 0});
    if (chance(50)) push(op{op_kind::sync, th(), y, 0, 0});
    if (chance(50)) push(op{op_kind::event_sync, th(), e, static_cast<std::uint8_t>(pick(2)), 0});
    if (chance(50)) push(op{op_kind::sync, th(), z, 0, 0});
    if (chance(40)) push(op{op_kind::event_sync, th(), e, 1, 0});
  }

  op propose(const reference& ref, std::uint32_t token) {
    op o;
    o.thread = static_cast<std::uint8_t>(pick(threads_));
    o.token = token;
    auto alive = [&](int s) { return ref.stream_alive(s); };
    // Weighted choice of the call.
    static const std::pair<op_kind, int> weights[] = {
        {op_kind::new_stream, 3}, {op_kind::drop_stream, 2}, {op_kind::new_event, 2},   {op_kind::drop_event, 1},
        {op_kind::launch_host, 12}, {op_kind::launch_kernel, 14}, {op_kind::launch_throw, 2}, {op_kind::record, 5},
        {op_kind::wait, 5},        {op_kind::sync, 6},          {op_kind::sync_device, 2},  {op_kind::copy_blocking, 2},
        {op_kind::event_sync, 2},  {op_kind::cap_begin, 6},     {op_kind::cap_end, 6},     {op_kind::cap_discard, 1},
        {op_kind::group_begin, 5}, {op_kind::group_end, 5},     {op_kind::exec, 9},        {op_kind::drop_model, 1},
        {op_kind::drop_group, 1},  {op_kind::upd_begin, 5},     {op_kind::upd_end, 5},     {op_kind::record_ext, 3},
        {op_kind::wait_ext, 3},    {op_kind::build, 3},         {op_kind::cond, 4},        {op_kind::set_value, 2},
        {op_kind::ctx_new, 2},     {op_kind::ctx_close, 1},     {op_kind::ctx_stream, 3},  {op_kind::upd_model, 3},
        {op_kind::task_disable, 3}, {op_kind::fence_new, 1},    {op_kind::fence_exec, 2},  {op_kind::fence_apply, 2},
        {op_kind::task_args, 3},   {op_kind::task_handle, 3},   {op_kind::memset, 4},      {op_kind::pool_share, 2}, {op_kind::abort_nested, 1}};
    int total = 0;
    for (const auto& w : weights) total += w.second;
    int x = pick(total);
    for (const auto& w : weights) {
      if (x < w.second) {
        o.kind = w.first;
        break;
      }
      x -= w.second;
    }
    switch (o.kind) {
      case op_kind::new_stream: o.a = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return !alive(s); })); break;
      case op_kind::drop_stream:
      case op_kind::sync:
      case op_kind::copy_blocking:
      case op_kind::launch_throw:
      case op_kind::memset:
        o.a = static_cast<std::uint8_t>(slot(n_streams, alive));
        break;
      case op_kind::launch_host:
        o.a = static_cast<std::uint8_t>(slot(n_streams, alive));
        o.b = static_cast<std::uint8_t>(chance(8));  // slow
        break;
      case op_kind::launch_kernel: {
        o.a = static_cast<std::uint8_t>(slot(n_streams, alive));
        o.b = static_cast<std::uint8_t>(pick(2));
        // During an update, mostly issue the kind the group expects next.
        const int next = ref.update_kind(o.a);
        if (next >= 0 && chance(85)) o.b = static_cast<std::uint8_t>(next);
        break;
      }
      case op_kind::new_event:
        o.a = static_cast<std::uint8_t>(pick(n_events));
        o.b = static_cast<std::uint8_t>(chance(25));  // external
        break;
      case op_kind::drop_event: o.a = static_cast<std::uint8_t>(pick(n_events)); break;
      case op_kind::event_sync:
        o.a = static_cast<std::uint8_t>(pick(n_events));
        o.b = static_cast<std::uint8_t>(chance(50));  // query
        break;
      case op_kind::record:
        o.a = static_cast<std::uint8_t>(pick(n_events));
        o.b = static_cast<std::uint8_t>(
            slot(n_streams, [&](int s) { return alive(s) && (!ref.capturing(s) || ref.event_external(o.a)); }));
        break;
      case op_kind::wait:
        o.a = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return alive(s) && !ref.capturing(s); }));
        o.b = static_cast<std::uint8_t>(pick(n_events));
        break;
      case op_kind::cap_begin:
        o.a = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return alive(s) && !ref.capturing(s); }));
        o.b = static_cast<std::uint8_t>(pick(3));
        break;
      case op_kind::record_ext:  // mostly on a capturing stream and an event it takes (elsewhere: the rule's error)
        o.a = static_cast<std::uint8_t>(slot(n_events, [&](int e) { return ref.event_external_ready(e); }));
        o.b = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return ref.capturing(s); }));
        break;
      case op_kind::wait_ext:
        o.a = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return ref.capturing(s); }));
        o.b = static_cast<std::uint8_t>(slot(n_events, [&](int e) { return ref.event_external_ready(e); }));
        break;
      case op_kind::cap_end:
        o.a = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return ref.capturing(s); }));
        o.b = static_cast<std::uint8_t>(slot(n_models, [&](int m) { return !ref.model_present(m); }));
        break;
      case op_kind::cap_discard:
      case op_kind::group_begin:
        o.a = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return ref.capturing(s); }));
        break;
      case op_kind::group_end:
        o.a = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return ref.marking(s); }));
        o.b = static_cast<std::uint8_t>(slot(n_groups, [&](int g) { return !ref.group_present(g); }));
        break;
      case op_kind::exec:
        o.a = static_cast<std::uint8_t>(slot(n_models, [&](int m) { return ref.model_present(m); }));
        o.b = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return alive(s) && !ref.capturing(s); }));
        break;
      case op_kind::drop_model: o.a = static_cast<std::uint8_t>(pick(n_models)); break;
      case op_kind::drop_group: o.a = static_cast<std::uint8_t>(pick(n_groups)); break;
      case op_kind::upd_begin:
        o.a = static_cast<std::uint8_t>(
            slot(n_streams, [&](int s) { return alive(s) && !ref.capturing(s) && !ref.updating(s); }));
        o.b = static_cast<std::uint8_t>(slot(n_groups, [&](int g) { return ref.group_present(g); }));
        break;
      case op_kind::upd_end: o.a = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return ref.updating(s); })); break;
      case op_kind::build:
        o.a = static_cast<std::uint8_t>(pick(n_models));
        o.b = static_cast<std::uint8_t>(pick(4) | (chance(70) ? 0 : pick(8)) << 2 | pick(2) << 5);
        break;
      case op_kind::cond:
        o.a = static_cast<std::uint8_t>(pick(n_models));
        o.b = static_cast<std::uint8_t>(pick(64) | (chance(80) ? 0 : 1 + pick(3)) << 6);
        o.c = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return alive(s) && !ref.capturing(s); }) |
                                        pick(4) << 2 | pick(2) << 4);
        break;
      case op_kind::set_value:
        o.a = static_cast<std::uint8_t>(slot(n_models, [&](int m) { return ref.model_present(m); }));
        o.b = static_cast<std::uint8_t>(pick(4));
        break;
      case op_kind::ctx_new: o.a = static_cast<std::uint8_t>(slot(n_contexts, [&](int c) { return !ref.context_present(c); })); break;
      case op_kind::ctx_close:
        o.a = static_cast<std::uint8_t>(slot(n_contexts, [&](int c) { return ref.context_present(c); }));
        o.b = static_cast<std::uint8_t>(chance(40));
        break;
      case op_kind::ctx_stream:
        o.a = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return !alive(s); }));
        o.b = static_cast<std::uint8_t>(slot(n_contexts, [&](int c) { return ref.context_present(c); }));
        o.c = static_cast<std::uint8_t>(chance(40));
        break;
      case op_kind::upd_model:
        o.a = static_cast<std::uint8_t>(slot(n_models, [&](int m) { return ref.model_present(m); }));
        o.b = static_cast<std::uint8_t>(slot(n_models, [&](int m) { return ref.model_present(m) && m != o.a; }));
        o.c = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return alive(s) && !ref.capturing(s); }));
        break;
      case op_kind::task_disable:
        o.a = static_cast<std::uint8_t>(slot(n_models, [&](int m) { return ref.model_present(m); }));
        o.b = static_cast<std::uint8_t>(pick(8) | (chance(10) ? 128 : 0));
        o.c = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return alive(s) && !ref.capturing(s); }));
        break;
      case op_kind::task_args:
      case op_kind::task_handle:
        o.a = static_cast<std::uint8_t>(slot(n_models, [&](int m) { return ref.model_present(m); }));
        o.b = static_cast<std::uint8_t>(pick(8) | (chance(10) ? 64 : 0) | (chance(10) ? 128 : 0));
        o.c = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return alive(s) && !ref.capturing(s); }));
        break;
      case op_kind::fence_new:
        o.a = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return alive(s) && !ref.capturing(s); }));
        o.b = static_cast<std::uint8_t>(pick(16));
        break;
      case op_kind::fence_exec:
        o.a = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return alive(s) && !ref.capturing(s); }));
        o.c = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return s != o.a && alive(s) && !ref.capturing(s); }));
        break;
      case op_kind::fence_apply:
        // Sometimes on a capturing or dead stream: refused, with what was staged kept.
        o.a = static_cast<std::uint8_t>(chance(15) ? pick(n_streams)
                                                   : slot(n_streams, [&](int s) { return alive(s) && !ref.capturing(s); }));
        o.b = static_cast<std::uint8_t>(chance(50) ? pick(2) : pick(8));
        o.c = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return s != o.a && alive(s) && !ref.capturing(s); }));
        break;
      case op_kind::pool_share: o.a = static_cast<std::uint8_t>(pick(3)); break;
      case op_kind::abort_nested: o.a = static_cast<std::uint8_t>(pick(2)); break;
      default: break;
    }
    return o;
  }

  // Built models, conditional tasks and updates in a burst: a built or conditional model executed
  // (its value changed between executions), two captures of one shape and
  // a whole-model update between them (sometimes from a source of another
  // shape: refused, the target unchanged), a task disabled, and a fenced
  // model stepped (execute, stage, apply), with the second apply() of a
  // step refused.
  template <class Push>
  void models_scenario(Push& push, const reference& ref) {
    auto th = [&] { return static_cast<std::uint8_t>(pick(threads_)); };
    auto m = [&] { return static_cast<std::uint8_t>(pick(n_models)); };
    const std::uint8_t x = usable_stream(push, ref);
    switch (pick(3)) {
      case 0: {
        const std::uint8_t slot_m = m();
        push(op{op_kind::drop_model, th(), slot_m, 0, 0});
        if (chance(50))
          push(op{op_kind::build, th(), slot_m, static_cast<std::uint8_t>(pick(4) | pick(2) << 5), 0});
        else
          push(op{op_kind::cond, th(), slot_m, static_cast<std::uint8_t>(pick(64)), 0,
                  static_cast<std::uint8_t>(x | pick(4) << 2 | pick(2) << 4)});
        for (int i = 0; i < 2 + pick(2); ++i) {
          push(op{op_kind::exec, th(), slot_m, x, 0});
          if (chance(60)) push(op{op_kind::sync, th(), x, 0, 0});
          push(op{op_kind::set_value, th(), slot_m, static_cast<std::uint8_t>(pick(4)), 0});
        }
        break;
      }
      case 1: {
        const std::uint8_t t = m(), src = static_cast<std::uint8_t>((t + 1 + pick(2)) % n_models);
        push(op{op_kind::drop_model, th(), t, 0, 0});
        push(op{op_kind::drop_model, th(), src, 0, 0});
        std::vector<std::uint8_t> kinds;
        for (int i = 0; i < 1 + pick(3); ++i) kinds.push_back(static_cast<std::uint8_t>(pick(3)));  // 2: host
        const bool other_shape = chance(25);
        for (int pass = 0; pass < 2; ++pass) {
          push(op{op_kind::cap_begin, th(), x, static_cast<std::uint8_t>(pick(3)), 0});
          for (std::size_t i = 0; i < kinds.size(); ++i) {
            std::uint8_t k = kinds[i];
            if (pass == 1 && other_shape && i == 0) k = static_cast<std::uint8_t>((k + 1) % 3);
            if (k == 2)
              push(op{op_kind::launch_host, th(), x, 0, 0});
            else
              push(op{op_kind::launch_kernel, th(), x, k, 0});
          }
          push(op{op_kind::cap_end, th(), x, pass == 0 ? t : src, 0});
        }
        push(op{op_kind::exec, th(), t, x, 0});
        if (chance(50)) push(op{op_kind::task_disable, th(), t, static_cast<std::uint8_t>(pick(4)), 0, x});
        push(op{op_kind::upd_model, th(), t, src, 0, x});
        push(op{op_kind::exec, th(), t, x, 0});
        if (chance(50)) push(op{op_kind::task_disable, th(), t, static_cast<std::uint8_t>(pick(4)), 0, x});
        if (chance(50)) push(op{op_kind::task_args, th(), t, static_cast<std::uint8_t>(pick(4)), 0, x});
        if (chance(50)) push(op{op_kind::task_handle, th(), t, static_cast<std::uint8_t>(pick(4)), 0, x});
        push(op{op_kind::exec, th(), t, x, 0});
        if (chance(30)) {  // and back: each model now runs tasks the other holds
          push(op{op_kind::upd_model, th(), src, t, 0, x});
          push(op{op_kind::exec, th(), src, x, 0});
        }
        break;
      }
      default: {
        push(op{op_kind::fence_new, th(), x, static_cast<std::uint8_t>(pick(16)), 0});
        const std::uint8_t u = usable_stream(push, ref);
        for (int step = 0; step < 2 + pick(3); ++step) {
          push(op{op_kind::fence_apply, th(), u, static_cast<std::uint8_t>(chance(60) ? 1 : pick(6)), 0, x});
          if (chance(25)) push(op{op_kind::fence_apply, th(), u, 6, 0, x});  // apply() alone: refused
          if (chance(10)) push(op{op_kind::fence_apply, th(), u, 7, 0, x});  // goes with an execution waiting
          if (chance(50)) push(op{op_kind::fence_exec, th(), x, 0, 0, u});
        }
        if (chance(50)) push(op{op_kind::sync, th(), x, 0, 0});
        break;
      }
    }
  }

  std::mt19937_64 rng_;
  int threads_;
};

// ---- shrinking ---------------------------------------------------------------------

// Delta debugging over the calls: removes chunks (halves, quarters, ... single
// calls) while the remaining sequence is still supported and still fails.
// Chunks of four calls and fewer are tried at every position, not only at
// multiples of their size: calls that only make sense together (a capture's
// begin, a group's begin and end) go in one step.
inline std::vector<op> shrink(std::vector<op> ops, int threads, int max_runs = 400) {
  auto fails = [&](const std::vector<op>& v) {
    reference ref;
    if (!simulate(v, ref, nullptr)) return false;
    return !check(v, threads).empty();
  };
  int runs = 0;
  std::size_t chunk = ops.size() / 2;
  while (chunk >= 1 && runs < max_runs) {
    bool progress = false;
    for (std::size_t start = 0; start < ops.size() && runs < max_runs;) {
      std::vector<op> candidate(ops.begin(), ops.begin() + static_cast<std::ptrdiff_t>(start));
      const std::size_t end = std::min(ops.size(), start + chunk);
      candidate.insert(candidate.end(), ops.begin() + static_cast<std::ptrdiff_t>(end), ops.end());
      ++runs;
      if (fails(candidate)) {
        ops = std::move(candidate);
        progress = true;
      } else {
        start += chunk <= 4 ? 1 : chunk;
      }
    }
    if (!progress) chunk = chunk > 4 ? std::max<std::size_t>(chunk / 2, 4) : chunk - 1;
  }
  return ops;
}

}  // namespace keel_reliability
