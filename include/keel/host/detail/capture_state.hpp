// SPDX-License-Identifier: Apache-2.0
// The host backend's capture and model records: a capture appends the work
// its streams issue to one list, in issue order (a topological order of the
// recorded dependencies); a model replays that list in one tight loop.
#pragma once

#include <atomic>
#include <cstdint>
#include <algorithm>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "keel/host/detail/external_ops.hpp"
#include "keel/host/detail/group_state.hpp"
#include "keel/host/detail/spin.hpp"
#include "keel/host/detail/task.hpp"
#include "keel/host/detail/task_records.hpp"
#include "keel/host/device.hpp"
#include "keel/core/biased_lock.hpp"
#include "keel/core/test_and_set_lock.hpp"
#include "keel/runtime/checked/books.hpp"
#include "keel/runtime/checked/condition_books.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

struct stream_state;

/// @cond
// Where a capturing stream's work goes: the capture's nodes, or the task
// group one of its streams marks. Used under the device books' lock.
struct capture_target : ref_counted {
  std::vector<replay_task> nodes;
  std::vector<ref_ptr<group_state>> groups;
  std::vector<task_record> records;  // introspection: every task issued, in issue order
  ref_ptr<group_state> open_group;
  const stream_state* group_stream = nullptr;
  std::vector<std::shared_ptr<void>> owned;  // what the model owns beyond its tasks (conditions)
  std::vector<ref_ptr<external_slot>> externals;  // its external records and waits (external_ops.hpp)
};

// A model's captured replay nodes, apart from the model: what another
// model's table keeps when it runs them (a whole-model or per-task update
// from this model). Each node's closure holds what it needs (its task
// group, condition, external slot, buffers); the store holds the device
// they run on and nothing else, in particular no table and no model, so
// models updated from each other (in any cycle) never keep each other
// alive. Counted: the model and every table running its nodes hold it.
struct node_store : ref_counted {
  explicit node_store(device_state& d) : dev(&d) { d.retain(); }
  ~node_store() { device_state::drop(dev); }
  node_store(const node_store&) = delete;
  node_store& operator=(const node_store&) = delete;
  device_state* dev;
  std::vector<replay_task> nodes;
  bool holds(const replay_task* t) const noexcept {
    return !nodes.empty() && t >= nodes.data() && t < nodes.data() + nodes.size();
  }
};

template <class T>
class reuse_bin;

// A task a committed update runs for one node: its own (a rebuilt kernel,
// a copy) or another model's, kept by what it lives in: that model's node
// store, or (for a replacement that model's update made) `via`, which is
// always a replacement with its own task, so chains never grow. Counted: a
// commit rebuilds a kernel into one that no table holds any more.
struct replacement_task : ref_counted {
  // Called by ref_ptr when the last reference goes: what it runs and keeps
  // (the kernel and its arguments' owners, a store) goes now, and the empty
  // shell goes back to its model's bin for the next commit, else is freed.
  static void recycle(replacement_task* t) noexcept;
  std::optional<replay_task> own;
  const replay_task* runs = nullptr;  // &*own, or the other model's task
  kernel_rebind rebuilt_by = nullptr;  // own is a kernel that rebuild made (its record's kernel_assign fits it)
  ref_ptr<node_store> store;
  ref_ptr<replacement_task> via;
  ref_ptr<reuse_bin<replacement_task>> bin;  // where its shell goes back to (null: freed)
};

struct node_table;

// Where a model's superseded tables (and the shells of its replaced
// kernels) wait to be reused: an object whose last holder lets go (often a
// stream worker, once the execution that ran it ends) comes back here
// instead of being freed, and the model's next commit takes it instead of
// allocating. A runner that updates a model and executes it in turn on one
// stream, issuing steps ahead of the stream, has as many tables alive as
// steps queued; with room for them all, its commits allocate nothing and
// the worker frees nothing (BM_kernel_task_update_executing against
// BM_model_execute_steps measures what that buys). Keeps at most
// `capacity` objects, the most a pipeline of that depth has alive; the
// model closes it when it goes (an object let go later is freed).
// Counted: the model and every object it made.
template <class T>
class reuse_bin : public ref_counted {
 public:
  static constexpr std::size_t capacity = 256;
  reuse_bin() { kept_.reserve(capacity); }  // so that keeping one never allocates
  // Keeps @p t (counted 0) unless closed or full: false, the caller frees it.
  bool keep(T* t) noexcept {
    std::lock_guard<keel::detail::test_and_set_lock> lock(m_);
    if (closed_ || kept_.size() == capacity) return false;
    kept_.push_back(t);  // within the reserved capacity
    return true;
  }
  // A kept object, counted 0 (the taker revives it), or null.
  T* take() noexcept {
    std::lock_guard<keel::detail::test_and_set_lock> lock(m_);
    if (kept_.empty()) return nullptr;
    T* t = kept_.back();
    kept_.pop_back();
    return t;
  }
  // Keeps nothing from now on and frees what it kept.
  void close() noexcept {
    std::vector<T*> kept;
    {
      std::lock_guard<keel::detail::test_and_set_lock> lock(m_);
      closed_ = true;
      kept.swap(kept_);
    }
    for (T* t : kept) delete t;
  }

