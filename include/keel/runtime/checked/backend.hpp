// SPDX-License-Identifier: Apache-2.0
// The checked layer: one adaptor that lifts a thin native backend to keel's
// backend requirement by keeping the capture, task-group, update and
// lifetime books and enforcing every rule of them, once, with the same
// errors on every backend. The native backend only runs work: eagerly,
// captured, or staged into an update, as the checked layer tells it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/runtime/checked/books.hpp"
#include "keel/runtime/checked/build_books.hpp"
#include "keel/runtime/checked/rules.hpp"
#include "keel/runtime/model_memory.hpp"
#include "keel/runtime/model_tasks.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace checked {

template <class Native>
struct built_models;

/**
 * @brief The checked layer over native backend @p Native: keel's runtime
 * backend requirement, with every capture, group, update and lifetime rule
 * enforced here rather than in the native backend.
 *
 * What @p Native supplies (see docs/backends.md, "A native backend under the
 * checked layer"): the stream, event and memory layers in their eager form;
 * `books(...)` for its device, stream, event, group and model records (each
 * embeds the matching record of keel/runtime/checked/books.hpp); and the
 * native halves of capture and update: `capture_begin`, `capture_join(s,
 * origin, e)`, `capture_leave(s)`, `capture_end`, `capture_discard`,
 * `captured_launch_host` / `_kernel` / `_copy_async` / `_memset_async` / `_record` / `_wait` /
 * `_reset` / `_execute`, `group_begin`, `group_end`, `try_claim(g)`,
 * `end_claim(g)`, `update_launch_kernel(s, g, kind, f)`, `update_commit(s,
 * g)` (which ends the claim) and `update_discard(s, g)`. The captured and
 * staged calls are made only when the rules allow them, under the device
 * books' lock (a kernel body that runs at issue, `kernel_body_runs_at_issue`,
 * runs after it).
 *
 * @p Native is a protected base: the eager calls passed through unchanged
 * are named public below, and the captured, staged and claim calls, which
 * run work without the rules, cannot be named through the backend type.
 *
 * Ownership: as the runtime requirement says; the books live in the native
 * records. Thread safety: every call is thread-safe; the device books' lock
 * orders capture changes, a stream's update lock its update. Exceptions:
 * keel::error naming the API and the rule; a refused call changes nothing.
 */
template <class Native>
struct backend : protected Native {
 protected:
  /// The native layer the rules run over (reachable from the checked layer and the backend built on it only).
  using N = Native;

 public:
  /// @cond KEEL_BACKEND_OPERATIONS
  // The native layer is not public: its captured, staged and claim calls run
  // work without the rules, so only the checked layer and the backend built
  // on it (which names what else it passes through) reach them. What passes
  // through unchanged, the eager calls the rules do not concern, is named here.
  using typename N::device_type;
  using typename N::event_handle;
  using typename N::group_handle;
  using typename N::model_handle;
  using typename N::stream_handle;
  using typename N::buffer_handle;
  using typename N::launch_context;
  using typename N::condition_handle;
  using typename N::context_handle;
  using task_kind = detail::task_kind;
  using N::name;

  using N::create_stream;
  using N::device_of;
  using N::id_of;
  using N::retain_stream;
  using N::release_stream;
  using N::create_event;
  using N::destroy_event;
  using N::flags_of;
  using N::destroy_group;
  using N::allocate;
  using N::free_async;
  using N::data;
  using N::size;
  using N::keep_alive;

  // Staged updates are dropped on abandon, whatever the runtime can cancel.
  static constexpr bool abandon_restores_group = true;
  // A native backend whose kernel body runs at issue keeps nothing of the
  // kernel: the checked layer keeps what its tasks use (checked/task_uses.hpp).
  static constexpr bool keeps_uses = detail::kernel_body_runs_at_issue<N>();

  using N::query;
  using N::synchronize;
  using N::synchronize_for;

  // ---- streams ---------------------------------------------------------------

