// SPDX-License-Identifier: Apache-2.0
// The host backend's native per-task and whole-model update calls: staged
// changes become a new node table (keel/host/detail/capture_state.hpp) that
// the model's executions run once the update stream reaches the commit; an
// execution holds the table it started with, so a commit never changes a
// running execution. The checked layer (keel/runtime/checked/model_update.hpp)
// decides what may be staged and whether two models match.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/host/capture.hpp"
#include "keel/host/detail/handles.hpp"
#include "keel/runtime/model_tasks.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
struct model_update_calls : native_types {
  // One updater per model: the claim is tested and set in one section of
  // claim_m (the claiming thread that updates in a streak enters it with
  // plain stores: no compare-exchange).
  static bool try_claim_model(model_handle m) noexcept {
    keel::detail::self_biased_section section(m->claim_m);
    if (m->update_claimed.load(std::memory_order_acquire)) return false;
    m->update_claimed.store(true, std::memory_order_relaxed);
    return true;
  }
  // Drops what was staged (the entries stay for the next update's reuse).
  KEEL_ALWAYS_INLINE static void end_model_claim(model_handle m) noexcept {
    for (std::size_t i = 0; i < m->staged_count; ++i) {
      staged_change& c = m->staged[i];
      if (c.replacement) c.replacement = ref_ptr<replacement_task>();  // most often moved out (or rebuilt in place)
      c.in_place = nullptr;
    }
    m->staged_count = 0;
    m->update_claimed.store(false, std::memory_order_release);
  }

  // The task @p t names (its stream and sequence id) and its index in the
  // model's task list; null when the model has no such task. Called by the
  // claim holder: no lock, no copy (only a commit, which needs the claim,
  // writes the list after capture; see model_state).
  static const task_info* claimed_task_index(model_handle m, const task_info& t, std::size_t& index) noexcept {
    if (t.stream >= m->stream_list.size() || t.sequence >= m->stream_list[t.stream].task_count) return nullptr;
    std::size_t at = t.sequence;
    for (std::size_t k = 0; k < t.stream; ++k) at += m->stream_list[k].task_count;
    index = at;
    return &m->task_list[at];
  }
  // The same for a model whose claim the caller does not hold (the source
  // of set_from): a copy, taken under the introspection lock.
  static bool task_index(model_handle m, const task_info& t, std::size_t& index, task_info& found) {
    std::lock_guard lock(m->meta_m);
    const task_info* at = claimed_task_index(m, t, index);
    if (at == nullptr) return false;
    found = *at;
    return true;
  }
  // Whether the task has a replay node an update can replace, and for a
  // kernel the identity of its argument types (null: it cannot be rebuilt).
  static bool task_has_node(model_handle m, std::size_t index) noexcept {
    return record_of(m, index).node != task_record::no_node;
  }
  static const void* kernel_signature(model_handle m, std::size_t index) noexcept {
    const task_record& r = record_of(m, index);
    return r.rebind != nullptr ? r.signature : nullptr;
  }
  static std::size_t staged_changes(model_handle m) noexcept { return m->staged_count; }