 private:
  // A few instructions under it, taken by the committing thread and a
  // worker letting go: a mutex's sleep and wake-up cost more than that.
  keel::detail::test_and_set_lock m_;
  std::vector<T*> kept_;
  bool closed_ = false;
};
using table_bin = reuse_bin<node_table>;
using replacement_bin = reuse_bin<replacement_task>;

inline void replacement_task::recycle(replacement_task* t) noexcept {
  if (t->bin) {
    ref_ptr<replacement_bin> bin = std::move(t->bin);
    t->own.reset();
    t->runs = nullptr;
    t->rebuilt_by = nullptr;
    t->store = ref_ptr<node_store>();
    t->via = ref_ptr<replacement_task>();
    if (bin->keep(t)) return;  // the shell keeps no count of the bin: the model's own keeps it open
  }
  delete t;
}

// What an updated model's executions run (keel/host/model_update.hpp): one
// entry per replay node, the original node, a replacement, or null for a
// disabled task. `owned` holds the replacements it runs (shared with the
// tables that follow it), `stores` the node stores whose nodes it runs (its
// model's, and a whole-model update's source's and what the source ran;
// each once). A table never holds a model or another table. Counted: an
// execution holds the table it started with, and a commit reuses a
// superseded table (its vectors' storage) once nobody else holds it.
struct node_table : ref_counted {
  // Called by ref_ptr when the last reference goes: back to the model's
  // bin when it has one that is open and not full, else freed. What the
  // table keeps alive (replacements, node stores) goes now, as it would
  // with the table.
  static void recycle(node_table* t) noexcept {
    if (t->bin) {
      t->owned.clear();
      t->stores.clear();
      t->changed.clear();
      if (t->bin->keep(t)) return;
    }
    delete t;
  }
  ref_ptr<table_bin> bin;  // where it goes back to (null: freed)
  std::vector<const replay_task*> order;
  std::vector<const replay_task*> base;  // what each node runs when enabled (order has null for a disabled one)
  std::uint64_t version = 0;             // later commits have higher versions
  std::vector<std::pair<std::uint32_t, ref_ptr<replacement_task>>> owned;  // by node index
  std::vector<ref_ptr<node_store>> stores;
  // The owned entry of node @p node, or owned.end().
  auto owned_at(std::uint32_t node) noexcept {
    return std::find_if(owned.begin(), owned.end(), [node](const auto& o) { return o.first == node; });
  }
  auto owned_at(std::uint32_t node) const noexcept {
    return std::find_if(owned.begin(), owned.end(), [node](const auto& o) { return o.first == node; });
  }
  // A per-task commit's table is the one before it with the entries of
  // `changed` (node indices) set: the next commit that reuses that earlier
  // table patches these alone. `whole`: built otherwise (copy it all).
  std::vector<std::uint32_t> changed;
  bool whole = true;
};

// One change a per-task update stages: a replacement task for node `node`
// (null: the task is disabled) and what introspection reports for it. The
// model keeps its entries between updates (`staged_count` are in use), so
// their argument vectors' storage is reused.
struct staged_change {
  std::size_t task = 0;  // index into the model's task_list
  std::uint32_t node = 0;  // the task's replay node (kept here: a commit reads it without the record lookups)
  bool disable = false;  // the change disables the task (no replacement)
  ref_ptr<replacement_task> replacement;  // the commit moves it into its table
  // Or (replacement null) the spare table's own replacement for the node,
  // rebuilt in place and held by that table alone: the commit reuses the
  // spare, so no count changes hands. Only while at most
  // model_state::in_place_limit changes are staged (patching the spare then
  // skips every staged node; a fifth change makes these owning).
  replacement_task* in_place = nullptr;
  replacement_task& runs() const noexcept { return in_place != nullptr ? *in_place : *replacement; }
  std::vector<kernel_argument> arguments;  // a kernel's new arguments
  copy_params copy;                        // a copy's new parameters
  // A task that takes another model's task (stage_from): its argument types go with it.
  bool retyped = false;
  const void* signature = nullptr;
  kernel_rebind rebind = nullptr;
  kernel_assign assign = nullptr;
};