  static void destroy_stream(stream_handle s) noexcept {
    if (void (*hook)(stream_handle) = take_stream_destroy_hook(s)) hook(s);
    if constexpr (keel::detail::is_detected_v<detail::is_adopted_call, N>) {
      if (N::is_adopted(s)) return N::destroy_stream(s);  // keel never ends what it did not make
    }
    auto& sb = N::books(s);
    abort_update(s);
    {
      auto& db = N::books(N::device_of(s));
      std::lock_guard<books_mutex> lock(db.m);
      if (sb.session) {
        capture_books<stream_handle>& c = *sb.session;
        if (c.origin == s) {
          report_error(make_error_code(errc::capture_violation), "keel::destroy_stream",
                       (detail::describe_capture(c, N::id_of(s)) + "; the capture is discarded").c_str());
          discard_locked(db, c);
        } else {
          // A joined stream leaving breaks the capture: end() will refuse it.
          c.active = false;
          if (c.group_open && db.group_stream == s) {
            c.group_open = false;
            db.group_stream = stream_handle{};
          }
          c.lanes[sb.lane].stream = stream_handle{};
          leave_locked(s);
        }
      }
    }
    sb.destroyed.store(true, std::memory_order_release);
    N::destroy_stream(s);
  }

  /**
   * Sets the function destroy_stream calls (once, before the stream goes)
   * for @p s: a registry keyed by stream handles drops the stream's entry,
   * so that a new stream at the same address inherits nothing. One per
   * stream; null clears it.
   */
  static void set_stream_destroy_hook(stream_handle s, void (*hook)(stream_handle)) noexcept {
    std::lock_guard<books_mutex> lock(N::books(N::device_of(s)).m);
    N::books(s).on_destroy = hook;
  }

  static void synchronize(stream_handle s) {
    check_may_synchronize(s, "keel::stream::synchronize");
    N::synchronize(s);
  }
  static void synchronize_for(stream_handle s, std::chrono::microseconds timeout) {
    check_may_synchronize(s, "keel::stream::synchronize");
    N::synchronize_for(s, timeout);
  }
  static void synchronize_device(device_type& d) {
    check_unsafe_device(d, "keel::synchronize_device", "synchronizing the device");
    N::synchronize_device(d);
  }
  static void synchronize_device_for(device_type& d, std::chrono::microseconds timeout) {
    check_unsafe_device(d, "keel::synchronize_device", "synchronizing the device");
    N::synchronize_device_for(d, timeout);
  }

  template <class F>
  static void launch_host(stream_handle s, F&& f) {
    if (N::books(s).redirect.load(std::memory_order_acquire) == 0) return N::launch_host(s, std::forward<F>(f));
    issue(s, task_kind::host, "keel::stream::launch_host", [&] { N::captured_launch_host(s, std::forward<F>(f)); });
  }

  /**
   * f(launch_context&) is the kernel's body; kind is what updates match.
   * Always inlined, with the capture and update paths out of line and given
   * their own copy of the kernel (moved from the caller's temporary): the
   * caller's temporary then never has its address taken, so the compiler
   * keeps it in registers and writes it once, into the ring's slot. Handed
   * by reference to a call that is not inlined, it was built on the stack
   * at every launch (GCC 12), or the whole launch was called out of line
   * (Clang 14), and those stores queued behind the slot's in the store
   * buffer, costing about twice the native call. BM_stream_eager_launch
   * against BM_native_eager_launch is the pair that shows this path costs
   * what the native call does.
   */
  template <class F>
  KEEL_ALWAYS_INLINE static void launch_kernel(stream_handle s, kernel_kind kind, F&& f) {
    const std::uint8_t redirect = N::books(s).redirect.load(std::memory_order_acquire);
    if (KEEL_LIKELY(redirect == 0)) return N::launch_kernel(s, kind, std::forward<F>(f));
    launch_kernel_redirected(s, kind, redirect, std::decay_t<F>(std::forward<F>(f)));
  }

  static void copy_async(stream_handle s, void* dst, const void* src, std::size_t bytes, copy_kind kind,
                         std::shared_ptr<void> keep_dst, std::shared_ptr<void> keep_src) {
    if (N::books(s).redirect.load(std::memory_order_acquire) == 0)
      return N::copy_async(s, dst, src, bytes, kind, std::move(keep_dst), std::move(keep_src));
    issue(s, task_kind::copy, "keel::stream::copy_async", [&] {
      N::captured_copy_async(s, dst, src, bytes, kind, std::move(keep_dst), std::move(keep_src));
    });
  }

  /**
   * Sets @p bytes bytes at @p dst to @p value in stream order; captured as a
   * memset task like a copy, refused in a task group and an update (those
   * take operator launches only).
   */
  static void memset_async(stream_handle s, void* dst, int value, std::size_t bytes, std::shared_ptr<void> keep) {
    if (N::books(s).redirect.load(std::memory_order_acquire) == 0)
      return N::memset_async(s, dst, value, bytes, std::move(keep));
    issue(s, task_kind::memset, "keel::stream::memset_async",
          [&] { N::captured_memset_async(s, dst, value, bytes, std::move(keep)); });
  }

