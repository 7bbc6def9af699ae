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
// ran, how often, in which order per executing stream, and that a wait on an
// event ran after the work recorded before it. A call whose outcome the
// documentation leaves to timing (an update committed while an execution of
// its model is still in flight, destroying a capturing stream) is declared
// unsupported by the model: the generator never emits it and the shrinker
// never keeps a sequence containing it.
//
// The reference model is written from the documentation (issue 3, the
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
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "keel/runtime.hpp"

namespace keel_reliability {

// ---- the call sequence -----------------------------------------------------

enum class op_kind : std::uint8_t {
  new_stream,     // a: stream slot (destroys what the slot held)
  drop_stream,    // a: stream slot
  new_event,      // a: event slot
  drop_event,     // a: event slot
  launch_host,    // a: stream; logs the token
  launch_kernel,  // a: stream, b: kind (0/1); logs the token
  launch_throw,   // a: stream; logs the token, then throws
  record,         // a: event, b: stream
  wait,           // a: stream, b: event
  sync,           // a: stream
  sync_device,
  copy_blocking,  // a: stream
  event_sync,     // a: event
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
  count_
};

inline const char* name_of(op_kind k) {
  static const char* const names[] = {"new_stream",  "drop_stream", "new_event",  "drop_event",    "launch_host",
                                      "launch_kernel", "launch_throw", "record",   "wait",          "sync",
                                      "sync_device", "copy_blocking", "event_sync", "cap_begin",   "cap_end",
                                      "cap_discard", "group_begin", "group_end",  "exec",          "drop_model",
                                      "drop_group",  "upd_begin",   "upd_end"};
  return names[static_cast<int>(k)];
}

constexpr int n_streams = 4, n_events = 3, n_models = 3, n_groups = 3;
constexpr std::size_t max_live_models = 3;

struct op {
  op_kind kind = op_kind::sync_device;
  std::uint8_t thread = 0;
  std::uint8_t a = 0, b = 0;
  std::uint32_t token = 0;  // unique per launch in a sequence
};

// What a call did: the keel::errc it threw (0 for none); upd_end has a
// second one, its synchronize (-1 when not performed).
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

inline std::string describe(const op& o) {
  std::string s = "t" + std::to_string(o.thread) + " " + name_of(o.kind);
  switch (o.kind) {
    case op_kind::new_stream: case op_kind::drop_stream: case op_kind::sync: case op_kind::copy_blocking:
    case op_kind::cap_discard: case op_kind::group_begin: case op_kind::upd_end:
      return s + " s" + std::to_string(o.a);
    case op_kind::new_event: case op_kind::drop_event: case op_kind::event_sync:
      return s + " e" + std::to_string(o.a);
    case op_kind::launch_host: case op_kind::launch_throw:
      return s + " s" + std::to_string(o.a) + " #" + std::to_string(o.token);
    case op_kind::launch_kernel:
      return s + " s" + std::to_string(o.a) + " k" + std::to_string(o.b) + " #" + std::to_string(o.token);
    case op_kind::record: return s + " e" + std::to_string(o.a) + " on s" + std::to_string(o.b);
    case op_kind::wait: return s + " s" + std::to_string(o.a) + " on e" + std::to_string(o.b);
    case op_kind::cap_begin:
      return s + " s" + std::to_string(o.a) + " " + std::string(keel::to_string(static_cast<keel::capture_mode>(o.b)));
    case op_kind::cap_end: return s + " s" + std::to_string(o.a) + " -> m" + std::to_string(o.b);
    case op_kind::group_end: return s + " s" + std::to_string(o.a) + " -> g" + std::to_string(o.b);
    case op_kind::exec: return s + " m" + std::to_string(o.a) + " on s" + std::to_string(o.b);
    case op_kind::drop_model: return s + " m" + std::to_string(o.a);
    case op_kind::drop_group: return s + " g" + std::to_string(o.a);
    case op_kind::upd_begin: return s + " s" + std::to_string(o.a) + " g" + std::to_string(o.b);
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
};

// ---- the reference model -----------------------------------------------------

// A deliberate defect planted in the model, so that the test proves it can
// fail (--self-test): 0 none; 1 synchronize does not clear a stream's error
// state; 2 an update's replacement is never applied; 3 thread-local capture
// mode refuses unsafe calls from every thread.
inline int& reference_mutation() {
  static int m = 0;
  return m;
}

// How often each call had each outcome in the sequences checked (--stats).
inline std::map<std::pair<int, int>, std::uint64_t>& outcome_stats() {
  static std::map<std::pair<int, int>, std::uint64_t> s;
  return s;
}

class reference {
 public:
  struct result {
    bool supported = true;
    outcome out;
  };

  // Applies one call; returns whether the documentation defines its outcome
  // deterministically, and the outcome. An unsupported call leaves the
  // model in an unspecified state (callers copy the model first).
  result apply(const op& o, std::uint64_t uid_for_new_stream) {
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
        s.uid = uid_for_new_stream;
        logs_[s.uid];
        return r;
      }
      case op_kind::drop_stream: {
        rstream& s = streams_[o.a];
        if (s.alive && (s.cap >= 0 || s.upd_group >= 0 || marks_[o.a] == 1)) return unsupported();
        if (s.alive) drop_stream(o.a);
        return r;
      }
      case op_kind::new_event: events_[o.a] = revent{true, false, 0, 0}; return r;
      case op_kind::drop_event: events_[o.a] = revent{}; return r;
      case op_kind::launch_host:
      case op_kind::launch_kernel: {
        rstream& s = streams_[o.a];
        const bool kernel = o.kind == op_kind::launch_kernel;
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
          c.nodes.push_back(node{false, o.token, -1});
          return r;
        }
        if (!s.failed) logs_[s.uid].push_back(o.token);
        return r;
      }
      case op_kind::launch_throw: {
        rstream& s = streams_[o.a];
        if (!s.alive) return err(keel::errc::invalid_handle);
        if (s.cap >= 0 || s.upd_group >= 0) return unsupported();
        if (!s.failed) {
          logs_[s.uid].push_back(o.token);
          s.failed = true;
        }
        return r;
      }
      case op_kind::record: {
        revent& e = events_[o.a];
        rstream& s = streams_[o.b];
        if (!e.alive || !s.alive) return err(keel::errc::invalid_handle);
        if (s.cap >= 0 || s.upd_group >= 0) return unsupported();
        e.recorded = true;
        e.uid = s.uid;
        e.pos = logs_[s.uid].size();
        return r;
      }
      case op_kind::wait: {
        rstream& s = streams_[o.a];
        revent& e = events_[o.b];
        if (!e.alive || !s.alive) return err(keel::errc::invalid_handle);
        if (s.cap >= 0 || s.upd_group >= 0) return unsupported();
        if (e.recorded && e.pos > 0) barriers_.push_back({e.uid, e.pos - 1, s.uid, logs_[s.uid].size()});
        return r;
      }
      case op_kind::sync: {
        rstream& s = streams_[o.a];
        if (!s.alive) return err(keel::errc::invalid_handle);
        if (s.cap >= 0 && refuses(captures_[s.cap], o.thread)) return err(keel::errc::capture_violation);
        s.pending.clear();
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
            s.pending.clear();
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
        s.pending.clear();
        return r;
      }
      case op_kind::event_sync:
        if (!events_[o.a].alive) return err(keel::errc::invalid_handle);
        return r;
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
        c.nodes.push_back(node{true, 0, g});
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
        s.pending.insert(m);
        if (!s.failed) {
          auto& log = logs_[s.uid];
          for (const node& n : model_recs_[m].nodes) {
            if (!n.group) {
              log.push_back(n.token);
              continue;
            }
            for (const task& t : groups_[n.gid].tasks) log.push_back(t.token);
          }
        }
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
        s.pending.clear();
        r.out.second = 0;
        if (s.failed) {
          s.failed = false;
          r.out.second = static_cast<int>(keel::errc::task_failed);
        }
        return r;
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
  const std::vector<barrier>& barriers() const { return barriers_; }
  int reports() const { return reports_; }

 private:
  struct task {
    std::uint32_t token;
    int kind;
  };
  struct node {
    bool group;
    std::uint32_t token;
    int gid;
  };
  struct rstream {
    bool alive = false;
    std::uint64_t uid = 0;
    bool failed = false;
    int cap = -1;        // capture record, while capturing
    int upd_group = -1;  // group record, while updating
    std::vector<task> staged;
    std::set<int> pending;  // models executed here since the stream was last drained
  };
  struct revent {
    bool alive = false;
    bool recorded = false;
    std::uint64_t uid = 0;
    std::size_t pos = 0;
  };
  struct rcapture {
    keel::capture_mode mode = keel::capture_mode::global;
    int thread = 0;
    std::vector<node> nodes;
    std::vector<int> groups;
    int open_group = -1;
  };
  struct rgroup {
    std::vector<task> tasks;
    int model = -1;  // set when its capture ends
    bool updating = false;
  };
  struct rmodel {
    std::vector<node> nodes;
    bool alive = false;
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
    streams_[i] = rstream{};
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
  revent events_[n_events];
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
  int reports_ = 0;
};

// A stream's uid is the index of the call that created it, plus one.
inline std::uint64_t uid_of_call(std::size_t i) { return i + 1; }

// Whether every call of the sequence has a defined outcome; fills the
// expected outcomes and the final model.
inline bool simulate(const std::vector<op>& ops, reference& ref, std::vector<outcome>* expected) {
  for (std::size_t i = 0; i < ops.size(); ++i) {
    auto r = ref.apply(ops[i], uid_of_call(i));
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

class runner {
 public:
  runner() : dev_(keel::host::device_options{1, max_live_models, 8}) {}

  // Issues the calls from `threads` threads, one at a time in sequence
  // order; returns the outcomes. Afterwards drains everything.
  std::vector<outcome> run(const std::vector<op>& ops, int threads) {
    current_log().store(&log_, std::memory_order_release);
    std::vector<outcome> got(ops.size());
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
        lock.lock();
        ++turn;
        cv.notify_all();
      }
    };
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(body, t);
    for (auto& th : pool) th.join();
    reports_ = handler_reports().load();
    finish();
    return got;
  }

  std::vector<log_entry> entries() {
    std::lock_guard<std::mutex> lock(log_.m);
    return log_.entries;
  }
  int reports() const { return reports_; }

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
      case op_kind::new_stream:
        r.first = code_of([&] {
          st = keel::host::stream();
          st = keel::host::stream(dev_);
          const std::uint64_t uid = uid_of_call(index);
          st.launch_host([uid] { t_stream_uid = uid; });
        });
        break;
      case op_kind::drop_stream: st.reset(); break;
      case op_kind::new_event:
        r.first = code_of([&] { events_[o.a] = keel::host::event(dev_); });
        break;
      case op_kind::drop_event: events_[o.a].reset(); break;
      case op_kind::launch_host:
        r.first = code_of([&, tok = o.token] { st.launch_host([tok] { log_task(tok); }); });
        break;
      case op_kind::launch_kernel:
        r.first = code_of([&] { st.launch(kind_of(o.b), kernel_fn{}, o.token); });
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
      case op_kind::sync: r.first = code_of([&] { st.synchronize(); }); break;
      case op_kind::sync_device: r.first = code_of([&] { keel::host::synchronize(dev_); }); break;
      case op_kind::copy_blocking:
        r.first = code_of([&] {
          std::uint64_t from = 7, to = 0;
          st.copy(&to, &from, sizeof from, keel::copy_kind::host_to_host);
          if (to != from) throw std::logic_error("blocking copy did not copy");
        });
        break;
      case op_kind::event_sync: r.first = code_of([&] { events_[o.a].synchronize(); }); break;
      case op_kind::cap_begin: {
        auto& cap = caps_[o.a];
        const auto mode = static_cast<keel::capture_mode>(o.b);
        if (cap && cap->active()) {
          r.first = code_of([&] {
            keel::host::capture_scope extra(st, mode);
            extra.discard();
          });
        } else {
          cap.reset();
          r.first = code_of([&] { cap.emplace(st, mode); });
        }
        break;
      }
      case op_kind::cap_end:
        r.first = code_of([&] { models_[o.b] = caps_[o.a]->end(); });
        break;
      case op_kind::cap_discard:
        if (caps_[o.a]) caps_[o.a]->discard();
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
      case op_kind::drop_model: models_[o.a].reset(); break;
      case op_kind::drop_group: groups_[o.a].reset(); break;
      case op_kind::upd_begin: {
        auto& upd = upds_[o.a];
        if (upd) {
          r.first = code_of([&] {
            keel::host::update_scope extra(st, groups_[o.b]);
            extra.abandon();
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
      default: break;
    }
    return r;
  }

  void finish() {
    for (auto& u : upds_)
      if (u) u->abandon();
    for (auto& g : marks_)
      if (g) code_of([&] { (void)g->end(); });
    for (auto& c : caps_)
      if (c) c->discard();
    for (auto& s : streams_)
      if (s) code_of([&] { s.synchronize(); });
  }

  keel::host::device dev_;
  // Declared after the device (destroyed before it), scopes after streams.
  keel::host::stream streams_[n_streams];
  keel::host::event events_[n_events];
  keel::host::model models_[n_models];
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
  int reports = 0;
  {
    runner run;
    got = run.run(ops, threads);
    entries = run.entries();
    reports = run.reports();
  }
  keel::set_error_handler(previous);
  std::string diff;
  for (std::size_t i = 0; i < ops.size(); ++i) ++outcome_stats()[{static_cast<int>(ops[i].kind), got[i].first}];
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (got[i] != expected[i]) {
      diff += "call " + std::to_string(i) + " (" + describe(ops[i]) + "): expected " + errc_name(expected[i].first) +
              (expected[i].second >= 0 ? "/" + errc_name(expected[i].second) : "") + ", got " +
              errc_name(got[i].first) + (got[i].second >= 0 ? "/" + errc_name(got[i].second) : "") + "\n";
      return diff;  // later calls depend on this one
    }
  // Per-stream logs, and the position of every entry in the global order.
  std::map<std::uint64_t, std::vector<std::uint32_t>> actual;
  std::map<std::uint64_t, std::vector<std::size_t>> seq;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    actual[entries[i].uid].push_back(entries[i].token);
    seq[entries[i].uid].push_back(i);
  }
  auto render = [](const std::vector<std::uint32_t>& v) {
    std::string s;
    for (auto t : v) s += " #" + std::to_string(t);
    return s.empty() ? std::string(" (none)") : s;
  };
  for (const auto& [uid, want] : ref.logs()) {
    const auto it = actual.find(uid);
    const std::vector<std::uint32_t> have = it == actual.end() ? std::vector<std::uint32_t>{} : it->second;
    if (have != want)
      diff += "stream made by call " + std::to_string(uid - 1) + " ran" + render(have) + "; expected" + render(want) +
              "\n";
  }
  for (const auto& [uid, have] : actual)
    if (!ref.logs().count(uid)) diff += "tasks ran on an unknown stream (uid " + std::to_string(uid) + ")" + render(have) + "\n";
  if (!diff.empty()) return diff;
  for (const barrier& b : ref.barriers()) {
    const auto& before = seq[b.before_uid];
    const auto& after = seq[b.after_uid];
    if (b.before_index < before.size() && b.after_index < after.size() &&
        before[b.before_index] > after[b.after_index])
      diff += "a wait did not order stream " + std::to_string(b.after_uid - 1) + "'s task " +
              std::to_string(b.after_index) + " after stream " + std::to_string(b.before_uid - 1) + "'s task " +
              std::to_string(b.before_index) + "\n";
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
      ref.apply(o, uid_of_call(ops.size()));
      ops.push_back(o);
    }
    auto push = [&](op o) {
      if (ops.size() >= length) return;
      o.token = static_cast<std::uint32_t>(ops.size() + 1);
      reference trial = ref;
      if (!trial.apply(o, uid_of_call(ops.size())).supported) return;
      ref = std::move(trial);
      ops.push_back(o);
    };
    while (ops.size() < length) {
      if (chance(6)) {
        scenario(push);
        continue;
      }
      for (int attempt = 0; attempt < 50; ++attempt) {
        op o = propose(ref, static_cast<std::uint32_t>(ops.size() + 1));
        reference trial = ref;
        if (!trial.apply(o, uid_of_call(ops.size())).supported) continue;
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
  void scenario(Push& push) {
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
        {op_kind::drop_group, 1},  {op_kind::upd_begin, 5},     {op_kind::upd_end, 5}};
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
      case op_kind::launch_host:
      case op_kind::launch_throw:
        o.a = static_cast<std::uint8_t>(slot(n_streams, alive));
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
      case op_kind::drop_event:
      case op_kind::event_sync: o.a = static_cast<std::uint8_t>(pick(n_events)); break;
      case op_kind::record:
        o.a = static_cast<std::uint8_t>(pick(n_events));
        o.b = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return alive(s) && !ref.capturing(s); }));
        break;
      case op_kind::wait:
        o.a = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return alive(s) && !ref.capturing(s); }));
        o.b = static_cast<std::uint8_t>(pick(n_events));
        break;
      case op_kind::cap_begin:
        o.a = static_cast<std::uint8_t>(slot(n_streams, [&](int s) { return alive(s) && !ref.capturing(s); }));
        o.b = static_cast<std::uint8_t>(pick(3));
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
      default: break;
    }
    return o;
  }

  std::mt19937_64 rng_;
  int threads_;
};

// ---- shrinking ---------------------------------------------------------------------

// Delta debugging over the calls: removes chunks (halves, quarters, ... single
// calls) while the remaining sequence is still supported and still fails.
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
        start += chunk;
      }
    }
    if (!progress) chunk /= 2;
  }
  return ops;
}

}  // namespace keel_reliability