struct model_state;

// The executions running on this thread, innermost first: a conditional's
// bodies and a model executed inside another run nested in their parent's
// execution, on its thread, so an abort of any enclosing execution reaches
// them (a WHILE body draws a ticket of its own on each run; its loop's
// ticket is its parent's). Set by model_state::run for its duration.
struct execution_frame {
  const model_state* model;
  std::uint64_t ticket;
  const execution_frame* outer;
  static const execution_frame*& current() noexcept {
    thread_local const execution_frame* innermost = nullptr;
    return innermost;
  }
  // The innermost frame aborted here or around it, or null: one relaxed
  // load per enclosing execution (a top-level one has none).
  inline const execution_frame* aborted() const noexcept;
  // Makes @p f the thread's innermost execution until it ends.
  class scope {
   public:
    explicit scope(execution_frame& f) noexcept : saved_(current()) {
      f.outer = saved_;
      current() = &f;
    }
    ~scope() { current() = saved_; }
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;

   private:
    const execution_frame* saved_;
  };
};

struct model_state : ref_counted {
  // @p s holds the model's replay nodes (made first, so that a capture
  // moves its nodes in only once nothing else can throw).
  model_state(device_state& d, ref_ptr<node_store> s, std::vector<ref_ptr<group_state>> g)
      : dev(&d), store(std::move(s)), groups(std::move(g)) {
    d.retain();
  }
  ~model_state() {
    if (bin) bin->close();  // tables let go from now on are freed
    if (replacements) replacements->close();
    device_state::drop(dev);
  }
  model_state(const model_state&) = delete;
  model_state& operator=(const model_state&) = delete;
  static ref_ptr<node_store> new_store(device_state& d) {
    return ref_ptr<node_store>(new node_store(d), ref_ptr<node_store>::adopt_tag{});
  }
  device_state* dev;
  ref_ptr<node_store> store;  // never null
  std::vector<replay_task>& nodes() noexcept { return store->nodes; }
  const std::vector<replay_task>& nodes() const noexcept { return store->nodes; }
  std::vector<ref_ptr<group_state>> groups;
  checked::model_books books;  // the checked layer's: the counts capture kept, the model's life
  std::shared_ptr<void> built;  // a built model's build (keel/host/built_model.hpp); null for a captured one
  std::vector<std::shared_ptr<void>> owned;  // what its capture made beyond tasks (conditions, keel/host/conditional.hpp)
  // Its external records and waits: each execution takes their points when issued (external_ops.hpp).
  std::vector<ref_ptr<external_slot>> externals;
  // A conditional body (keel/host/conditional.hpp): the checked layer's books
  // of its parent capture; null for any other model.
  std::unique_ptr<checked::body_books<stream_state*>> body;
  // Introspection and lifetime (keel/host/introspection.hpp): the tasks as
  // captured, the name, the destroy callbacks, and the abort mark: an
  // execution whose ticket is below `abort_below` stops at its next task.
  std::vector<task_record> records;
  // Guards name, destroy_callbacks, and the introspection lists against a
  // commit rewriting them. Not a mutex: a per-task commit takes it once, and
  // a mutex's lock and unlock cost more than its section there (the longest
  // holder, tasks(), copies the list and yields to no one but a waiter,
  // which spins briefly, then yields). Self-biased (keel/core/biased_lock.hpp),
  // as are the update claim's and the table's locks below: a runner's
  // thread that commits per-task updates in a streak enters all three with
  // plain stores, where three locked instructions would be most of a
  // commit's time; a reader on another thread breaks in with one
  // membarrier(), which ends the ownership.
  keel::detail::self_biased_lock meta_m;
  std::string name;
  std::vector<std::pair<void (*)(void*), void*>> destroy_callbacks;
  std::atomic<std::uint64_t> executions{0};
  std::atomic<std::uint64_t> abort_below{0};
  static constexpr std::uint64_t ticket_at_run = ~std::uint64_t{0};  // a nested execution draws at run time
  // What introspection hands out, built once at capture end from the records
  // (a committed update changes task_list and records under meta_m; only a
  // commit writes them after capture, and a commit needs the update claim,
  // so the claim holder reads them without the lock);
  // task_records[i] is the record of task_list[i].
  std::vector<model_stream> stream_list;
  std::vector<task_info> task_list;
  std::vector<std::uint32_t> task_records;
  void index_tasks() {
    stream_list = build_streams(records);
    task_list = build_tasks(records);
    task_records = build_order(records, stream_list);
    shape.clear();
  }
  // What a whole-model update requires two models to share, packed into
  // words (keel/host/model_update.hpp, same_shape): made on the first
  // update that reads it, under meta_m (empty until then), and forgotten
  // when the records change beyond parameters (a build's end, an update
  // that gave a kernel task another view of its kind's name).
  std::vector<std::uint64_t> shape;
  bool shape_updatable = false;  // no task a whole-model update refuses (a conditional, ...)
  // Per-task and whole-model updates (keel/host/model_update.hpp): one
  // updater at a time (`update_claimed`), its staged changes (claim holder
  // only: the first `staged_count` entries), and the table executions run
  // once an update committed (`has_table`; swapped under `table_m`).
  std::atomic<bool> update_claimed{false};  // tested and set in a section of claim_m, cleared by the holder
  keel::detail::self_biased_lock claim_m;
  std::vector<staged_change> staged;
  std::size_t staged_count = 0;
  static constexpr std::size_t in_place_limit = 4;
  std::atomic<bool> has_table{false};
  keel::detail::self_biased_lock table_m;
  ref_ptr<node_table> table;
  // The last table committed (claim holder only), counted by `table` once
  // swapped in, by `latest_pending` while its swap is queued (publish()).
  node_table* latest = nullptr;
  ref_ptr<node_table> latest_pending;
  ref_ptr<node_table> spare;   // the table latest superseded, reused once no one holds it (claim holder only)
  ref_ptr<table_bin> bin;      // tables let go, for the next commits (made by the first; claim holder only)
  ref_ptr<replacement_bin> replacements;  // replaced kernels' shells, likewise
  std::uint64_t table_versions = 0;  // claim holder only
  ref_ptr<node_table> current_table() {
    keel::detail::self_biased_section section(table_m);
    return table;
  }
  // The record index of each task as task_list orders them (by stream, in stream order).
  static std::vector<std::uint32_t> build_order(const std::vector<task_record>& records,
                                                const std::vector<model_stream>& streams) {
    std::vector<std::size_t> next(streams.size(), 0);
    for (std::size_t k = 1; k < streams.size(); ++k) next[k] = next[k - 1] + streams[k - 1].task_count;
    std::vector<std::uint32_t> order(records.size());
    for (std::size_t i = 0; i < records.size(); ++i) {
      std::size_t k = 0;
      while (streams[k].id != records[i].stream_id) ++k;
      order[next[k]++] = static_cast<std::uint32_t>(i);
    }
    return order;
  }
  // The streams in the order they first issued a task of the model.
  static std::vector<model_stream> build_streams(const std::vector<task_record>& records) {
    std::vector<model_stream> streams;
    for (const task_record& r : records) {
      auto it = std::find_if(streams.begin(), streams.end(), [&](const model_stream& s) { return s.id == r.stream_id; });
      if (it == streams.end()) {
        streams.push_back(model_stream{r.stream_id, streams.size(), 0});
        it = streams.end() - 1;
      }
      ++it->task_count;
    }
    return streams;
  }