  /** A blocking copy: unsafe during capture. */
  static void copy(stream_handle s, void* dst, const void* src, std::size_t bytes, copy_kind kind) {
    check_unsafe_device(N::device_of(s), "keel::stream::copy", "a blocking copy");
    N::copy(s, dst, src, bytes, kind);
  }

  static capture_info capture_status(stream_handle s) {
    auto& sb = N::books(s);
    auto& db = N::books(N::device_of(s));
    capture_info info;
    {
      std::lock_guard<books_mutex> lock(db.m);
      {
        std::lock_guard<decltype(sb.update_m)> stage_lock(sb.update_m);
        info.updating = sb.updating != group_handle{};
      }
      if (sb.session) {
        const capture_books<stream_handle>& c = *sb.session;
        info.state = c.active ? capture_state::active : capture_state::invalidated;
        info.mode = c.mode;
        info.group_open = c.group_open && db.group_stream == s;
        info.capture_id = c.id;
        return info;
      }
    }
    if constexpr (keel::detail::is_detected_v<detail::native_capture_status_call, N>) {
      // A capture keel did not begin (an adopted stream's, begun through the runtime directly).
      const capture_info native = N::native_capture_status(s);
      info.state = native.state;
      info.mode = native.mode;
      info.capture_id = native.capture_id;
    }
    return info;
  }

  /** Whether the calling thread began a capture still in progress on @p d. */
  static capture_info thread_capture_status(device_type& d) {
    auto& db = N::books(d);
    std::lock_guard<books_mutex> lock(db.m);
    capture_info info;
    for (const capture_books<stream_handle>* c : db.captures) {
      if (c->thread != std::this_thread::get_id()) continue;
      info.state = capture_state::active;
      info.mode = c->mode;
      info.group_open = c->group_open;
      info.capture_id = c->id;
      break;
    }
    return info;
  }

  // ---- events ------------------------------------------------------------------

  static void record(event_handle e, stream_handle s);
  static void wait(stream_handle s, event_handle e);
  /** A default event's record inside a capture that is visible outside the model (event_operation::external). */
  static void record_external(event_handle e, stream_handle s);
  /** A wait inside a capture on a default event's record made outside the model (event_operation::external). */
  static void wait_external(stream_handle s, event_handle e);
  /** wait(), bounded: refused while capturing or updating (a bounded wait cannot be replayed). */
  static void wait_for(stream_handle s, event_handle e, std::chrono::microseconds timeout);
  /** Clears an external event's signal, in stream order. */
  static void reset(stream_handle s, event_handle e);
  static bool query(event_handle e);
  static void synchronize(event_handle e);
  static void synchronize_for(event_handle e, std::chrono::microseconds timeout);
  /** Milliseconds between two completed timing events. */
  static float elapsed_ms(event_handle start, event_handle end);
  /**
   * A plain record made for a pool's sharing rule: from now on plain records
   * and waits on @p s's device keep stream order (record marks and what each
   * stream waited for); returns this record's mark on @p s (the largest
   * value, which no wait reaches, for a record made into a capture).
   */
  static std::uint64_t record_ordered(event_handle e, stream_handle s);
  /** Whether @p s waited plainly on an event recorded on @p on at or after mark @p mark (record_ordered). */
  static bool waited_for(stream_handle s, stream_handle on, std::uint64_t mark) noexcept;

  // ---- capture and models ------------------------------------------------------

