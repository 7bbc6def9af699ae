// SPDX-License-Identifier: Apache-2.0
// The books the checked layer keeps for a native backend: who captures, who
// joined, what a group holds, who updates it. A native backend embeds one
// record of each kind in its own records (its device, streams, events,
// groups and models) and hands them out through `books(...)`; it never reads
// or writes them itself. Only keel/runtime/checked/ does.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "keel/core/biased_lock.hpp"
#include "keel/runtime/checked/task_uses.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace checked {

template <class Stream>
struct capture_books;

/// @cond
// The device books' lock. Every captured launch takes it, almost always from
// the one thread that captures: that thread enters with plain stores once it
// owns the lock (keel/core/biased_lock.hpp), where a std::mutex cost two
// locked instructions per launch. Another thread breaks in with one
// membarrier(); sections are short but for a capture's end, and a waiter
// spins, then yields.
using books_mutex = keel::detail::self_biased_mutex;
// The books' lock as the hot paths (captured launches, events) hold it.
using books_lock = keel::detail::inlined_unique_lock<books_mutex>;
/// @endcond

/**
 * @brief The device-wide books: captures in progress and the stream marking
 * a task group. Embedded in a native backend's device record.
 *
 * Ownership: a member of the native device; never copied. Thread safety:
 * guarded by its own lock (books_mutex; the checked layer locks it). Exceptions: none.
 */
template <class Stream>
struct device_books {
  /// @cond
  books_mutex m;  // guards everything below, and the capture fields of every stream_books / event_books
  std::vector<capture_books<Stream>*> captures;  // in progress, in begin order
  std::atomic<int> strict_captures{0};           // captures in global or thread-local mode (lock-free hint)
  std::atomic<int> capture_count{0};             // captures.size() (lock-free hint)
  Stream group_stream{};                         // the stream marking a task group (one per device), or none
  std::atomic<std::uint64_t> next_id{1};         // capture and group ids
  // Set once a pool's sharing rule needs to see stream order (record_ordered):
  // plain records and waits on the device then keep the marks below.
  std::atomic<bool> order_tracking{false};
  /// @endcond
};

/**
 * @brief One capture's books: its mode, thread and origin, the streams that
 * joined it (lanes) with how much of their work the capture has waited for,
 * and what the model will count. Shared by the capture's streams and the
 * events recorded in it; made and read by the checked layer only.
 */
template <class Stream>
struct capture_books {
  /// @cond
  struct lane {
    Stream stream{};
    std::uint64_t stream_id = 0;
    std::size_t count = 0;   // tasks this stream issued in the capture
    std::size_t joined = 0;  // how many of them another lane has waited for
    bool ended = false;      // a built model's stream: its end task was issued (it takes no more work)
  };
  capture_mode mode = capture_mode::global;
  std::thread::id thread;
  std::uint64_t id = 0;
  Stream origin{};
  std::uint64_t origin_id = 0;
  std::vector<lane> lanes;  // lanes[0] is the origin
  std::size_t tasks = 0;    // tasks of the model (a group counts once)
  std::size_t groups = 0;
  std::size_t open_group_lane = 0;
  bool group_open = false;
  std::vector<kernel_kind> group_kinds;  // the open group's launches, its signature at group end
  bool active = true;  // false: a joined stream was destroyed; end() refuses
  // 0: a capture; 1: the streams bound to a model being built (checked/built_model.hpp),
  // which record their work like a capture; 2: that model's build ended (its streams take no work).
  std::uint8_t build = 0;
  // The model's life: false until capture end, true while the model lives.
  std::shared_ptr<std::atomic<bool>> model_alive = std::make_shared<std::atomic<bool>>(false);
  // What the captured kernels use (a native backend that keeps nothing of a
  // kernel: checked/task_uses.hpp), and the model's uses they go to at the
  // end (made at the beginning, so that the capture's groups can name it).
  detail::kept_objects uses;
  std::shared_ptr<model_uses> uses_home;
  /// @endcond
};

/**
 * @brief A stream's books: whether its work runs, is captured or replaces a
 * group's tasks, the capture it takes part in, the update in progress.
 * Embedded in a native backend's stream record.
 *
 * `UpdateLock` guards the update fields: a lock with lock()/unlock(), and
 * optionally enter()/leave()/set_owner() for an owner's lock-free entry (the
 * host backend's biased lock), which the checked layer then uses.
 */
