// SPDX-License-Identifier: Apache-2.0
// The books of a memory pool, shared by the pool, its views, its
// allocations and the models that captured from it: size-class free lists
// per stream, release points, reservations against the backend, statistics,
// and the memory a capture took (keel/runtime/memory_pool.hpp is the API).
#pragma once

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "keel/core/biased_lock.hpp"
#include "keel/core/error.hpp"
#include "keel/core/scope_guard.hpp"
#include "keel/runtime/backend.hpp"
#include "keel/runtime/backend/memory_pool.hpp"
#include "keel/runtime/backend/runtime_pool.hpp"
#include "keel/runtime/model.hpp"
#include "keel/runtime/stream.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

#include "keel/runtime/memory_pool_options.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail {

constexpr std::size_t pool_class_index(std::size_t cls) noexcept {
  if (cls <= 512) return 0;
  const unsigned lg = pool_floor_log2(cls - 1);
  return 1 + (lg - 9) * 4 + ((cls >> (lg - 2)) - 5);
}
inline constexpr std::size_t pool_class_count = pool_class_index(pool_size_class(PTRDIFF_MAX)) + 1;

// pool_size_class(bytes) and its free list's index with one bit scan, for the
// hot path (cls - 1 has the top bit of bytes - 1: rounding up never reaches
// the next power of two's classes).
struct pool_class {
  std::size_t bytes;
  std::size_t index;
};
constexpr pool_class pool_class_of(std::size_t bytes) noexcept {
  if (bytes <= 512) return {512, 0};
  const unsigned lg = pool_floor_log2(bytes - 1);
  const std::size_t step = std::size_t{1} << (lg - 2);
  const std::size_t cls = (bytes + step - 1) & ~(step - 1);
  return {cls, 1 + (lg - 9) * 4 + ((cls >> (lg - 2)) - 5)};
}
constexpr bool pool_class_of_agrees(std::size_t bytes) noexcept {
  return pool_class_of(bytes).bytes == pool_size_class(bytes) &&
         pool_class_of(bytes).index == pool_class_index(pool_size_class(bytes));
}
static_assert(pool_class_of_agrees(1) && pool_class_of_agrees(513) && pool_class_of_agrees(640) &&
              pool_class_of_agrees(641) && pool_class_of_agrees(1023) && pool_class_of_agrees(1024) &&
              pool_class_of_agrees(1025) && pool_class_of_agrees(4096) && pool_class_of_agrees(8191) &&
              pool_class_of_agrees(std::size_t{64} << 20) && pool_class_of_agrees((std::size_t{64} << 20) + 1) &&
              pool_class_of_agrees(PTRDIFF_MAX));

// A pool hit holds its lock for a few dozen instructions, so the lock's own
// cost is most of a hit: a locked instruction each way (a test-and-set
// lock's exchange) costs more than the rest of the hit. The pool's lock
// is self-biased (keel/core/biased_lock.hpp): the thread that allocates and
// releases from it almost always (a runner's thread) becomes its owner after
// a streak of sections and enters them with plain stores; another thread
// breaking in (a stream's worker dropping a span, a statistics read) pays one
// membarrier() and ends the ownership, and the next owner needs a streak
// twice as long (at most one membarrier() per 256 sections, soon per 65536).
// Where the asymmetric fence is missing (and under ThreadSanitizer) it is the
// plain test-and-set lock.
using pool_lock = self_biased_lock;

template <class B>
inline constexpr bool pool_retains_streams = has_stream_retain<B>::value;

template <class B>
void pool_retain(typename B::stream_handle s) noexcept {
  if constexpr (pool_retains_streams<B>)
    if (s != typename B::stream_handle{}) B::retain_stream(s);
}
template <class B>
void pool_unretain(typename B::stream_handle s) noexcept {
  if constexpr (pool_retains_streams<B>)
    if (s != typename B::stream_handle{}) B::release_stream(s);
}

template <class B>
struct pool_model_memory;
template <class B>
struct pool_span_owner;

// One block of memory the pool reserved from the backend. Its fields are
// guarded by the pool's lock.
template <class B>
struct pool_block {
  using stream_handle = typename B::stream_handle;
  typename B::buffer_handle buffer{};
  void* data = nullptr;
  std::size_t cls = 0;      // its size class (bytes reserved)
  std::size_t list = 0;     // its size class's free list (pool_class_index(cls))
  std::size_t bytes = 0;    // the current allocation's request
  long refs = 0;            // the allocation's owner, spans, models
  stream_handle bound{};    // the stream its current allocation is ordered on (retained)
  std::vector<stream_handle> released;  // streams whose release points precede a reuse (retained)
  bool from_capture = false;     // allocated inside a capture given the pool: a model holds it
  bool in_capture_free = false;  // released inside a capture: later captures may share it
  bool shared = false;           // taken by a capture from another's released memory
};