  static void capture_begin(stream_handle s, capture_mode mode);
  static model_handle capture_end(stream_handle s);
  static void capture_discard(stream_handle s) noexcept;
  static void destroy_model(model_handle m) noexcept;
  // The pool's sharing rule applies to every execution, through the owner
  // or a view: the memory is in the model's books, where both reach it.
  // The memory is held, not only pointed at: a host function of the model
  // may destroy the model (and its books) before after_execute runs.
  static void execute(model_handle m, stream_handle s) {
    const std::shared_ptr<void>& books_memory = N::books(m).memory;
    if (!books_memory) return execute_issue(m, s);
    const std::shared_ptr<model_memory_t> memory = std::static_pointer_cast<model_memory_t>(books_memory);
    memory->before_execute(s);
    try {
      execute_issue(m, s);
    } catch (...) {
      memory->execute_failed(s);
      throw;
    }
    memory->after_execute(s);
  }
  // The pool memory a capture took (keel/runtime/model_memory.hpp), in the model's books.
  using model_memory_t = ::keel::detail::model_memory<stream_handle>;
  static model_memory_t* model_memory(model_handle m) noexcept {
    return static_cast<model_memory_t*>(N::books(m).memory.get());
  }
  static void attach_model_memory(model_handle m, std::shared_ptr<model_memory_t> memory) noexcept {
    N::books(m).memory = std::move(memory);
  }
  static std::shared_ptr<model_memory_t> detach_model_memory(model_handle m) noexcept {
    return std::static_pointer_cast<model_memory_t>(std::exchange(N::books(m).memory, nullptr));
  }
  static std::size_t task_count(model_handle m) noexcept { return N::books(m).tasks; }
  static std::size_t group_count(model_handle m) noexcept { return N::books(m).groups; }

  // ---- identity, lifetime and introspection (checked/introspection.hpp) ---------

  static std::uint64_t model_id(model_handle m) noexcept { return N::books(m).id; }
  // The model's life flag (null for a model keel did not capture): what a
  // destroy-callback registration reads before it unregisters.
  static std::shared_ptr<const std::atomic<bool>> model_life(model_handle m) noexcept { return N::books(m).alive; }
  static void set_model_name(model_handle m, std::string_view name);
  static std::string model_name(model_handle m);
  static void add_destroy_callback(model_handle m, void (*fn)(void*), void* user);
  static void remove_destroy_callback(model_handle m, void (*fn)(void*), void* user);
  static void abort_model(model_handle m);
  static std::vector<model_stream> model_streams(model_handle m);
  static std::vector<task_info> model_tasks(model_handle m);
  static kernel_attributes kernel_task_attributes(model_handle m, const task_info& task);

  // ---- task groups and updates -------------------------------------------------

  static void group_begin(stream_handle s);
  static group_handle group_end(stream_handle s);
  static void group_abort(stream_handle s) noexcept;
  static std::size_t group_size(group_handle g) noexcept { return N::books(g).signature.size(); }
  static bool group_model_alive(group_handle g) noexcept {
    const std::atomic<bool>* alive = N::books(g).alive_flag;
    return alive != nullptr && alive->load(std::memory_order_acquire);
  }
  static void update_begin(stream_handle s, group_handle g);
  static void update_end(stream_handle s);
  static void update_abort(stream_handle s) noexcept { abort_update(s); }

  /**
   * Forgets the books of a stream record that goes away without
   * destroy_stream (an adopted stream whose record its backend drops): it
   * leaves the capture it took part in, which is invalidated (or, begun on
   * it, discarded without a report).
   */
  /**
   * The rule for a call unsafe during capture (a blocking copy, a device
   * synchronize) made by a thread whose own capture mode is @p own: what an
   * emulation or an adaptor of a runtime's thread modes asks before such a call.
   */
  static void check_unsafe_device(device_type& d, capture_mode own, const char* api, const char* what) {
    auto& db = N::books(d);
    if (db.strict_captures.load(std::memory_order_acquire) == 0) return;
    std::lock_guard<books_mutex> lock(db.m);
    for (const capture_t* c : db.captures) detail::check_unsafe(*c, own, api, what);
  }

  static void forget_books(stream_handle s) noexcept {
    abort_update(s);
    auto& sb = N::books(s);
    auto& db = N::books(N::device_of(s));
    std::lock_guard<books_mutex> lock(db.m);
    if (!sb.session) return;
    capture_books<stream_handle>& c = *sb.session;
    if (c.origin == s) return discard_locked(db, c);
    c.active = false;
    c.lanes[sb.lane].stream = stream_handle{};
    leave_locked(s);
  }

 private:
  using device_books_t = device_books<stream_handle>;
  using capture_t = capture_books<stream_handle>;

  static void note_waited(stream_handle s, const event_books<stream_handle>& eb) noexcept;
  static auto take_stream_destroy_hook(stream_handle s) noexcept {
    std::lock_guard<books_mutex> lock(N::books(N::device_of(s)).m);
    return std::exchange(N::books(s).on_destroy, nullptr);
  }