  // A kernel rebuilt with new arguments (behind @p args, a std::tuple of the
  // recorded types: the checked layer compared the signatures).
  static void stage_kernel(model_handle m, std::size_t index, const void* args,
                           keel::detail::arguments_describer describe_args, std::size_t count) {
    const task_record& r = record_of(m, index);
    replacement_task* in_place = m->staged_count < model_state::in_place_limit ? reusable_in_place(m, r.node) : nullptr;
    ref_ptr<replacement_task> replacement;
    if (in_place == nullptr) replacement = new_replacement(m);
    replacement_task& into = in_place != nullptr ? *in_place : *replacement;
    r.rebind(base_task(m, r.node), args, into.own);  // assigned in place when reused: no allocation
    into.runs = &*into.own;
    into.rebuilt_by = r.rebind;
    bool fresh = false;
    staged_change& c = entry_for(m, index, fresh);
    c.arguments.resize(count);  // reuses the entry's storage; strong when it grows
    describe_args(args, c.arguments.data());
    c.replacement = std::move(replacement);
    c.in_place = in_place;
    c.disable = false;
    c.copy = copy_params{};
    c.retyped = false;
    taken(m, fresh);
  }
  static void stage_copy(model_handle m, std::size_t index, void* dst, const void* src, std::size_t bytes,
                         copy_kind kind, std::shared_ptr<void> keep_dst, std::shared_ptr<void> keep_src) {
    ref_ptr<replacement_task> replacement = new_replacement(m);
    replacement->own.emplace(stream_calls::copy_task(dst, src, bytes, std::move(keep_dst), std::move(keep_src)),
                             replay_task::category::copy);
    replacement->runs = &*replacement->own;
    bool fresh = false;
    staged_change& c = entry_for(m, index, fresh);
    c.replacement = std::move(replacement);
    c.in_place = nullptr;
    c.disable = false;
    c.arguments.clear();
    c.copy = copy_params{dst, src, bytes, kind};
    c.retyped = false;
    taken(m, fresh);
  }
  // Task @p index runs @p source's task @p source_index, with its
  // parameters (CANN's aclmdlRITaskSetParams with the parameters
  // aclmdlRITaskGetParams gave for another model's task).
  static void stage_from(model_handle m, std::size_t index, model_handle source, std::size_t source_index) {
    const ref_ptr<node_table> from = source->current_table();
    std::lock_guard lock(source->meta_m);
    const task_record& r = record_of(source, source_index);
    ref_ptr<replacement_task> replacement = new_replacement(m);
    if (from) {
      // What the source runs there: a replacement of its own update, or a
      // node of a store its table holds (its own, or its sources').
      replacement->runs = from->base[r.node];
      auto o = from->owned_at(r.node);
      if (o != from->owned.end()) {
        replacement->via = o->second->own ? o->second : o->second->via;
        replacement->store = o->second->store;
      } else {
        for (const ref_ptr<node_store>& st : from->stores)
          if (st->holds(replacement->runs)) replacement->store = st;
      }
    } else {
      replacement->runs = &source->nodes()[r.node];
      replacement->store = source->store;
    }
    bool fresh = false;
    staged_change& c = entry_for(m, index, fresh);
    c.arguments.assign(r.arguments.begin(), r.arguments.end());  // strong when it grows
    c.replacement = std::move(replacement);
    c.in_place = nullptr;
    c.disable = false;
    c.copy = r.copy;
    c.retyped = true;
    c.signature = r.signature;
    c.rebind = r.rebind;
    c.assign = r.assign;
    taken(m, fresh);
  }
  static void stage_disable(model_handle m, std::size_t index) {
    bool fresh = false;
    staged_change& c = entry_for(m, index, fresh);
    c.replacement = ref_ptr<replacement_task>();
    c.in_place = nullptr;
    c.disable = true;
    c.arguments.clear();
    c.copy = m->task_list[index].copy;  // reported as it was
    c.retyped = false;
    taken(m, fresh);
  }

  // A prepared kernel task's update (basic_kernel_task::update) written
  // straight into the replacement that executions would run at its node,
  // when no one can see the write: nothing is staged, the update stream is
  // idle (or none), the last commit's table is the one executions take
  // (its swap is not queued) and no execution holds it (tested in table_m's
  // section, which an execution takes its table in), and that table alone
  // holds the replacement, a kernel of the record's type. Executions issued
  // from now on run the new arguments and none running sees them, as a new
  // table would give; introspection reports them. False: any of that does
  // not hold, nothing was written (the caller stages and commits). The
  // caller holds the claim and checked the task and the argument types.
  static bool update_kernel_in_place(model_handle m, std::size_t index, const void* args,
                                     keel::detail::arguments_describer describe_args, std::size_t count,
                                     stream_handle s) noexcept {
    node_table* const latest = m->latest;
    if (latest == nullptr || m->latest_pending || m->staged_count != 0 || (s != nullptr && !s->idle())) return false;
    task_record& r = m->records[m->task_records[index]];
    if (r.disabled || r.assign == nullptr || r.arguments.size() != count) return false;
    const auto entry = latest->owned_at(r.node);
    if (entry == latest->owned.end()) return false;
    replacement_task* const replacement = entry->second.get();
    if (!replacement->own || replacement->rebuilt_by != r.rebind || !replacement->sole_reference()) return false;
    {
      keel::detail::self_biased_section section(m->table_m);
      if (m->table.get() != latest || !latest->sole_reference()) return false;
      r.assign(*replacement->own, args);
    }
    keel::detail::self_biased_section lock(m->meta_m);
    describe_args(args, r.arguments.data());
    return true;
  }