template <class B>
class pool_core final : public capture_memory_source<B> {
 public:
  using stream_handle = typename B::stream_handle;
  using block = pool_block<B>;
  using runtime_pool = runtime_memory_pool<B>;
  using native_pool_handle = typename runtime_pool::handle;

  pool_core(typename B::device_type& dev, pool_options options)
      : name_(options.name.empty() ? "pool #" + std::to_string(next_id()) : std::move(options.name)),
        kind_(options.kind),
        max_size_(options.max_size),
        attributes_(options.attributes),
        private_(dev),
        free_(pool_class_count),
        blocks_per_class_(pool_class_count) {
    if (kind_ == memory_kind::pageable_host)
      throw_error(errc::invalid_parameter, "keel::memory_pool", "a pool holds device or pinned host memory, not pageable");
    if constexpr (runtime_pool::available)
      if (options.use_runtime_pool) native_ = runtime_pool::create(handle_of(private_), kind_, max_size_, attributes_);
  }
  pool_core(const pool_core&) = delete;
  pool_core& operator=(const pool_core&) = delete;

  ~pool_core() override {
    // Each list is handed over whole: waiting for every release, free_blocks
    // destroys each block and puts none back, so nothing is allocated here.
    for (auto& list : free_) free_blocks(list, true);
    if (dep_event_ != typename B::event_handle{}) B::destroy_event(dep_event_);
    if (exec_event_ != typename B::event_handle{}) B::destroy_event(exec_event_);
    if (last_exec_ != stream_handle{}) pool_unretain<B>(last_exec_);
    if constexpr (runtime_pool::available)
      if (native_ != native_pool_handle{}) runtime_pool::destroy(native_, handle_of(private_));
  }

  // Deletes a pool nothing holds any more, from whatever thread let go last
  // (a stream's own worker, when work on it held a span). Blocks whose
  // release on a stream has not passed are freed behind it: the rest of the
  // teardown is issued to that stream as a host callable, which runs once the
  // stream has passed the release, so the thread that let go never waits for
  // a stream (it may be the one running that stream's work). Throws: nothing.
  static void destroy(pool_core* p, stream_handle passed_here = stream_handle{}) noexcept {
    const stream_handle pending = p->pending_release(passed_here);
    if (pending != stream_handle{}) {
      try {
        B::launch_host(pending, [p, pending] { destroy(p, pending); });
        return;
      } catch (...) {
        // Cannot issue to it (destroyed, or refused): the teardown orders the frees itself.
      }
    }
    p->passed_here_ = passed_here;
    delete p;
  }
  // The runtime's pool keel's blocks come from, or null when keel's pool is its own over the backend's allocator.
  native_pool_handle native_handle() const noexcept { return native_; }

  const std::string& name() const noexcept { return name_; }
  memory_kind kind() const noexcept { return kind_; }
  typename B::device_type& device() const { return private_.device(); }

  // ---- allocation ------------------------------------------------------

  // The hot path is a hit on the top of its size class's free list, by a
  // block released last on s (or on no stream) and not captured: a few dozen
  // instructions under the lock. Everything else is allocate_slow().
  block* allocate(stream_handle s, std::size_t bytes) {
    if (bytes > static_cast<std::size_t>(PTRDIFF_MAX)) throw_too_large(bytes);
    const pool_class cls = pool_class_of(bytes);
    if (active_captures_.load(std::memory_order_acquire) == 0 &&
        (!capture_seen_.load(std::memory_order_relaxed) || stream_capture_status<B>(s).state == capture_state::none)) {
      self_biased_section lock(lock_);
      if (block* b = take_same_stream(cls.index, s)) {
        hand_out_free(b, s, bytes);
        ++hits_;
        return b;
      }
    }
    return allocate_slow(s, bytes, cls.bytes);
  }

  // The owner releases its allocation in stream @p s's order.
  bool release(block* b, stream_handle s) noexcept {
    const bool capturing = capture_seen_.load(std::memory_order_relaxed) && capturing_noexcept(s);
    self_biased_section lock(lock_);
    if (!b->from_capture && b->released.empty() && b->released.capacity() != 0) {
      // The hot path: the first release point, with room made for it when
      // the block was made (push_back cannot allocate); the allocation's
      // retain of s passes to the release record.
      b->released.push_back(s);
      b->bound = stream_handle{};
      return drop_locked(b);
    }
    if (b->from_capture && capturing) {
      // Released inside the capture: the model keeps it; later captures of
      // models that never run concurrently with this one may share it.
      if (b->refs > 1 && !b->in_capture_free) {
        try {
          capture_free_.push_back(b);
          b->in_capture_free = true;
        } catch (...) {
          // No room to offer it to later captures: the model keeps it unshared.
        }
      }
      pool_unretain<B>(std::exchange(b->bound, stream_handle{}));
    } else {
      // The release point is on the allocation's stream: its retain passes
      // from the allocation to the release record (a same-stream hit then
      // takes it back: no reference counting on the hot path).
      if (std::find(b->released.begin(), b->released.end(), s) != b->released.end() || !remember(b, s))
        pool_unretain<B>(b->bound);
      b->bound = stream_handle{};
    }
    return drop_locked(b);
  }