  // execute()'s issue, after the pool's claim.
  static void execute_issue(model_handle m, stream_handle s) {
    if constexpr (keeps_uses) {
      // The table this execution runs with stays until the stream passes it
      // (captured: as long as the outer model), whatever updates do meanwhile.
      const std::shared_ptr<model_uses>& uses = N::books(m).uses;
      std::shared_ptr<void> table = uses ? uses->snapshot() : nullptr;
      if (N::books(s).redirect.load(std::memory_order_acquire) == 0) {
        N::execute(m, s);
        if (table) N::keep_with_work(s, std::move(table));
      } else {
        issue(s, task_kind::model, "keel::model::execute", [&] {
          detail::kept_objects& kept = N::books(s).session->uses;
          detail::kept_objects::node* const keeping =
              table ? kept.template emplace<std::shared_ptr<void>>(std::move(table)).second : nullptr;
          try {
            N::captured_execute(m, s);
          } catch (...) {
            if (keeping != nullptr) detail::kept_objects::discard(keeping);
            throw;
          }
        });
      }
    } else {
      if (N::books(s).redirect.load(std::memory_order_acquire) == 0) {
        N::execute(m, s);
      } else {
        issue(s, task_kind::model, "keel::model::execute", [&] { N::captured_execute(m, s); });
      }
    }
  }

  // ---- issuing work that is captured or staged ----------------------------------

  // A kernel on a stream that is not running its work now: staged into the
  // update in progress, or captured.
  template <class F>
  static void issue_kernel(stream_handle s, kernel_kind kind, F&& f) {
    static constexpr const char* api = "keel::stream::launch";
    auto& sb = N::books(s);
    auto& db = N::books(N::device_of(s));
    books_lock lock(db.m);
    // A capturing stream is never updating (each refuses the other under the
    // device books' lock and the update lock): no update lock on this path.
    if (!sb.session) {
      {
        std::lock_guard<decltype(sb.update_m)> stage_lock(sb.update_m);
        if (sb.updating != group_handle{}) return stage(s, sb.updating, kind, std::forward<F>(f));
      }
      lock.unlock();  // the capture ended while the launch was issued: it runs
      return N::launch_kernel(s, kind, std::forward<F>(f));
    }
    capture_t& c = *sb.session;
    check_may_issue(db, s, api);
    // A body that runs at issue runs after the lock, and the capture may end
    // (or be discarded) meanwhile: a launch that fails takes its count back
    // under the lock, and only from the same capture (the same books, the
    // same id) while it still holds the stream (no count of the books is
    // taken: c.id is read only while they are the stream's, so alive).
    const std::uint64_t id = c.id;
    const auto same_capture = [&sb, &c, id] { return sb.session.get() == &c && c.id == id; };
    if constexpr (keeps_uses) {
      // The model keeps the kernel with its arguments (their owners): the
      // native backend keeps nothing of it once its body has run. A copy
      // is kept in the capture's books (no allocation of its own), and the
      // body runs on the caller's kernel, valid through this call, whatever
      // another thread does to the capture meanwhile.
      using kernel_t = std::decay_t<F>;
      if constexpr (std::is_copy_constructible_v<kernel_t>) {
        const auto kept = c.uses.template emplace<kernel_t>(std::as_const(f));
        try {
          detail::keep_arguments_for_later(*kept.first);
          issue_captured(lock, s, kind, c, std::forward<F>(f), same_capture);
        } catch (...) {
          if (!lock.owns_lock()) lock.lock();
          if (same_capture()) detail::kept_objects::discard(kept.second);
          throw;
        }
      } else {
        // Not copyable: moved to the heap, shared by the books and the body.
        auto held = detail::hold_kernel(std::forward<F>(f));
        const auto kept = c.uses.template emplace<std::shared_ptr<kernel_t>>(held);
        try {
          issue_captured(lock, s, kind, c, *held, same_capture);
        } catch (...) {
          if (!lock.owns_lock()) lock.lock();
          if (same_capture()) detail::kept_objects::discard(kept.second);
          throw;
        }
      }
    } else {
      issue_captured(lock, s, kind, c, std::forward<F>(f), same_capture);
    }
  }