  // Commits the staged changes in @p s's order (null: now) and ends the claim (also when it throws).
  static void commit_task_update(model_handle m, stream_handle s) {
    struct finish {
      model_handle m;
      ~finish() { end_model_claim(m); }
    } done{m};
    ref_ptr<node_table> t = m->staged_count == 1 ? spare_for_one_in_place(m) : ref_ptr<node_table>();
    if (!t) t = table_for_staged(m);
    t->whole = false;
    publish(m, s, std::move(t));
    // What introspection reports: the staged descriptions move in (nothing below throws).
    keel::detail::self_biased_section lock(m->meta_m);
    for (std::size_t i = 0; i < m->staged_count; ++i) {
      staged_change& c = m->staged[i];
      task_record& r = m->records[m->task_records[c.task]];
      task_info& info = m->task_list[c.task];
      r.disabled = info.disabled = c.disable;
      if (c.disable) continue;
      if (c.retyped) {
        r.signature = c.signature;
        r.rebind = c.rebind;
        r.assign = c.assign;
      }
      if (info.type == task_type::kernel) {
        // Read before the swap: reading the swapped vector back would load
        // what its 16-byte stores just wrote, which stalls on forwarding.
        const kernel_argument* const data = c.arguments.data();
        const std::size_t count = c.arguments.size();
        r.arguments.swap(c.arguments);
        info.kernel.arguments = data;
        info.kernel.argument_count = count;
      }
      if (info.type == task_type::copy) r.copy = info.copy = c.copy;
    }
  }

  // Calls fn(target streams, target tasks, source streams, source tasks)
  // with both models' introspection locked (no copies: the lists of a
  // 1,000-task model are larger than malloc's mmap threshold).
  template <class F>
  static void with_task_lists(model_handle target, model_handle source, F&& fn) {
    std::scoped_lock locks(target->meta_m, source->meta_m);
    fn(target->stream_list, target->task_list, source->stream_list, source->task_list);
  }

  // Whether both models have one shape: the same tasks in the same issue
  // order on the same streams (by first use), each of the same type, in a
  // task group or not, on an external event or not, at the same replay
  // node, a kernel of the same kind by the same view of its name, and the
  // same replay nodes; and neither holds a task a whole-model update
  // refuses. True is what check_lists and interleaving_mismatch would
  // find, in one compare of two packed lists (made once per model) where
  // they walk both models' task lists, records and nodes at every update
  // (about a third of a 1,000-task update's time). False says nothing: a
  // kernel kind named by another view of the same name, or a mismatch,
  // which those checks then find and name.
  static bool same_shape(model_handle target, model_handle source) {
    std::scoped_lock locks(target->meta_m, source->meta_m);
    const std::vector<std::uint64_t>& a = shape_locked(target);
    const std::vector<std::uint64_t>& b = shape_locked(source);
    return target->shape_updatable && source->shape_updatable && a.size() == b.size() &&
           std::memcmp(a.data(), b.data(), a.size() * sizeof(std::uint64_t)) == 0;
  }