  // Per stream in stream order, streams as model_streams lists them. A task
  // group's kernels report no arguments: updates replace them.
  static std::vector<task_info> build_tasks(const std::vector<task_record>& records) {
    std::vector<task_info> tasks(records.size());
    std::uint64_t ids[8];
    std::uint32_t next_sequence[8];
    std::vector<std::uint64_t> more_ids;  // past eight streams
    std::vector<std::uint32_t> more_sequences;
    std::size_t stream_count = 0;
    // Pass one: each record's stream index and sequence id.
    for (std::size_t i = 0; i < records.size(); ++i) {
      const task_record& r = records[i];
      std::size_t index = 0;
      while (index < stream_count && (index < 8 ? ids[index] : more_ids[index - 8]) != r.stream_id) ++index;
      if (index == stream_count) {
        if (index < 8) {
          ids[index] = r.stream_id;
          next_sequence[index] = 0;
        } else {
          more_ids.push_back(r.stream_id);
          more_sequences.push_back(0);
        }
        ++stream_count;
      }
      std::uint32_t& seq = index < 8 ? next_sequence[index] : more_sequences[index - 8];
      task_info& t = tasks[i];
      t.type = r.type;
      t.stream = index;
      t.sequence = seq++;
      t.group = r.group != nullptr ? r.group->books.id : 0;
      fill_task_parameters(t, r);
    }
    if (stream_count > 1) {
      // Stable by stream: each stream's tasks in its own order.
      std::stable_sort(tasks.begin(), tasks.end(), [](const task_info& a, const task_info& b) { return a.stream < b.stream; });
    }
    return tasks;
  }