  // The captured launch of issue_kernel: a task of the open group, or of the capture.
  template <class F, class Same>
  static void issue_captured(books_lock& lock, stream_handle s, kernel_kind kind, capture_t& c, F&& f,
                             const Same& same_capture) {
    auto& sb = N::books(s);
    auto& db = N::books(N::device_of(s));
    if (c.group_open && db.group_stream == s) {
      c.group_kinds.push_back(kind);  // the group's signature, fixed at group end
      try {
        run_captured_kernel(lock, s, kind, std::forward<F>(f));
      } catch (...) {
        if (!lock.owns_lock()) lock.lock();
        if (same_capture() && c.group_open && !c.group_kinds.empty()) c.group_kinds.pop_back();
        throw;
      }
      return;
    }
    const std::size_t lane = sb.lane;
    count_task(c, lane);
    try {
      run_captured_kernel(lock, s, kind, std::forward<F>(f));
    } catch (...) {
      if (!lock.owns_lock()) lock.lock();
      if (same_capture()) uncount_task(c, lane);
      throw;
    }
  }

  // Runs the native captured launch under the lock, or (a body that runs at
  // issue) after it.
  template <class F>
  static void run_captured_kernel(books_lock& lock, stream_handle s, kernel_kind kind, F&& f) {
    if constexpr (detail::kernel_body_runs_at_issue<N>()) lock.unlock();
    N::captured_launch_kernel(s, kind, std::forward<F>(f));
  }

  // A launch on a stream that captures (redirect 1) or stages a group
  // update (redirect 2): out of line, see launch_kernel.
  template <class F>
  KEEL_NOINLINE static void launch_kernel_redirected(stream_handle s, kernel_kind kind, std::uint8_t redirect, F f) {
    auto& sb = N::books(s);
    if (redirect == 2) {
      // A replacement for the group this stream updates, staged under the
      // stream's own lock (the updating thread enters it without an atomic
      // operation where the lock allows).
      detail::update_section<decltype(sb.update_m)> lock(sb.update_m);
      if (sb.updating != group_handle{}) return stage(s, sb.updating, kind, std::move(f));
    }
    issue_kernel(s, kind, std::move(f));
  }

  // Stages a kernel into the update of @p g. Caller is in s's update section.
  template <class F>
  static void stage(stream_handle s, group_handle g, kernel_kind kind, F&& f) {
    if constexpr (keeps_uses) {
      // The group's task keeps the kernel with its arguments once the update
      // commits; the native backend stages the same object.
      auto held = detail::hold_kernel(std::forward<F>(f));
      auto& uses = N::books(g).staged_uses;
      uses.push_back(held);
      try {
        stage_native(s, g, kind, detail::held_kernel<std::decay_t<F>>{std::move(held)});
      } catch (...) {
        uses.pop_back();
        throw;
      }
    } else {
      stage_native(s, g, kind, std::forward<F>(f));
    }
  }
  template <class F>
  static void stage_native(stream_handle s, group_handle g, kernel_kind kind, F&& f) {
    if constexpr (detail::native_staged_kinds<N>()) {
      N::update_launch_kernel(s, g, kind, std::forward<F>(f));
    } else {
      auto& staged = N::books(g).staged;
      staged.push_back(kind);
      try {
        N::update_launch_kernel(s, g, kind, std::forward<F>(f));
      } catch (...) {
        staged.pop_back();
        throw;
      }
    }
  }

  // record_external / wait_external (checked/event.hpp): their rules, then issue_native into the capture.
  template <class Issue>
  static void external_operation(event_handle e, stream_handle s, bool record, const char* api, Issue&& issue_native);

  // Any task but a kernel, on a stream that is not running its work now.
  template <class Captured>
  static void issue(stream_handle s, task_kind k, const char* api, Captured&& captured) {
    auto& db = N::books(N::device_of(s));
    books_lock lock(db.m);
    if (!N::books(s).session) refuse_if_updating(s, k, api);  // a capturing stream is never updating
    issue_locked(lock, s, k, api, std::forward<Captured>(captured));
  }

  // Caller holds the device books' lock and s is not updating.
  template <class Captured>
  static void issue_locked(books_lock& lock, stream_handle s, task_kind k, const char* api,
                           Captured&& captured) {
    auto& sb = N::books(s);
    auto& db = N::books(N::device_of(s));
    if (!sb.session)
      ::keel::detail::throw_composed(errc::invalid_state, api,
                                     {"stream #", N::id_of(s), " changed capture state while work was issued to it"});
    capture_t& c = *sb.session;
    check_may_issue(db, s, api);
    // rule host_task_in_group: the emulation decides it too (tests/witness/ disables it here)
    if (c.group_open && db.group_stream == s)
      ::keel::detail::throw_composed(errc::capture_violation, api,
                                     {"only operator launches may be marked into a task group, not ",
                                      detail::kind_name(k), "; ", detail::describe_capture(c, N::id_of(s))});
    count_task(c, sb.lane);
    try {
      captured();
    } catch (...) {
      uncount_task(c, sb.lane);
      throw;
    }
    (void)lock;
  }