  void add_ref(block* b) noexcept {
    self_biased_section lock(lock_);
    ++b->refs;
  }
  // A span or a model lets go of a block; true when the pool must be deleted.
  bool drop_ref(block* b, stream_handle released_on = stream_handle{}) noexcept {
    self_biased_section lock(lock_);
    if (released_on != stream_handle{}) note_release(b, released_on);
    return drop_locked(b);
  }

  void rebind(block* b, stream_handle s) noexcept {
    pool_retain<B>(s);
    stream_handle old;
    {
      self_biased_section lock(lock_);
      old = std::exchange(b->bound, s);
    }
    pool_unretain<B>(old);
  }

  // ---- trimming, attributes, statistics --------------------------------

  void trim_to(std::size_t keep) {
    std::vector<block*> victims;
    {
      self_biased_section lock(lock_);
      if (keep < used_)
        ::keel::detail::throw_composed(errc::invalid_parameter, "keel::memory_pool::trim_to",
                                       {pool_text(), ": cannot trim to ", keep, " bytes: ", used_,
                                        " bytes are in use (trim_to never takes memory that is handed out)"});
      collect_idle(reserved_ - keep, false, victims);
    }
    free_blocks(victims, true);
    if constexpr (runtime_pool::available)
      if (native_ != native_pool_handle{}) runtime_pool::trim_to(native_, handle_of(private_), keep);
  }

  pool_statistics statistics() noexcept {
    self_biased_section lock(lock_);
    return {reserved_, reserved_high_, used_, used_high_, allocations_, hits_, backend_allocations_};
  }
  void reset_high_water() noexcept {
    self_biased_section lock(lock_);
    reserved_high_ = reserved_;
    used_high_ = used_;
  }
  pool_attributes attributes() noexcept {
    self_biased_section lock(lock_);
    return attributes_;
  }
  void set_attributes(const pool_attributes& a) {
    std::vector<block*> victims;
    {
      self_biased_section lock(lock_);
      attributes_ = a;
      if (reserved_ - used_ > a.release_threshold) collect_idle(reserved_ - used_ - a.release_threshold, true, victims);
    }
    free_blocks(victims, false);
    if constexpr (runtime_pool::available)
      if (native_ != native_pool_handle{}) runtime_pool::set_attributes(native_, handle_of(private_), a);
  }

  // ---- lifetime: the pool object and every holder ------------------------

  void hold() noexcept {
    self_biased_section lock(lock_);
    ++holders_;
  }
  // true when the caller must delete the pool.
  bool unhold() noexcept {
    self_biased_section lock(lock_);
    return --holders_ == 0;
  }
  static void unhold_and_delete(pool_core* p) noexcept {
    if (p->unhold()) destroy(p);
  }
  std::size_t holders() noexcept {
    self_biased_section lock(lock_);
    return holders_;
  }
  // The pool object was destroyed (its memory may still be held): what
  // holds the pool without owning it (an allocator registration) refuses.
  void owner_left() noexcept { owner_gone_.store(true, std::memory_order_release); }
  bool owner_gone() const noexcept { return owner_gone_.load(std::memory_order_acquire); }

  // ---- captures ----------------------------------------------------------

  std::shared_ptr<model_attachment<B>> begin_capture(std::uint64_t capture_id) override;
  // A conditional body's capture draws for its parent's model (whose
  // capture, or the body it nests in, is registered already).
  bool join_capture(std::uint64_t capture_id, std::uint64_t parent_id) override {
    std::lock_guard<std::mutex> lock(captures_m_);
    for (const capture_route& c : captures_) {
      if (c.id != parent_id) continue;
      const capture_route joined{capture_id, c.memory, c.root != 0 ? c.root : c.id};
      captures_.push_back(joined);
      active_captures_.store(static_cast<int>(captures_.size()), std::memory_order_release);
      return true;
    }
    return false;
  }
  // Also unregisters what joined it: a body's capture cannot outlast its model's.
  void end_capture(std::uint64_t capture_id) noexcept override {
    std::lock_guard<std::mutex> lock(captures_m_);
    captures_.erase(std::remove_if(captures_.begin(), captures_.end(),
                                   [&](const capture_route& c) { return c.id == capture_id || c.root == capture_id; }),
                    captures_.end());
    active_captures_.store(static_cast<int>(captures_.size()), std::memory_order_release);
  }
  // An allocation for the capture s takes part in that names no pool itself
  // (an operator's workspace): a span that owns the block; the model holds
  // it too, as every allocation from this pool inside the capture.
  memory_span allocate_span(stream_handle s, std::size_t bytes) override {
    block* b = allocate(s, bytes);
    memory_span span;
    add_ref(b);  // the span's: its owner lets go of it, also when making the owner fails
    try {
      span = memory_span{b->data, b->bytes, kind_, std::shared_ptr<void>(b->data, pool_span_owner<B>{this, b})};
    } catch (...) {
      release(b, b->bound);  // never the last holder: this call's caller holds the pool
      throw;
    }
    (void)release(b, b->bound);  // the allocation's own owner; the span holds the block
    return span;
  }