template <class Stream, class Group, class UpdateLock = std::mutex>
struct stream_books {
  /// @cond
  // 0: work runs; 1: work is captured; 2: work replaces a group's tasks. The
  // lock-free hint every issuing call reads first.
  std::atomic<std::uint8_t> redirect{0};
  // Guarded by the device books' mutex; whoever changes `session` also holds
  // update_m, so an update can check "not capturing" under update_m alone.
  std::shared_ptr<capture_books<Stream>> session;
  std::size_t lane = 0;
  // The group being updated (claimed through the native backend), guarded by update_m.
  Group updating{};
  UpdateLock update_m;
  std::atomic<bool> destroyed{false};  // the checked layer's destroy_stream ran: scopes' late ends refuse
  // Stream order a pool's sharing rule can see (device_books::order_tracking),
  // guarded by the device books' mutex: the plain records issued here
  // (each record's mark), and for each other stream (its id) the latest
  // mark of a record there that a plain wait here waited for.
  std::uint64_t records = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> waited;
  // Called by destroy_stream before the stream goes, when set (a per-stream
  // allocator registry drops its entry); guarded by the device books' mutex.
  void (*on_destroy)(Stream) = nullptr;
  /// @endcond
};

/**
 * @brief An event's books: where its last record was issued inside a capture
 * (so a wait on it can join that stream's work). Embedded in a native
 * backend's event record; guarded by the device books' mutex.
 */
template <class Stream>
struct event_books {
  /// @cond
  std::atomic<bool> captured{false};  // lock-free hint: the last record was inside a capture
  std::shared_ptr<capture_books<Stream>> session;
  std::size_t lane = 0;
  std::size_t position = 0;  // the recording lane's task count at the record
  // External operations (event_operation::external): whether a plain record
  // ever recorded the event (CANN then refuses them), and the captures that
  // record (true) or wait on (false) it externally, so that one capture
  // never does both.
  std::atomic<bool> plain_recorded{false};
  std::vector<std::pair<std::weak_ptr<capture_books<Stream>>, bool>> external_uses;
  // Its last plain record while stream order is tracked: the stream's id and
  // the record's mark there (stream_books::records); 0 when unknown.
  std::uint64_t order_stream = 0;
  std::uint64_t order_mark = 0;
  /// @endcond
};

/**
 * @brief A task group's books: its id, the kernel kinds an update must match,
 * what the update in progress staged, and whether its model lives.
 * Embedded in a native backend's group record; `staged` belongs to the
 * update's claim holder.
 */
struct group_books {
  /// @cond
  std::uint64_t id = 0;
  std::uint64_t marked_on = 0;          // the stream id that marked it
  std::vector<kernel_kind> signature;   // fixed at group end
  std::vector<kernel_kind> staged;      // the update in progress (claim holder only)
  std::shared_ptr<const std::atomic<bool>> model_alive;
  const std::atomic<bool>* alive_flag = nullptr;  // model_alive.get(): one load on the update path
  // Where its updates' uses go (checked/task_uses.hpp), what the update in
  // progress staged (claim holder only), and its claims' count.
  std::weak_ptr<model_uses> uses;
  std::vector<std::shared_ptr<void>> staged_uses;
  std::uint64_t update_sequence = 0;
  /// @endcond
};

/**
 * @brief A model's books: what capture counted, its life flag (its groups
 * read it), and the pool memory its capture took.
 */
struct model_books {
  /// @cond
  std::uint64_t id = 0;  // the capture's id: model.id(), what capture_info::capture_id reported
  std::size_t tasks = 0;
  std::size_t groups = 0;
  std::shared_ptr<std::atomic<bool>> alive;
  // What its tasks use (checked/task_uses.hpp; null for a native backend
  // that keeps its kernels itself), what the update in progress staged and
  // its claim's number (claim holder only).
  std::shared_ptr<model_uses> uses;
  std::vector<uses_change> staged_uses;
  std::uint64_t update_sequence = 0;
  // A keel::detail::model_memory<stream_handle> (the checked layer's
  // attach_model_memory put it there, typed): set once before the model is
  // handed out, read by every execution, dropped when the model is destroyed.
  std::shared_ptr<void> memory;
  /// @endcond
};

} KEEL_END_NAMESPACE  // namespace keel::checked