  // Whether both models were captured in the same interleaving of their
  // streams (the same replay nodes, one for one): -1 if so, else the first
  // task (its index in issue order) where they differ.
  static long interleaving_mismatch(model_handle target, model_handle source) {
    std::lock_guard lock(source->meta_m);
    const std::vector<replay_task>& a = target->nodes();
    const std::vector<replay_task>& b = source->nodes();
    if (a.size() != b.size() || target->records.size() != source->records.size()) return 0;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i].cat() != b[i].cat()) return static_cast<long>(i);
    for (std::size_t i = 0; i < target->records.size(); ++i)
      if (target->records[i].type != source->records[i].type || target->records[i].node != source->records[i].node)
        return static_cast<long>(i);
    return -1;
  }

  // @p m's shape (same_shape), made if not known (empty: not known). Caller
  // holds m's meta_m. A task's stream is task_list's index of it (by first
  // use, as build_tasks numbered them), at the record task_records names.
  static const std::vector<std::uint64_t>& shape_locked(model_handle m) {
    if (!m->shape.empty()) return m->shape;
    const std::vector<task_record>& records = m->records;
    const std::vector<replay_task>& nodes = m->nodes();
    const std::size_t task_words = 2 + 3 * records.size();  // then the nodes' categories, eight to a word
    std::vector<std::uint64_t> shape(task_words + (nodes.size() + 7) / 8);
    shape[0] = records.size();
    shape[1] = nodes.size();
    // Every record has its task (else no shape vouches for the records: the task-by-task check runs).
    bool updatable = m->task_list.size() == records.size();
    for (std::size_t p = 0; updatable && p < m->task_list.size(); ++p) {
      const std::size_t i = m->task_records[p];
      const task_record& r = records[i];
      updatable = r.type != task_type::conditional && r.type != task_type::activation &&
                  r.type != task_type::switch_ && r.type != task_type::other;
      const bool kernel = r.type == task_type::kernel;
      std::uint64_t* const words = &shape[2 + 3 * i];
      words[0] = static_cast<std::uint64_t>(r.type) | static_cast<std::uint64_t>(m->task_list[p].stream) << 8 |
                 std::uint64_t{r.group != nullptr} << 62 | std::uint64_t{r.external_event} << 63;
      words[1] = r.node | (kernel ? static_cast<std::uint64_t>(r.kind.name().size()) << 32 : 0);
      words[2] = kernel ? reinterpret_cast<std::uintptr_t>(r.kind.name().data()) : 0;
    }
    for (std::size_t j = 0; j < nodes.size(); ++j)
      shape[task_words + j / 8] |= static_cast<std::uint64_t>(nodes[j].cat()) << (8 * (j % 8));
    m->shape.swap(shape);
    m->shape_updatable = updatable;
    return m->shape;
  }

  // Every task of @p target runs @p source's (task groups keep their own,
  // which their updates set), from @p s's current point on. The target's
  // table keeps what those tasks live in (the source's replacements and
  // node stores), never the source or its table: models updated from each
  // other do not keep each other alive. Ends the claim.
  static void commit_model_update(model_handle target, model_handle source, stream_handle s) {
    struct finish {
      model_handle m;
      ~finish() { end_model_claim(m); }
    } done{target};
    ref_ptr<node_table> from = source->current_table();
    ref_ptr<node_table> t = start_table(target);
    // Allocations first: a throw leaves the target's tables as they were.
    std::vector<std::pair<std::uint32_t, ref_ptr<replacement_task>>> owned;
    if (from) owned = from->owned;  // what remains of the target's own is its group nodes, which are originals
    std::vector<ref_ptr<node_store>> stores{target->store};
    if (from) {
      for (const ref_ptr<node_store>& st : from->stores)  // the source's own among them
        if (std::none_of(stores.begin(), stores.end(), [&](const auto& have) { return have.get() == st.get(); }))
          stores.push_back(st);
    } else {
      stores.push_back(source->store);
    }
    const std::vector<replay_task>& target_nodes = target->nodes();
    for (std::size_t i = 0; i < t->order.size(); ++i) {
      if (target_nodes[i].cat() == replay_task::category::group) continue;
      const replay_task* base = from ? from->base[i] : &source->nodes()[i];
      t->base[i] = base;
      t->order[i] = from ? from->order[i] : base;
    }
    t->owned.swap(owned);
    t->stores.swap(stores);
    t->whole = true;
    publish(target, s, std::move(t));
    // Introspection reports the source's parameters: copied in place (the
    // argument vectors have the sizes of the source's, by the topology, so
    // the copies reuse their storage). The target keeps its streams and groups.
    std::scoped_lock locks(target->meta_m, source->meta_m);
    bool kinds_moved = false;  // a kind named by another view of its name changes the target's shape
    for (std::size_t i = 0; i < target->records.size(); ++i) {
      task_record& to = target->records[i];
      const task_record& from_record = source->records[i];
      kinds_moved = kinds_moved || to.kind.name().data() != from_record.kind.name().data();
      to.kind = from_record.kind;
      to.arguments = from_record.arguments;
      to.copy = from_record.copy;
      to.event = from_record.event;
      to.external_event = from_record.external_event;
      to.signature = from_record.signature;
      to.rebind = from_record.rebind;
      to.assign = from_record.assign;
      to.disabled = from_record.disabled;
    }
    for (std::size_t p = 0; p < target->task_list.size(); ++p)
      fill_task_parameters(target->task_list[p], target->records[target->task_records[p]]);
    if (kinds_moved) target->shape.clear();
  }

 private:
  // The table a per-task commit publishes: the spare (or a new table) made
  // what the last commit published, with the staged changes set.
  static ref_ptr<node_table> table_for_staged(model_handle m) {
    ref_ptr<node_table> t = start_table(m);
    t->changed.clear();  // a throw below (growing a vector) abandons the update: t is dropped, nothing published
    for (std::size_t i = 0; i < m->staged_count; ++i) {
      staged_change& c = m->staged[i];
      const std::uint32_t node = c.node;
      t->changed.push_back(node);
      if (!c.disable) {
        const replay_task* runs = c.runs().runs;
        t->base[node] = runs;
        t->order[node] = runs;
        auto it = t->owned_at(node);
        if (it != t->owned.end()) {
          // The claim would drop a staged replacement: no count changes
          // hands; one rebuilt in place is there already (t is the spare).
          if (it->second.get() != c.in_place) it->second = owning(c);
        } else {
          t->owned.emplace_back(node, owning(c));
        }
      } else {
        t->order[node] = nullptr;
      }
    }
    return t;
  }
  // The commit that changes one kernel again and again (a runner's
  // per-step update): when the last commit changed that node alone and the
  // staged kernel was rebuilt in place in the spare, the spare is the last
  // commit's table but at that node (that commit published the spare with
  // its changes set), so setting the node makes it this commit's table.
  // Null when that does not hold (table_for_staged then does it all).
  KEEL_ALWAYS_INLINE static ref_ptr<node_table> spare_for_one_in_place(model_handle m) noexcept {
    const staged_change& c = m->staged[0];
    const node_table* from = m->latest;
    if (c.in_place == nullptr || from == nullptr || from->whole || from->changed.size() != 1 || !m->spare ||
        m->spare->changed.empty() || !m->spare->sole_reference())
      return ref_ptr<node_table>();
    const std::uint32_t node = c.node;
    if (from->changed[0] != node) return ref_ptr<node_table>();
    ref_ptr<node_table> t = std::move(m->spare);  // its owned entry at node is c.in_place (reusable_in_place)
    // Not empty before: keep its first entry (an inline erase, where
    // resize(1) is an out-of-line call of 27 instructions).
    t->changed.erase(t->changed.begin() + 1, t->changed.end());
    t->changed[0] = node;
    // The vectors' storage is read before either store: the compiler
    // cannot tell a store of a node pointer from one to the vector itself
    // and would load order's storage again after the first store.
    const replay_task** const base = t->base.data();
    const replay_task** const order = t->order.data();
    const replay_task* const runs = c.in_place->runs;
    base[node] = runs;
    order[node] = runs;
    return t;
  }
  KEEL_ALWAYS_INLINE static const task_record& record_of(model_handle m, std::size_t index) noexcept {
    return m->records[m->task_records[index]];
  }
  // What node @p node runs when enabled: the last committed table's, else the capture's.
  KEEL_ALWAYS_INLINE static const replay_task& base_task(model_handle m, std::uint32_t node) {
    if (m->latest) return *m->latest->base[node];
    return m->nodes()[node];
  }
  // The replacement a kernel of node @p node can be rebuilt into in place:
  // the one the spare table (the table before the last commit's) runs there
  // when no other table holds it (the last commit replaced it, and the
  // executions that ran it are over: acquire pairs with their release);
  // else null (a new one is made). The next commit reuses the spare (no one
  // can take a new reference to it) and patches it from the last commit's
  // table (start_table), which changed that node, skipping the staged ones;
  // an abandoned update leaves the patch to the next. Not when the last
  // commit was a whole-model update: the spare is then rewritten whole.
  KEEL_ALWAYS_INLINE static replacement_task* reusable_in_place(model_handle m, std::uint32_t node) {
    if (m->spare && m->spare->sole_reference() && m->latest && !m->latest->whole) {
      for (const auto& o : m->spare->owned)
        if (o.first == node && o.second->own && o.second->sole_reference()) return o.second.get();
    }
    return nullptr;
  }
  // The staged replacement as its table holds it (one rebuilt in place
  // gains a count: the table at hand is not the spare that holds it).
  static ref_ptr<replacement_task> owning(staged_change& c) noexcept {
    if (c.in_place != nullptr) return ref_ptr<replacement_task>(c.in_place);
    return std::move(c.replacement);
  }
  // The entry task @p index stages into: its earlier change (a later change
  // of the same task replaces it; fresh == false) or the first unused entry,
  // made here when there is none (the only step that may throw, before any
  // entry changes). taken() counts a fresh entry once it is filled.
  KEEL_ALWAYS_INLINE static staged_change& entry_for(model_handle m, std::size_t index, bool& fresh) {
    for (std::size_t i = 0; i < m->staged_count; ++i) {
      if (m->staged[i].task == index) {
        fresh = false;
        return m->staged[i];
      }
    }
    if (m->staged.size() == m->staged_count) m->staged.emplace_back();
    if (m->staged_count == model_state::in_place_limit) {
      // Past the limit the next commit patches staged nodes too, which
      // would overwrite the spare's entries: staged replacements own a count.
      for (std::size_t i = 0; i < m->staged_count; ++i) {
        staged_change& e = m->staged[i];
        if (e.in_place != nullptr) e.replacement = ref_ptr<replacement_task>(std::exchange(e.in_place, nullptr));
      }
    }
    fresh = true;
    staged_change& c = m->staged[m->staged_count];
    c.task = index;
    c.node = record_of(m, index).node;
    return c;
  }
  static void taken(model_handle m, bool fresh) noexcept {
    if (fresh) ++m->staged_count;
  }
  // The table the next commit fills: the one the last commit superseded when
  // nobody holds it any more (no execution runs it, no swap is pending: its
  // vectors' storage is reused, so a commit allocates nothing), else a new
  // one. It starts as the last table committed (which may not have been
  // published yet), or as the capture's nodes; a reused table needs only
  // what the last per-task commit changed.
  KEEL_ALWAYS_INLINE static ref_ptr<node_table> start_table(model_handle m) {
    ref_ptr<node_table> t;
    const bool reused = m->spare && m->spare->sole_reference();
    if (reused) {
      t = std::move(m->spare);  // the table latest started as
    } else {
      t = recycled_or_new(m);
    }
    if (m->latest) {
      const node_table& from = *m->latest;
      if (reused && !from.whole) return patched(m, std::move(t), from);
      t->order = from.order;
      t->base = from.base;
      t->owned = from.owned;
      t->stores = from.stores;
      return t;
    }
    t->base.clear();
    for (const replay_task& n : m->nodes()) t->base.push_back(&n);
    t->order = t->base;
    t->owned.clear();
    t->stores.assign(1, m->store);
    return t;
  }
  // An empty replacement for a commit to fill: a shell the model's bin kept
  // (its replaced kernels' let go), else a new one.
  static ref_ptr<replacement_task> new_replacement(model_handle m) {
    if (!m->replacements) m->replacements = ref_ptr<replacement_bin>(new replacement_bin, ref_ptr<replacement_bin>::adopt_tag{});
    replacement_task* t = m->replacements->take();
    if (t != nullptr) {
      t->revive();
    } else {
      t = new replacement_task;
    }
    t->bin = m->replacements;
    return ref_ptr<replacement_task>(t, ref_ptr<replacement_task>::adopt_tag{});
  }
  // A table that no one holds, for a commit to fill whole: one the model's
  // bin kept (its vectors keep their storage), else a new one.
  static ref_ptr<node_table> recycled_or_new(model_handle m) {
    if (!m->bin) m->bin = ref_ptr<table_bin>(new table_bin, ref_ptr<table_bin>::adopt_tag{});
    if (node_table* kept = m->bin->take()) {
      kept->revive();
      return ref_ptr<node_table>(kept, ref_ptr<node_table>::adopt_tag{});
    }
    ref_ptr<node_table> t(new node_table, ref_ptr<node_table>::adopt_tag{});
    t->bin = m->bin;
    return t;
  }
  // @p t, the table @p from started as, made @p from: its changed nodes
  // copied (a per-task commit adds or replaces owned entries, never drops
  // one), but for a node the commit at hand changes anyway when it stages
  // a few (then the reused replacement there is not handed back and forth).
  KEEL_ALWAYS_INLINE static ref_ptr<node_table> patched(model_handle m, ref_ptr<node_table> t, const node_table& from) {
    const bool skip_staged = m->staged_count <= model_state::in_place_limit;
    for (const std::uint32_t node : from.changed) {
      if (skip_staged && staged_here(m, node)) continue;
      t->order[node] = from.order[node];
      t->base[node] = from.base[node];
      auto source = from.owned_at(node);
      if (source == from.owned.end()) continue;
      auto it = t->owned_at(node);
      if (it != t->owned.end()) {
        it->second = source->second;
      } else {
        t->owned.push_back(*source);
      }
    }
    return t;
  }
  // Whether a replacement the claim holder staged (and is committing) is for
  // node @p node: the commit sets all of that node's entries (a disable sets
  // only `order`, so it is not such a change).
  KEEL_ALWAYS_INLINE static bool staged_here(model_handle m, std::uint32_t node) noexcept {
    for (std::size_t i = 0; i < m->staged_count; ++i)
      if (!m->staged[i].disable && m->staged[i].node == node) return true;
    return false;
  }
  // The table takes effect when @p s reaches this point: right away on an
  // idle stream (work issued concurrently is ordered after it), else as a
  // control task (it runs in the stream's error state too). A table older
  // than the one published never replaces it.
  //
  // The last table committed is `latest`, counted by `m->table` when it was
  // swapped in right away (only a newer table replaces it there: the next
  // commit's, which may be swapped in by its stream the moment it is
  // queued) or by `latest_pending` while its swap is queued. So on an idle stream no count changes hands: the new table's
  // goes to m->table, and the replaced one's (the last commit's, or an
  // older one when that commit's swap is still queued) to the spare.
  KEEL_ALWAYS_INLINE static void publish(model_handle m, stream_handle s, ref_ptr<node_table> table) {
    table->version = ++m->table_versions;
    node_table* const committed = table.get();
    if (s == nullptr || s->idle()) {
      // No stream (a runtime's synchronous update), or an idle one.
      ref_ptr<node_table> replaced = swap_in(m, std::move(table));
      m->spare = m->latest_pending ? std::move(m->latest_pending) : std::move(replaced);
    } else {
      // The last table's count, taken before the swap is queued: the stream
      // may run it at once and drop the table m->table held.
      ref_ptr<node_table> previous = m->latest_pending ? ref_ptr<node_table>() : ref_ptr<node_table>(m->latest);
      s->submit<true>([keep = ref_ptr<model_state>(m), table]() mutable { swap_in(keep.get(), std::move(table)); });
      if (m->latest_pending) previous = std::move(m->latest_pending);
      m->latest_pending = std::move(table);
      m->spare = std::move(previous);
    }
    m->latest = committed;
  }
  // Installs @p table unless a newer one is there; returns the table it
  // replaced (or @p table itself, when older), released by the caller
  // outside the lock.
  KEEL_ALWAYS_INLINE static ref_ptr<node_table> swap_in(model_handle m, ref_ptr<node_table> table) noexcept {
    {
      keel::detail::self_biased_section section(m->table_m);
      if (!m->table || m->table->version < table->version) std::swap(m->table, table);
    }
    m->has_table.store(true, std::memory_order_release);
    return table;
  }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