  // Models sharing this pool's memory never execute concurrently. The rule
  // is checked for executions on different streams, and the check claims
  // the execution until its work is issued (end_exclusive), so two threads
  // issuing on two streams cannot both pass it. An execution on another
  // stream than the last one's is accepted when that one has finished (an
  // event recorded after it tells) or, on a backend that keeps stream order
  // (record_ordered / waited_for), when this stream waited on an event
  // recorded there after it.
  void check_exclusive(stream_handle s, pool_model_memory<B>& model) {
    std::lock_guard<std::mutex> lock(exec_m_);
    if (!holds_shared(model.blocks)) return;
    if (issuing_ != 0 && issuing_on_ != s)
      ::keel::detail::throw_composed(
          errc::invalid_state, "keel::model::execute",
          {pool_text(), ": models sharing its memory would execute concurrently: an execution on stream ",
           B::id_of(issuing_on_), " is being issued (on another thread) and this one is on stream ", B::id_of(s),
           " (order them with an event, or capture them into separate pools)"});
    if (last_exec_ != stream_handle{} && last_exec_ != s && !finished_or_ordered(s))
      ::keel::detail::throw_composed(
          errc::invalid_state, "keel::model::execute",
          {pool_text(), ": models sharing its memory would execute concurrently: an execution on stream ",
           B::id_of(last_exec_), " has not finished and this one is on stream ", B::id_of(s),
           " (order them with an event: record one on stream ", B::id_of(last_exec_),
           " after that execution and make this stream wait on it; or capture them into separate pools)"});
    issuing_on_ = s;
    ++issuing_;
    ++model.claims;
  }
  // Ends a claim of check_exclusive's for @p model; @p issued: the work was
  // issued on s (an event recorded after it then marks its end). A model
  // whose memory became shared by a later capture after its check made
  // no claim, and counts from now on.
  void end_exclusive(stream_handle s, pool_model_memory<B>& model, bool issued) noexcept {
    std::lock_guard<std::mutex> lock(exec_m_);
    const bool claimed = model.claims > 0;
    if (claimed) {
      --model.claims;
      --issuing_;
    }
    if (!issued || (!claimed && !holds_shared(model.blocks))) return;
    try {
      if (exec_event_ == typename B::event_handle{}) exec_event_ = B::create_event(device(), event_flags::default_);
      if constexpr (tracks_order)
        exec_mark_ = B::record_ordered(exec_event_, s);
      else
        B::record(exec_event_, s);
    } catch (...) {
      report_current_exception("keel::model::execute");
      return;
    }
    if (last_exec_ != s) {
      pool_retain<B>(s);
      if (last_exec_ != stream_handle{}) pool_unretain<B>(last_exec_);
      last_exec_ = s;
    }
  }
  bool holds_shared(const std::vector<block*>& blocks) noexcept {
    self_biased_section lock(lock_);
    return std::any_of(blocks.begin(), blocks.end(), [](const block* b) { return b->shared; });
  }

  std::string pool_text() const { return "keel::memory_pool '" + name_ + "'"; }

 private:
  static std::uint64_t next_id() noexcept {
    static std::atomic<std::uint64_t> id{1};
    return id.fetch_add(1, std::memory_order_relaxed);
  }

  template <class C, class = void>
  struct keeps_order : std::false_type {};
  template <class C>
  struct keeps_order<C, std::void_t<decltype(C::record_ordered(std::declval<typename C::event_handle>(),
                                                               std::declval<stream_handle>())),
                                    decltype(C::waited_for(std::declval<stream_handle>(),
                                                           std::declval<stream_handle>(), std::uint64_t{}))>>
      : std::true_type {};
  static constexpr bool tracks_order = keeps_order<B>::value;

  // Caller holds exec_m_; last_exec_ is set.
  bool finished_or_ordered(stream_handle s) noexcept {
    try {
      if (B::query(exec_event_)) return true;
    } catch (...) {
      return true;  // the execution failed: it runs no more
    }
    if constexpr (tracks_order)
      return B::waited_for(s, last_exec_, exec_mark_);
    else
      return false;
  }