  // The replay loop: the recorded work runs right here, on the executing
  // stream's worker, one indirect call per task. After a task throws (or
  // when the stream is already in its error state: work == false) the rest
  // of the work is skipped but event operations still run, so a stream
  // waiting on an event this model records never hangs; the first failure
  // is rethrown at the end.
  //
  // An abort of this execution or of one around it (execution_frame) stops
  // it before its next task, and one that came while its last task ran
  // fails it at its end: an execution aborted before it ended reports
  // task_failed, so a WHILE loop whose body was aborted ends too.
  // Whether an execution runs no task: nothing captured, and no update
  // committed a table of its own.
  bool runs_nothing() const noexcept {
    return store->nodes.empty() && !has_table.load(std::memory_order_acquire);
  }
  void run(bool work = true, std::uint64_t ticket = ticket_at_run) {
    if (ticket == ticket_at_run) ticket = executions.fetch_add(1, std::memory_order_relaxed);
    execution_frame frame{this, ticket, nullptr};
    const execution_frame::scope running(frame);
    if (has_table.load(std::memory_order_acquire)) {
      // An update committed: run the table current now (held for the whole
      // execution, so a later commit never changes a running one).
      const ref_ptr<node_table> t = current_table();
      return replay(t->order, work, frame, [](const replay_task* p) { return p; });
    }
    replay(store->nodes, work, frame, [](const replay_task& t) { return &t; });
  }
  template <class List, class Task>
  void replay(const List& list, bool work, const execution_frame& frame, Task task_of) {
    std::exception_ptr failure;
    // This execution's own mark is tested with its ticket in a register (one
    // load per task, as before frames existed); the enclosing executions'
    // chain is walked only for a nested execution. BM_model_replay_tiny
    // measures the per-task cost.
    const std::uint64_t ticket = frame.ticket;
    const execution_frame* const outer = frame.outer;
    const auto aborted_here = [&] {
      return ticket < abort_below.load(std::memory_order_relaxed) || (outer != nullptr && outer->aborted() != nullptr);
    };
    for (const auto& entry : list) {
      const replay_task* p = task_of(entry);
      if (p == nullptr) continue;  // disabled
      const replay_task& t = *p;
      if (work && aborted_here()) stop_if_aborted(frame, work, failure);
      run_replay_task(t, work, failure);
    }
    if (work && aborted_here()) stop_if_aborted(frame, work, failure);
    if (failure) std::rethrow_exception(failure);
  }
  static void stop_if_aborted(const execution_frame& frame, bool& work, std::exception_ptr& failure) {
    if (const execution_frame* hit = frame.aborted()) {
      failure = hit->model->aborted();
      work = false;
    }
  }
  std::exception_ptr aborted() const {
    try {
      ::keel::detail::throw_composed(errc::task_failed, "keel::model::abort",
                                     {"model #", books.id, "'s execution was aborted; its remaining work was skipped"});
    } catch (...) {
      return std::current_exception();
    }
  }
};

inline const execution_frame* execution_frame::aborted() const noexcept {
  for (const execution_frame* f = this; f != nullptr; f = f->outer)
    if (f->ticket < f->model->abort_below.load(std::memory_order_relaxed)) return f;
  return nullptr;
}

// Whether the calling thread runs an execution that was aborted, or one
// inside such: a failure-aware task that is work, not an event operation (a
// host callback of the ACL emulation), skips itself there, as an abort
// skips every task but event operations.
inline bool running_aborted() noexcept {
  const execution_frame* f = execution_frame::current();
  return f != nullptr && f->aborted() != nullptr;
}
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