  static void count_task(capture_t& c, std::size_t lane) noexcept {
    ++c.tasks;
    ++c.lanes[lane].count;
  }
  static void uncount_task(capture_t& c, std::size_t lane) noexcept {
    --c.tasks;
    --c.lanes[lane].count;
  }

  // While a stream marks a task group, no other capturing stream may issue
  // work (the device rule). Caller holds the device books' lock.
  // Inlined into every captured launch: two loads and two tests when the
  // issue is allowed; the checks that refuse are out of line.
  KEEL_ALWAYS_INLINE static void check_may_issue(const device_books_t& db, stream_handle s, const char* api) {
    const auto& sb = N::books(s);
    if (KEEL_UNLIKELY(sb.session->build != 0)) detail::check_build_issue(*sb.session, sb.lane, N::id_of(s), api);
    const stream_handle g = db.group_stream;
    // rule work_beside_group: the emulation decides it too (tests/witness/ disables it here)
    if (KEEL_UNLIKELY(g != stream_handle{} && g != s)) refuse_beside_group(g, s, api);
  }
  [[noreturn]] KEEL_NOINLINE static void refuse_beside_group(stream_handle g, stream_handle s, const char* api) {
    ::keel::detail::throw_composed(
        errc::capture_violation, api,
        {"while stream #", N::id_of(g), " marks a task group, no other capturing stream may issue work; ",
         detail::describe_capture(*N::books(s).session, N::id_of(s))});
  }

  // Refuses @p k, which an update never takes, if s is updating.
  static void refuse_if_updating(stream_handle s, task_kind k, const char* api) {
    auto& sb = N::books(s);
    std::uint64_t group = 0;
    {
      std::lock_guard<decltype(sb.update_m)> lock(sb.update_m);
      if (sb.updating == group_handle{}) return;
      group = N::books(sb.updating).id;
    }
    detail::refuse_in_update(N::id_of(s), k, group, api);
  }

  // ---- calls unsafe during capture -------------------------------------------------

  static void check_may_synchronize(stream_handle s, const char* api) {
    auto& sb = N::books(s);
    if (sb.redirect.load(std::memory_order_acquire) != 1) return;
    device_type& d = N::device_of(s);
    auto& db = N::books(d);
    std::lock_guard<books_mutex> lock(db.m);
    if (sb.session) detail::check_unsafe(*sb.session, detail::thread_mode<N>(d), api, "synchronizing a capturing stream");
  }

  static void check_unsafe_device(device_type& d, const char* api, const char* what) {
    check_unsafe_device(d, detail::thread_mode<N>(d), api, what);
  }

  static void check_event_safe(event_handle e, const char* api, const char* what) {
    auto& eb = N::books(e);
    if (!eb.captured.load(std::memory_order_acquire)) return;
    device_type& d = N::device_of(e);
    auto& db = N::books(d);
    std::lock_guard<books_mutex> lock(db.m);
    if (eb.session && eb.session->active) detail::check_unsafe(*eb.session, detail::thread_mode<N>(d), api, what);
  }

  // ---- joining and leaving captures ---------------------------------------------------

  // A stream that is not capturing waits on an event recorded in an active
  // capture: it joins the capture (a fork). Caller holds the device books' lock.
  static void fork_locked(device_books_t& db, stream_handle s, event_handle e, const char* api) {
    auto& sb = N::books(s);
    const std::shared_ptr<capture_t> c = N::books(e).session;
    if (c->build != 0)
      throw_error(errc::capture_violation, api,
                  "a stream takes part in a model being built by being bound to it, not by waiting on an event "
                  "recorded on a bound stream");
    if (db.group_stream != stream_handle{})
      ::keel::detail::throw_composed(
          errc::capture_violation, api,
          {"a stream cannot join a capture while stream #", N::id_of(db.group_stream), " marks a task group"});
    c->lanes.push_back({s, N::id_of(s), 0, 0});
    try {
      {
        // An update that began since the check in wait() is refused like one before it.
        std::lock_guard<decltype(sb.update_m)> lock(sb.update_m);
        if (sb.updating != group_handle{}) detail::refuse_in_update(N::id_of(s), task_kind::event, N::books(sb.updating).id, api);
        sb.session = c;
        sb.lane = c->lanes.size() - 1;
        sb.redirect.store(1, std::memory_order_release);
      }
      N::capture_join(s, c->origin, e);
    } catch (...) {
      leave_locked(s);
      c->lanes.pop_back();
      throw;
    }
  }