  static bool capturing_noexcept(stream_handle s) noexcept {
    try {
      return stream_capture_status<B>(s).state != capture_state::none;
    } catch (...) {
      return false;
    }
  }
  static bool passed(stream_handle s) noexcept {
    try {
      return B::query(s);
    } catch (const error& e) {
      // A failed stream still runs its releases, later: ask again next time.
      // A stream that can no longer be asked was destroyed, which waited for its work.
      return e.code() != make_error_code(errc::task_failed);
    } catch (...) {
      return false;
    }
  }

  pool_model_memory<B>* capture_of(std::uint64_t id) {
    std::lock_guard<std::mutex> lock(captures_m_);
    for (const capture_route& c : captures_)
      if (c.id == id) return c.memory;
    return nullptr;
  }

  // Records s in b's releases without retaining it; false when there is no
  // room (the caller then waited for s instead). Caller holds lock_.
  static bool remember(block* b, stream_handle s) noexcept {
    try {
      b->released.push_back(s);
      return true;
    } catch (...) {
      while (!passed(s)) std::this_thread::yield();
      return false;
    }
  }
  // Caller holds lock_.
  void note_release(block* b, stream_handle s) noexcept {
    if (std::find(b->released.begin(), b->released.end(), s) != b->released.end()) return;
    if (remember(b, s)) pool_retain<B>(s);
  }
  void clear_releases(block* b) noexcept {
    for (stream_handle s : b->released) pool_unretain<B>(s);
    b->released.clear();
  }

  // Whether a free block may serve an allocation on s now. Caller holds lock_.
  bool reusable(block* b, stream_handle s, bool capturing, bool cross) noexcept {
    if (b->released.empty()) return true;
    if (!cross) return !capturing && b->released.size() == 1 && b->released.front() == s;
    if (attributes_.allow_opportunistic || attributes_.follow_event_dependencies) {
      if (std::all_of(b->released.begin(), b->released.end(), [](stream_handle r) { return passed(r); })) {
        clear_releases(b);
        return true;
      }
    }
    if (!attributes_.allow_internal_dependencies || capturing) return false;
    try {
      if (dep_event_ == typename B::event_handle{}) dep_event_ = B::create_event(device(), event_flags::default_);
      for (stream_handle r : b->released) {
        if (r == s) continue;
        if (capturing_noexcept(r)) return false;  // an event recorded there would be captured
        B::record(dep_event_, r);
        B::wait(s, dep_event_);
      }
    } catch (...) {
      return false;
    }
    clear_releases(b);
    return true;
  }

  block* take_free(std::size_t cls, stream_handle s, bool capturing) noexcept {
    auto& list = free_[pool_class_index(cls)];
    for (int pass = 0; pass < 2; ++pass) {
      int budget = 8;  // cross-stream checks cost a query each: look at a few
      for (std::size_t i = list.size(); i-- > 0 && budget > 0;) {
        if (pass == 1) --budget;
        if (reusable(list[i], s, capturing, pass == 1)) {
          block* b = list[i];
          list[i] = list.back();
          list.pop_back();
          return b;
        }
      }
    }
    return nullptr;
  }
  // A block another model's capture released, for @p capture's model: never
  // one that model holds already (its streams and conditional bodies run
  // unordered with each other within one execution). Caller holds lock_.
  block* take_shared(std::size_t cls, const pool_model_memory<B>* capture) noexcept {
    for (std::size_t i = capture_free_.size(); i-- > 0;) {
      block* b = capture_free_[i];
      if (b->cls == cls && std::find(capture->blocks.begin(), capture->blocks.end(), b) == capture->blocks.end()) {
        capture_free_[i] = capture_free_.back();
        capture_free_.pop_back();
        b->in_capture_free = false;
        b->shared = true;
        return b;
      }
    }
    return nullptr;
  }

  // Caller holds lock_; b came from a free list (refs 0) or the shared list (refs > 0).
  void hand_out(block* b, stream_handle s, std::size_t bytes, pool_model_memory<B>* capture) noexcept;

  KEEL_NOINLINE KEEL_COLD void throw_too_large(std::size_t bytes) const {
    ::keel::detail::throw_composed(
        errc::out_of_memory, "keel::memory_pool::allocate",
        {pool_text(), ": cannot allocate ", bytes, " bytes: larger than the largest object"});
  }

  // The top of a size class's free list when an allocation on s not captured with the
  // pool may take it at once (released last on s alone, or on no stream),
  // taken out of the list; else null. Caller holds lock_.
  block* take_same_stream(std::size_t list_index, stream_handle s) noexcept {
    auto& list = free_[list_index];
    if (list.empty()) return nullptr;
    block* b = list.back();
    if (!b->released.empty() && (b->released.size() != 1 || b->released.front() != s)) return nullptr;
    list.pop_back();
    return b;
  }
  // hand_out() for a block from a free list, outside a capture. Caller holds lock_.
  void hand_out_free(block* b, stream_handle s, std::size_t bytes) noexcept {
    used_ += b->cls;
    used_high_ = std::max(used_high_, used_);
    ++holders_;
    b->refs = 1;  // the owner
    b->bytes = bytes;
    if (b->released.empty())
      pool_retain<B>(s);
    else
      b->released.clear();  // released on s alone: the release record's retain passes to the allocation
    pool_unretain<B>(std::exchange(b->bound, s));
    ++allocations_;  // its free list keeps the capacity it had with b in it
  }

  // Every allocation the hot path does not serve: inside a capture given the
  // pool, on a capturing stream, reuse across streams, a miss.
  KEEL_NOINLINE block* allocate_slow(stream_handle s, std::size_t bytes, std::size_t cls) {
    pool_model_memory<B>* capture = nullptr;
    bool capturing = false;
    if (active_captures_.load(std::memory_order_acquire) > 0) {
      const capture_info info = stream_capture_status<B>(s);
      capturing = info.state != capture_state::none;
      if (info.capturing()) capture = capture_of(info.capture_id);
    } else if (capture_seen_.load(std::memory_order_relaxed)) {
      capturing = stream_capture_status<B>(s).state != capture_state::none;
    }
    {
      self_biased_section lock(lock_);
      block* b = capture != nullptr ? take_shared(cls, capture) : nullptr;
      if (b == nullptr) b = take_free(cls, s, capturing);
      if (b != nullptr) {
        hand_out(b, s, bytes, capture);
        ++hits_;
        return b;
      }
    }
    return allocate_new(s, bytes, cls, capture);
  }

  block* allocate_new(stream_handle s, std::size_t bytes, std::size_t cls, pool_model_memory<B>* capture) {
    static constexpr const char* api = "keel::memory_pool::allocate";
    {
      self_biased_section lock(lock_);
      if (max_size_ != 0 && (cls > max_size_ || reserved_ > max_size_ - cls))
        ::keel::detail::throw_composed(errc::out_of_memory, api,
                                       {pool_text(), ": cannot allocate ", bytes, " bytes (size class ", cls,
                                        "): ", reserved_, " of its max_size ", max_size_, " bytes are reserved"});
      // Room in the class's free list for the new block first (a bad_alloc here changes nothing).
      const std::size_t index = pool_class_index(cls);
      free_[index].reserve(blocks_per_class_[index].load(std::memory_order_relaxed) + 1);
      blocks_per_class_[index].fetch_add(1, std::memory_order_relaxed);
    }
    auto uncount = make_scope_fail(
        [&]() noexcept { blocks_per_class_[pool_class_index(cls)].fetch_sub(1, std::memory_order_relaxed); });
    auto fresh = std::make_unique<block>();
    fresh->released.reserve(2);
    try {
      fresh->data = reserve(s, cls, capture != nullptr, fresh->buffer);
    } catch (const error& e) {
      if (e.code() != make_error_code(errc::out_of_memory)) throw;
      ::keel::detail::throw_composed(
          errc::out_of_memory, api,
          {pool_text(), ": cannot reserve ", cls, " bytes for an allocation of ", bytes, ": ", e.what()});
    }
    fresh->cls = cls;
    fresh->list = pool_class_index(cls);
    block* b = fresh.release();
    self_biased_section lock(lock_);
    reserved_ += cls;
    reserved_high_ = std::max(reserved_high_, reserved_);
    ++backend_allocations_;
    hand_out(b, s, bytes, capture);
    return b;
  }

  // A new block of cls bytes for an allocation on s: from the runtime's pool,
  // ordered on s (a capture reserves on the pool's own stream instead, so the
  // runtime records no allocation in the model, and waits for it), or from
  // the backend's allocator.
  void* reserve(stream_handle s, std::size_t cls, bool capturing, typename B::buffer_handle& buffer) {
    if constexpr (runtime_pool::available) {
      if (native_ != native_pool_handle{}) {
        if (!capturing && !capturing_noexcept(s)) return runtime_pool::allocate(native_, s, cls);
        void* p = runtime_pool::allocate(native_, handle_of(private_), cls);
        auto give_back = make_scope_fail([&]() noexcept { runtime_pool::free(p, handle_of(private_)); });
        B::synchronize(handle_of(private_));  // a reuse of the runtime's is then free for any stream
        return p;
      }
    }
    buffer = B::allocate(handle_of(private_), cls, kind_);
    return B::data(buffer);
  }

  // The first stream (other than passed_here) whose release of an idle block
  // has not passed and that a host callable may be issued to; null if none.
  stream_handle pending_release(stream_handle passed_here) noexcept {
    self_biased_section lock(lock_);
    for (auto& list : free_)
      for (block* b : list)
        for (stream_handle r : b->released)
          if (r != passed_here && !passed(r) && may_issue_to(r)) return r;
    return stream_handle{};
  }
  // Whether a host callable issued to s now runs as plain work (not captured, not staged into an update).
  static bool may_issue_to(stream_handle s) noexcept {
    try {
      const capture_info info = stream_capture_status<B>(s);
      return info.state == capture_state::none && !info.updating;
    } catch (...) {
      return false;
    }
  }