  // s leaves the capture it takes part in (not as its origin). Caller holds
  // the device books' lock.
  static void leave_locked(stream_handle s) noexcept {
    auto& sb = N::books(s);
    std::shared_ptr<capture_t> leaving;  // dropped after the update lock
    {
      std::lock_guard<decltype(sb.update_m)> lock(sb.update_m);
      leaving = std::move(sb.session);
      sb.redirect.store(0, std::memory_order_release);
    }
    N::capture_leave(s);
  }

  // The capture is over: every stream leaves it. Caller holds the device books' lock.
  static void detach_locked(device_books_t& db, capture_t& c) noexcept {
    const std::shared_ptr<capture_t> keep = N::books(c.origin).session;
    for (std::size_t i = 1; i < c.lanes.size(); ++i)
      if (c.lanes[i].stream != stream_handle{}) leave_locked(c.lanes[i].stream);
    {
      auto& ob = N::books(c.origin);
      std::lock_guard<decltype(ob.update_m)> lock(ob.update_m);
      ob.session.reset();
      ob.redirect.store(0, std::memory_order_release);
    }
    c.lanes.clear();
    c.active = false;
    db.captures.erase(std::remove(db.captures.begin(), db.captures.end(), &c), db.captures.end());
    db.capture_count.fetch_sub(1, std::memory_order_acq_rel);
    if (c.mode != capture_mode::relaxed) db.strict_captures.fetch_sub(1, std::memory_order_acq_rel);
    if (c.group_open && db.group_stream != stream_handle{}) db.group_stream = stream_handle{};
    c.group_open = false;
  }

  static void discard_locked(device_books_t& db, capture_t& c) noexcept {
    const stream_handle origin = c.origin;
    const std::shared_ptr<capture_t> keep = N::books(origin).session;
    detach_locked(db, c);
    N::capture_discard(origin);
  }

  // Leaves update mode, dropping what was staged; the group is unchanged.
  static void abort_update(stream_handle s) noexcept {
    auto& sb = N::books(s);
    group_handle g{};
    {
      std::lock_guard<decltype(sb.update_m)> lock(sb.update_m);
      g = std::exchange(sb.updating, group_handle{});
      if (g == group_handle{}) return;
      sb.redirect.store(0, std::memory_order_release);
    }
    N::books(g).staged.clear();  // detached from the stream: the claim holder's alone
    N::books(g).staged_uses.clear();
    N::update_discard(s, g);
    N::end_claim(g);
  }

  // What the update in progress on @p g staged: its count and its kinds.
  static std::size_t staged_count(group_handle g) noexcept {
    if constexpr (detail::native_staged_kinds<N>())
      return N::staged_count(g);
    else
      return N::books(g).staged.size();
  }
  static kernel_kind staged_kind(group_handle g, std::size_t i) noexcept {
    if constexpr (detail::native_staged_kinds<N>())
      return N::staged_kind(g, i);
    else
      return N::books(g).staged[i];
  }

  [[noreturn]] static void refuse_end(group_handle g, std::size_t staged, std::size_t at);
 public:
  // What update_end and the per-task updates (checked/model_update.hpp) do
  // with the uses of a committed update (checked/task_uses.hpp).
  static std::vector<uses_change> group_changes(std::uint64_t group, std::vector<std::shared_ptr<void>> uses);
  static void commit_uses(model_uses& home, std::uint64_t sequence, std::vector<uses_change>& changes,
                          std::shared_ptr<model_uses::table> room, stream_handle s) noexcept;
 private:
  // A runtime that numbers its models (ACL: aclmdlRIGetId on the capture's
  // model) gives the capture its id, so model.id() and capture_info agree with it.
  static void adopt_native_capture_id(capture_t& c, stream_handle s) noexcept;
  /// @endcond
};

} KEEL_END_NAMESPACE  // namespace keel::checked

#include "keel/runtime/checked/built_model.hpp"
#include "keel/runtime/checked/capture.hpp"
#include "keel/runtime/checked/conditional.hpp"
#include "keel/runtime/checked/event.hpp"
#include "keel/runtime/checked/task_group.hpp"
#include "keel/runtime/checked/introspection.hpp"