  // Caller holds lock_. true when the pool must be deleted.
  bool drop_locked(block* b) noexcept {
    if (--b->refs > 0) return false;
    if (b->in_capture_free) leave_capture_free(b);
    b->from_capture = false;
    b->shared = false;
    pool_unretain<B>(std::exchange(b->bound, stream_handle{}));
    used_ -= b->cls;
    free_[b->list].push_back(b);  // cannot allocate: the list has room for every block of its class
    if (reserved_ - used_ > attributes_.release_threshold) trim_idle_locked();
    return --holders_ == 0;
  }
  KEEL_NOINLINE void leave_capture_free(block* b) noexcept {
    capture_free_.erase(std::find(capture_free_.begin(), capture_free_.end(), b));
    b->in_capture_free = false;
  }

  // Frees idle blocks whose releases have passed until under the threshold.
  KEEL_NOINLINE void trim_idle_locked() noexcept {
    std::vector<block*> victims;
    try {
      collect_idle(reserved_ - used_ - attributes_.release_threshold, true, victims);
    } catch (...) {
      return;
    }
    for (block* b : victims) destroy_block(b);
  }

  // Takes idle blocks (largest first) worth at least @p bytes out of the free
  // lists; only those whose releases have passed when @p passed_only.
  // Caller holds lock_.
  void collect_idle(std::size_t bytes, bool passed_only, std::vector<block*>& out) {
    std::size_t taken = 0;
    for (std::size_t c = free_.size(); c-- > 0 && taken < bytes;) {
      auto& list = free_[c];
      for (std::size_t i = list.size(); i-- > 0 && taken < bytes;) {
        block* b = list[i];
        if (passed_only && !std::all_of(b->released.begin(), b->released.end(), [](stream_handle r) { return passed(r); }))
          continue;
        out.push_back(b);
        list[i] = list.back();
        list.pop_back();
        taken += b->cls;
        reserved_ -= b->cls;
      }
    }
  }

  // Returns a block whose releases have all passed to the backend. Caller holds lock_ or owns b.
  void destroy_block(block* b) noexcept {
    clear_releases(b);
    blocks_per_class_[b->list].fetch_sub(1, std::memory_order_relaxed);
    // Ordered on the pool's own stream, which issued nothing that uses it.
    if constexpr (runtime_pool::available) {
      if (native_ != native_pool_handle{}) {
        runtime_pool::free(b->data, handle_of(private_));
        delete b;
        return;
      }
    }
    B::free_async(b->buffer);
    delete b;
  }

  // Returns blocks taken out of the lists to the backend. A release that has
  // not passed yet orders the free behind it: an event recorded on the
  // releasing stream, waited on by the pool's own stream, which frees.
  void free_blocks(std::vector<block*>& blocks, bool wait_for_releases) noexcept {
    for (block* b : blocks) {
      bool ordered = true;
      for (stream_handle r : b->released) {
        if (r == passed_here_ || passed(r)) continue;  // a teardown issued to r runs after r's release
        if (!wait_for_releases) {
          ordered = false;
          break;
        }
        try {
          if (capturing_noexcept(r)) {
            while (!passed(r)) std::this_thread::yield();  // an event recorded there would be captured
            continue;
          }
          self_biased_section lock(lock_);
          if (dep_event_ == typename B::event_handle{}) dep_event_ = B::create_event(device(), event_flags::default_);
          B::record(dep_event_, r);
          B::wait(handle_of(private_), dep_event_);
        } catch (...) {
          while (!passed(r)) std::this_thread::yield();
        }
      }
      if (ordered) {
        destroy_block(b);
      } else {
        self_biased_section lock(lock_);
        reserved_ += b->cls;
        free_[b->list].push_back(b);
      }
    }
    blocks.clear();
  }

  std::string name_;
  memory_kind kind_;
  std::size_t max_size_;
  pool_attributes attributes_;
  basic_stream<B> private_;  // reserves and frees: never captures, never waits on the user's streams but to free
  pool_lock lock_;
  std::vector<std::vector<block*>> free_;
  // The blocks of each size class that exist (free, handed out or being
  // made). A free list's capacity is raised to its class's count before a
  // block is made, so putting a block back into its list never allocates
  // (drop_locked, free_blocks are noexcept). Atomic: destroy_block may run
  // without lock_.
  std::vector<std::atomic<std::size_t>> blocks_per_class_;
  std::vector<block*> capture_free_;
  std::size_t reserved_ = 0, reserved_high_ = 0, used_ = 0, used_high_ = 0;
  std::uint64_t allocations_ = 0, hits_ = 0, backend_allocations_ = 0;
  std::size_t holders_ = 1;  // the pool object, live blocks, models, capture scopes and allocator registrations
  std::atomic<bool> owner_gone_{false};
  typename B::event_handle dep_event_{};
  native_pool_handle native_{};
  stream_handle passed_here_{};  // the stream whose host callable runs the teardown

  // A capture drawing from the pool: its id, the model memory its
  // allocations join, and for a body's capture the capture it joined (0: its own).
  struct capture_route {
    std::uint64_t id;
    pool_model_memory<B>* memory;
    std::uint64_t root;
  };
  std::mutex captures_m_;
  std::vector<capture_route> captures_;
  std::atomic<int> active_captures_{0};
  std::atomic<bool> capture_seen_{false};

  std::mutex exec_m_;
  stream_handle last_exec_{};
  typename B::event_handle exec_event_{};
  std::uint64_t exec_mark_ = 0;  // exec_event_'s record mark on last_exec_ (record_ordered)
  stream_handle issuing_on_{};    // the stream of the executions being issued (claimed, not yet issued)
  std::size_t issuing_ = 0;       // how many

  friend struct pool_model_memory<B>;
};

// What a model captured with a pool holds: the blocks its capture took.
template <class B>
struct pool_model_memory final : model_attachment<B> {
  using stream_handle = typename B::stream_handle;
  explicit pool_model_memory(pool_core<B>* p) noexcept : pool(p) { pool->hold(); }
  pool_model_memory(const pool_model_memory&) = delete;
  pool_model_memory& operator=(const pool_model_memory&) = delete;
  ~pool_model_memory() override {
    stream_handle last{};
    {
      std::lock_guard<std::mutex> lock(m);
      last = last_stream;
    }
    for (pool_block<B>* b : blocks) pool->drop_ref(b, last);  // never the last holder: this one holds the pool
    if (last != stream_handle{}) pool_unretain<B>(last);
    if (pool->unhold()) pool_core<B>::destroy(pool);
  }
  void before_execute(stream_handle s) override { pool->check_exclusive(s, *this); }
  void after_execute(stream_handle s) noexcept override {
    {
      std::lock_guard<std::mutex> lock(m);
      if (last_stream != s) {
        pool_retain<B>(s);
        if (last_stream != stream_handle{}) pool_unretain<B>(last_stream);
        last_stream = s;
      }
    }
    pool->end_exclusive(s, *this, true);
  }
  void execute_failed(stream_handle s) noexcept override { pool->end_exclusive(s, *this, false); }

  pool_core<B>* pool;
  std::vector<pool_block<B>*> blocks;  // guarded by the pool's lock while the capture runs
  std::mutex m;
  stream_handle last_stream{};
  std::size_t claims = 0;  // check_exclusive's claims not yet ended; guarded by the pool's exec_m_
};

template <class B>
std::shared_ptr<model_attachment<B>> pool_core<B>::begin_capture(std::uint64_t capture_id) {
  auto memory = std::make_shared<pool_model_memory<B>>(this);
  {
    self_biased_section lock(lock_);
    memory->blocks.reserve(16);
  }
  std::lock_guard<std::mutex> lock(captures_m_);
  captures_.push_back(capture_route{capture_id, memory.get(), 0});
  capture_seen_.store(true, std::memory_order_relaxed);
  active_captures_.store(static_cast<int>(captures_.size()), std::memory_order_release);
  return memory;
}

template <class B>
void pool_core<B>::hand_out(block* b, stream_handle s, std::size_t bytes, pool_model_memory<B>* capture) noexcept {
  if (b->refs == 0) {
    used_ += b->cls;
    used_high_ = std::max(used_high_, used_);
    ++holders_;
  }
  ++b->refs;  // the owner
  b->bytes = bytes;
  if (b->released.size() == 1 && b->released.front() == s) {
    b->released.clear();  // a same-stream hit: the release record's retain passes to the allocation
  } else {
    pool_retain<B>(s);
  }
  pool_unretain<B>(std::exchange(b->bound, s));
  if (capture != nullptr) {
    b->from_capture = true;
    ++b->refs;  // the model
    try {
      capture->blocks.push_back(b);
    } catch (...) {
      --b->refs;  // no room in the model's list: the allocation is the owner's alone
      b->from_capture = b->refs > 1;
    }
  }
  ++allocations_;
}

// The owner of a pool: the pool object, a span or a model deleting it last.
template <class B>
struct pool_span_owner {
  pool_core<B>* pool;
  pool_block<B>* b;
  void operator()(void*) const noexcept {
    if (pool->drop_ref(b)) pool_core<B>::destroy(pool);
  }
};

}  // namespace detail
/// @endcond

KEEL_END_NAMESPACE  // namespace keel
