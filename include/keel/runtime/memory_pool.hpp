// SPDX-License-Identifier: Apache-2.0
// basic_memory_pool (owning) and basic_memory_pool_ref: stream-ordered
// allocation with reuse by size class, CANN's and CUDA's reuse rules as pool
// attributes, a release threshold, trim_to and statistics; basic_pool_buffer,
// the allocation it hands out. Written once over the memory and event layers
// (keel/runtime/backend/memory_pool.hpp); models captured with a pool own
// what their capture took from it (keel/runtime/model.hpp).
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
#include <utility>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/runtime/backend.hpp"
#include "keel/runtime/backend/memory_pool.hpp"
#include "keel/runtime/model.hpp"
#include "keel/runtime/stream.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/**
 * @brief When a pool may hand memory released on one stream to an
 * allocation on another (CANN's aclrtMemPoolAttr reuse attributes, CUDA's
 * cudaMemPoolReuse*), and how much idle memory it keeps.
 *
 * A block released on stream S is always reused by later allocations on S
 * (stream order makes that safe). For another stream T:
 * - `follow_event_dependencies`: reuse once T's work is known to come after
 *   S's release. keel's own pool cannot see waits issued outside it, so it
 *   takes the dependency as given once S has passed the release (as below);
 * - `allow_opportunistic`: reuse if S has already passed the release when T
 *   allocates (asked with a stream query; never waits);
 * - `allow_internal_dependencies`: reuse anyway, making T wait for S's
 *   release point (an event recorded on S, waited on by T).
 * A block the rules refuse stays in the pool and a new one is reserved.
 *
 * `release_threshold`: idle bytes (reserved but not used) the pool keeps;
 * when a release leaves more idle, idle blocks whose releases have passed go
 * back to the backend until it is under the threshold. Default: keep all
 * (CANN's 0 frees idle memory at the next synchronize, which keel's own pool
 * does not see; trim_to() frees explicitly).
 */
struct pool_attributes {
  /// Reuse across streams ordered by events (see above).
  bool follow_event_dependencies = true;
  /// Reuse across streams when the release has already passed.
  bool allow_opportunistic = true;
  /// Reuse across streams by inserting the wait.
  bool allow_internal_dependencies = true;
  /// Idle bytes kept; above it, passed idle blocks are freed.
  std::size_t release_threshold = SIZE_MAX;
};

/** @brief How a pool is made. */
struct pool_options {
  /// The defaults: device memory, no max_size, every reuse rule, keep all idle memory.
  pool_options() = default;
  /// The defaults, with the pool called @p pool_name in diagnostics.
  pool_options(std::string pool_name) : name(std::move(pool_name)) {}  // NOLINT: {"name"} reads well

  /// The name in every diagnostic (empty: "pool #<n>").
  std::string name;
  /// Device memory or pinned host memory.
  memory_kind kind = memory_kind::device;
  /// Most bytes the pool reserves at once (0: up to the device's memory).
  std::size_t max_size = 0;
  /// The reuse rules and release threshold, changeable later (set_attributes).
  pool_attributes attributes;
};

/**
 * @brief A pool's figures at one moment. `reserved`: bytes the pool holds
 * from the backend (in use or idle); `used`: bytes handed out (in size
 * classes); `*_high`: their high-water marks since creation (or
 * reset_high_water()); `allocations`: allocate calls that succeeded; `hits`:
 * those served from memory the pool held; `backend_allocations`: blocks
 * reserved from the backend.
 */
struct pool_statistics {
  std::size_t reserved = 0;            ///< bytes held from the backend now
  std::size_t reserved_high = 0;       ///< most bytes held at once
  std::size_t used = 0;                ///< bytes handed out now
  std::size_t used_high = 0;           ///< most bytes handed out at once
  std::uint64_t allocations = 0;       ///< successful allocate calls
  std::uint64_t hits = 0;              ///< allocations served from held memory
  std::uint64_t backend_allocations = 0;  ///< blocks reserved from the backend
};

/// @cond
namespace detail {
// floor(log2(v)) for v > 0: one instruction where the compiler has it (a hit
// computes it twice), a loop elsewhere.
constexpr unsigned pool_floor_log2(std::size_t v) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  static_assert(sizeof(std::size_t) == sizeof(unsigned long long));
  return 63u - static_cast<unsigned>(__builtin_clzll(v));
#else
  unsigned lg = 0;
  while (v >>= 1) ++lg;
  return lg;
#endif
}
}  // namespace detail
/// @endcond

/**
 * @brief The size class of an allocation of @p bytes: what the pool reserves
 * and counts as used for it. 512 bytes at least, then four classes per power
 * of two (at most 25 % above the request). Throws: nothing; requests larger
 * than PTRDIFF_MAX have no class (the pool refuses them).
 */
constexpr std::size_t pool_size_class(std::size_t bytes) noexcept {
  if (bytes <= 512) return 512;
  const unsigned lg = detail::pool_floor_log2(bytes - 1);  // at least 9
  const std::size_t step = std::size_t{1} << (lg - 2);
  return (bytes + step - 1) & ~(step - 1);
}

template <KEEL_MEMORY_POOL_BACKEND B>
class basic_memory_pool;
template <KEEL_MEMORY_POOL_BACKEND B>
class basic_memory_pool_ref;
template <KEEL_MEMORY_POOL_BACKEND B>
class basic_pool_buffer;

/// @cond
namespace detail {

constexpr std::size_t pool_class_index(std::size_t cls) noexcept {
  if (cls <= 512) return 0;
  const unsigned lg = pool_floor_log2(cls - 1);
  return 1 + (lg - 9) * 4 + ((cls >> (lg - 2)) - 5);
}
inline constexpr std::size_t pool_class_count = pool_class_index(pool_size_class(PTRDIFF_MAX)) + 1;

// A test-and-set lock: a pool hit holds it for a few dozen instructions,
// cheaper than a mutex's lock and unlock.
class pool_spin_lock {
 public:
  void lock() noexcept {
    for (int spins = 0; locked_.exchange(true, std::memory_order_acquire); ++spins) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins > 64) std::this_thread::yield();
      }
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

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

// One block of memory the pool reserved from the backend. Its fields are
// guarded by the pool's lock.
template <class B>
struct pool_block {
  using stream_handle = typename B::stream_handle;
  typename B::buffer_handle buffer{};
  void* data = nullptr;
  std::size_t cls = 0;      // its size class (bytes reserved)
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

  pool_core(typename B::device_type& dev, pool_options options)
      : name_(options.name.empty() ? "pool #" + std::to_string(next_id()) : std::move(options.name)),
        kind_(options.kind),
        max_size_(options.max_size),
        attributes_(options.attributes),
        private_(dev),
        free_(pool_class_count) {
    if (kind_ == memory_kind::pageable_host)
      throw_error(errc::invalid_parameter, "keel::memory_pool", "a pool holds device or pinned host memory, not pageable");
  }
  pool_core(const pool_core&) = delete;
  pool_core& operator=(const pool_core&) = delete;

  ~pool_core() override {
    std::vector<block*> all;
    for (auto& list : free_)
      for (block* b : list) all.push_back(b);
    free_blocks(all, true);
    if (dep_event_ != typename B::event_handle{}) B::destroy_event(dep_event_);
    if (exec_event_ != typename B::event_handle{}) B::destroy_event(exec_event_);
    if (last_exec_ != stream_handle{}) pool_unretain<B>(last_exec_);
  }

  const std::string& name() const noexcept { return name_; }
  memory_kind kind() const noexcept { return kind_; }
  typename B::device_type& device() const { return private_.device(); }

  // ---- allocation ------------------------------------------------------

  block* allocate(stream_handle s, std::size_t bytes) {
    static constexpr const char* api = "keel::memory_pool::allocate";
    if (bytes > static_cast<std::size_t>(PTRDIFF_MAX))
      throw_error(errc::out_of_memory, api,
                  pool_text() + ": cannot allocate " + std::to_string(bytes) + " bytes: larger than the largest object");
    const std::size_t cls = pool_size_class(bytes);
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
      std::lock_guard<pool_spin_lock> lock(lock_);
      block* b = capture != nullptr ? take_shared(cls) : nullptr;
      if (b == nullptr) b = take_free(cls, s, capturing);
      if (b != nullptr) {
        hand_out(b, s, bytes, capture);
        ++hits_;
        return b;
      }
    }
    return allocate_new(s, bytes, cls, capture);
  }

  // The owner releases its allocation in stream @p s's order.
  bool release(block* b, stream_handle s) noexcept {
    const bool capturing = capture_seen_.load(std::memory_order_relaxed) && capturing_noexcept(s);
    std::lock_guard<pool_spin_lock> lock(lock_);
    if (b->from_capture && capturing) {
      // Released inside the capture: the model keeps it; later captures of
      // models that never run concurrently with this one may share it.
      if (b->refs > 1 && !b->in_capture_free) {
        b->in_capture_free = true;
        capture_free_.push_back(b);
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
    std::lock_guard<pool_spin_lock> lock(lock_);
    ++b->refs;
  }
  // A span or a model lets go of a block; true when the pool must be deleted.
  bool drop_ref(block* b, stream_handle released_on = stream_handle{}) noexcept {
    std::lock_guard<pool_spin_lock> lock(lock_);
    if (released_on != stream_handle{}) note_release(b, released_on);
    return drop_locked(b);
  }

  void rebind(block* b, stream_handle s) noexcept {
    pool_retain<B>(s);
    stream_handle old;
    {
      std::lock_guard<pool_spin_lock> lock(lock_);
      old = std::exchange(b->bound, s);
    }
    pool_unretain<B>(old);
  }

  // ---- trimming, attributes, statistics --------------------------------

  void trim_to(std::size_t keep) {
    std::vector<block*> victims;
    {
      std::lock_guard<pool_spin_lock> lock(lock_);
      if (keep < used_)
        throw_error(errc::invalid_parameter, "keel::memory_pool::trim_to",
                    pool_text() + ": cannot trim to " + std::to_string(keep) + " bytes: " + std::to_string(used_) +
                        " bytes are in use (trim_to never takes memory that is handed out)");
      collect_idle(reserved_ - keep, false, victims);
    }
    free_blocks(victims, true);
  }

  pool_statistics statistics() noexcept {
    std::lock_guard<pool_spin_lock> lock(lock_);
    return {reserved_, reserved_high_, used_, used_high_, allocations_, hits_, backend_allocations_};
  }
  void reset_high_water() noexcept {
    std::lock_guard<pool_spin_lock> lock(lock_);
    reserved_high_ = reserved_;
    used_high_ = used_;
  }
  pool_attributes attributes() noexcept {
    std::lock_guard<pool_spin_lock> lock(lock_);
    return attributes_;
  }
  void set_attributes(const pool_attributes& a) {
    std::vector<block*> victims;
    {
      std::lock_guard<pool_spin_lock> lock(lock_);
      attributes_ = a;
      if (reserved_ - used_ > a.release_threshold) collect_idle(reserved_ - used_ - a.release_threshold, true, victims);
    }
    free_blocks(victims, false);
  }

  // ---- lifetime: the pool object and every holder ------------------------

  void hold() noexcept {
    std::lock_guard<pool_spin_lock> lock(lock_);
    ++holders_;
  }
  // true when the caller must delete the pool.
  bool unhold() noexcept {
    std::lock_guard<pool_spin_lock> lock(lock_);
    return --holders_ == 0;
  }
  static void unhold_and_delete(pool_core* p) noexcept {
    if (p->unhold()) delete p;
  }
  std::size_t holders() noexcept {
    std::lock_guard<pool_spin_lock> lock(lock_);
    return holders_;
  }

  // ---- captures ----------------------------------------------------------

  std::shared_ptr<model_attachment<B>> begin_capture(std::uint64_t capture_id) override;
  void end_capture(std::uint64_t capture_id) noexcept override {
    std::lock_guard<std::mutex> lock(captures_m_);
    captures_.erase(std::remove_if(captures_.begin(), captures_.end(),
                                   [&](const auto& c) { return c.first == capture_id; }),
                    captures_.end());
    active_captures_.store(static_cast<int>(captures_.size()), std::memory_order_release);
  }

  // Models sharing this pool's memory never execute concurrently: the rule
  // is checked for executions on different streams (an event recorded after
  // each tells whether the last one has finished).
  void check_exclusive(stream_handle s) {
    std::lock_guard<std::mutex> lock(exec_m_);
    if (last_exec_ == stream_handle{} || last_exec_ == s) return;
    bool finished = false;
    try {
      finished = B::query(exec_event_);
    } catch (...) {
      finished = true;  // the execution failed: it runs no more
    }
    if (!finished)
      throw_error(errc::invalid_state, "keel::model::execute",
                  pool_text() + ": models sharing its memory would execute concurrently: an execution on stream " +
                      std::to_string(B::id_of(last_exec_)) + " has not finished and this one is on stream " +
                      std::to_string(B::id_of(s)) +
                      " (order them with an event, or capture them into separate pools)");
  }
  void note_exclusive(stream_handle s) noexcept {
    std::lock_guard<std::mutex> lock(exec_m_);
    try {
      if (exec_event_ == typename B::event_handle{}) exec_event_ = B::create_event(device(), event_flags::default_);
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
    std::lock_guard<pool_spin_lock> lock(lock_);
    return std::any_of(blocks.begin(), blocks.end(), [](const block* b) { return b->shared; });
  }

  std::string pool_text() const { return "keel::memory_pool '" + name_ + "'"; }

 private:
  static std::uint64_t next_id() noexcept {
    static std::atomic<std::uint64_t> id{1};
    return id.fetch_add(1, std::memory_order_relaxed);
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
    for (auto& c : captures_)
      if (c.first == id) return c.second;
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
  block* take_shared(std::size_t cls) noexcept {
    for (std::size_t i = capture_free_.size(); i-- > 0;) {
      block* b = capture_free_[i];
      if (b->cls == cls) {
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

  block* allocate_new(stream_handle s, std::size_t bytes, std::size_t cls, pool_model_memory<B>* capture) {
    static constexpr const char* api = "keel::memory_pool::allocate";
    {
      std::lock_guard<pool_spin_lock> lock(lock_);
      if (max_size_ != 0 && (cls > max_size_ || reserved_ > max_size_ - cls))
        throw_error(errc::out_of_memory, api,
                    pool_text() + ": cannot allocate " + std::to_string(bytes) + " bytes (size class " +
                        std::to_string(cls) + "): " + std::to_string(reserved_) + " of its max_size " +
                        std::to_string(max_size_) + " bytes are reserved");
    }
    auto fresh = std::make_unique<block>();
    fresh->released.reserve(2);
    try {
      fresh->buffer = B::allocate(private_.native_handle(), cls, kind_);
    } catch (const error& e) {
      if (e.code() != make_error_code(errc::out_of_memory)) throw;
      throw_error(errc::out_of_memory, api, pool_text() + ": cannot reserve " + std::to_string(cls) +
                                                " bytes for an allocation of " + std::to_string(bytes) + ": " + e.what());
    }
    fresh->data = B::data(fresh->buffer);
    fresh->cls = cls;
    block* b = fresh.release();
    std::lock_guard<pool_spin_lock> lock(lock_);
    reserved_ += cls;
    reserved_high_ = std::max(reserved_high_, reserved_);
    ++backend_allocations_;
    hand_out(b, s, bytes, capture);
    return b;
  }

  // Caller holds lock_. true when the pool must be deleted.
  bool drop_locked(block* b) noexcept {
    if (--b->refs > 0) return false;
    if (b->in_capture_free) {
      capture_free_.erase(std::find(capture_free_.begin(), capture_free_.end(), b));
      b->in_capture_free = false;
    }
    b->from_capture = false;
    b->shared = false;
    pool_unretain<B>(std::exchange(b->bound, stream_handle{}));
    used_ -= b->cls;
    free_[pool_class_index(b->cls)].push_back(b);  // capacity for every block is reserved when it is made
    if (reserved_ - used_ > attributes_.release_threshold) trim_idle_locked();
    return --holders_ == 0;
  }

  // Frees idle blocks whose releases have passed until under the threshold.
  void trim_idle_locked() noexcept {
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
    B::free_async(b->buffer);  // ordered on the pool's own stream, which issued nothing that uses it
    delete b;
  }

  // Returns blocks taken out of the lists to the backend. A release that has
  // not passed yet orders the free behind it: an event recorded on the
  // releasing stream, waited on by the pool's own stream, which frees.
  void free_blocks(std::vector<block*>& blocks, bool wait_for_releases) noexcept {
    for (block* b : blocks) {
      bool ordered = true;
      for (stream_handle r : b->released) {
        if (passed(r)) continue;
        if (!wait_for_releases) {
          ordered = false;
          break;
        }
        try {
          if (capturing_noexcept(r)) {
            while (!passed(r)) std::this_thread::yield();  // an event recorded there would be captured
            continue;
          }
          std::lock_guard<pool_spin_lock> lock(lock_);
          if (dep_event_ == typename B::event_handle{}) dep_event_ = B::create_event(device(), event_flags::default_);
          B::record(dep_event_, r);
          B::wait(private_.native_handle(), dep_event_);
        } catch (...) {
          while (!passed(r)) std::this_thread::yield();
        }
      }
      if (ordered) {
        destroy_block(b);
      } else {
        std::lock_guard<pool_spin_lock> lock(lock_);
        reserved_ += b->cls;
        free_[pool_class_index(b->cls)].push_back(b);
      }
    }
    blocks.clear();
  }

  std::string name_;
  memory_kind kind_;
  std::size_t max_size_;
  pool_attributes attributes_;
  basic_stream<B> private_;  // reserves and frees: never captures, never waits on the user's streams but to free
  pool_spin_lock lock_;
  std::vector<std::vector<block*>> free_;
  std::vector<block*> capture_free_;
  std::size_t reserved_ = 0, reserved_high_ = 0, used_ = 0, used_high_ = 0;
  std::uint64_t allocations_ = 0, hits_ = 0, backend_allocations_ = 0;
  std::size_t holders_ = 1;  // the pool object, live blocks, models and capture scopes
  typename B::event_handle dep_event_{};

  std::mutex captures_m_;
  std::vector<std::pair<std::uint64_t, pool_model_memory<B>*>> captures_;
  std::atomic<int> active_captures_{0};
  std::atomic<bool> capture_seen_{false};

  std::mutex exec_m_;
  stream_handle last_exec_{};
  typename B::event_handle exec_event_{};

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
    if (pool->unhold()) delete pool;
  }
  void before_execute(stream_handle s) override {
    if (pool->holds_shared(blocks)) pool->check_exclusive(s);
  }
  void after_execute(stream_handle s) noexcept override {
    {
      std::lock_guard<std::mutex> lock(m);
      if (last_stream != s) {
        pool_retain<B>(s);
        if (last_stream != stream_handle{}) pool_unretain<B>(last_stream);
        last_stream = s;
      }
    }
    if (pool->holds_shared(blocks)) pool->note_exclusive(s);
  }

  pool_core<B>* pool;
  std::vector<pool_block<B>*> blocks;  // guarded by the pool's lock while the capture runs
  std::mutex m;
  stream_handle last_stream{};
};

template <class B>
std::shared_ptr<model_attachment<B>> pool_core<B>::begin_capture(std::uint64_t capture_id) {
  auto memory = std::make_shared<pool_model_memory<B>>(this);
  {
    std::lock_guard<pool_spin_lock> lock(lock_);
    memory->blocks.reserve(16);
  }
  std::lock_guard<std::mutex> lock(captures_m_);
  captures_.emplace_back(capture_id, memory.get());
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
  free_[pool_class_index(b->cls)].reserve(free_[pool_class_index(b->cls)].size() + 1);
  ++allocations_;
}

// The owner of a pool: the pool object, a span or a model deleting it last.
template <class B>
struct pool_span_owner {
  pool_core<B>* pool;
  pool_block<B>* b;
  void operator()(void*) const noexcept {
    if (pool->drop_ref(b)) delete pool;
  }
};

}  // namespace detail
/// @endcond

/**
 * @brief One allocation from a basic_memory_pool: like basic_buffer, its
 * release is ordered on a stream (the one it was allocated on, or the one
 * rebind() names), and span() shares ownership so that work which uses it
 * (and every model that captured that work) keeps it alive.
 *
 * Ownership: unique (move-only); destroying or reset() releases it in its
 * stream's order; moved-from is empty. Thread safety: none of its own.
 * Exceptions: release() throws keel::error for the wrong stream (object
 * unchanged); the destructor is noexcept.
 */
template <KEEL_MEMORY_POOL_BACKEND B>
class basic_pool_buffer {
 public:
  /// An empty allocation.
  basic_pool_buffer() noexcept = default;
  /// Takes the other object's allocation; the other is left empty.
  basic_pool_buffer(basic_pool_buffer&& o) noexcept
      : pool_(std::exchange(o.pool_, nullptr)), b_(std::exchange(o.b_, nullptr)) {}
  /// Releases what this holds (in its stream's order), then takes the other's allocation.
  basic_pool_buffer& operator=(basic_pool_buffer&& o) noexcept {
    if (this != &o) {
      reset();
      pool_ = std::exchange(o.pool_, nullptr);
      b_ = std::exchange(o.b_, nullptr);
    }
    return *this;
  }
  basic_pool_buffer(const basic_pool_buffer&) = delete;
  basic_pool_buffer& operator=(const basic_pool_buffer&) = delete;
  ~basic_pool_buffer() { reset(); }

  /// Whether this holds an allocation.
  explicit operator bool() const noexcept { return b_ != nullptr; }
  /** @brief The memory (host-addressable on the host backend). @throws keel::error invalid_handle if empty. */
  void* data() const { return checked("keel::pool_buffer::data")->data; }
  /// data() as a pointer to @p T. @throws keel::error invalid_handle if empty.
  template <class T>
  T* data_as() const {
    return static_cast<T*>(data());
  }
  /// The bytes asked for. @throws keel::error invalid_handle if empty.
  std::size_t size() const { return checked("keel::pool_buffer::size")->bytes; }
  /// The bytes reserved for it (its size class). @throws keel::error invalid_handle if empty.
  std::size_t capacity() const { return checked("keel::pool_buffer::capacity")->cls; }
  /// The stream its release is ordered on. @throws keel::error invalid_handle if empty.
  basic_stream_ref<B> stream() const {
    return basic_stream_ref<B>::adopt(checked("keel::pool_buffer::stream")->bound);
  }
  /** @brief A span sharing ownership of the allocation (for copies and kernel arguments). */
  memory_span span() const {
    detail::pool_block<B>* b = checked("keel::pool_buffer::span");
    std::shared_ptr<void> owner(b->data, detail::pool_span_owner<B>{pool_, b});  // may throw: nothing taken yet
    pool_->add_ref(b);
    return {b->data, b->bytes, pool_->kind(), std::move(owner)};
  }

  /**
   * @brief Releases the allocation in @p stream's order and leaves this
   * empty. @throws keel::error invalid_parameter when @p stream is not the
   * stream the allocation is ordered on (rebind() first: the caller orders
   * the new stream after every use), invalid_handle if empty; nothing changes then.
   */
  void release(basic_stream_ref<B> stream) {
    static constexpr const char* api = "keel::pool_buffer::release";
    detail::pool_block<B>* b = checked(api);
    if (stream.checked(api) != b->bound)
      throw_error(errc::invalid_parameter, api,
                  pool_->pool_text() + ": wrong stream: the allocation is ordered on stream " +
                      std::to_string(B::id_of(b->bound)) + ", released on stream " + std::to_string(stream.id()) +
                      " (rebind() it to that stream after ordering the stream behind its uses)");
    reset();
  }
  /**
   * @brief Orders the allocation's release on @p stream from now on (the
   * caller has ordered @p stream after its uses, e.g. through an event).
   * @throws keel::error invalid_handle if empty or @p stream is empty.
   */
  void rebind(basic_stream_ref<B> stream) {
    static constexpr const char* api = "keel::pool_buffer::rebind";
    detail::pool_block<B>* b = checked(api);
    pool_->rebind(b, stream.checked(api));
  }
  /** @brief Releases the allocation in its stream's order; empty afterwards. Throws: nothing. */
  void reset() noexcept {
    if (b_ == nullptr) return;
    detail::pool_core<B>* pool = std::exchange(pool_, nullptr);
    detail::pool_block<B>* b = std::exchange(b_, nullptr);
    if (pool->release(b, b->bound)) delete pool;
  }
  /// Exchanges what this and the other object hold.
  void swap(basic_pool_buffer& o) noexcept {
    std::swap(pool_, o.pool_);
    std::swap(b_, o.b_);
  }
  friend void swap(basic_pool_buffer& a, basic_pool_buffer& b) noexcept { a.swap(b); }
  /// Whether the allocation came from @p pool.
  bool from(basic_memory_pool_ref<B> pool) const noexcept { return pool_ != nullptr && pool_ == pool.core_; }

 private:
  friend class basic_memory_pool_ref<B>;
  basic_pool_buffer(detail::pool_core<B>* pool, detail::pool_block<B>* b) noexcept : pool_(pool), b_(b) {}
  detail::pool_block<B>* checked(const char* api) const {
    if (b_ == nullptr) detail::throw_empty(api);
    return b_;
  }
  detail::pool_core<B>* pool_ = nullptr;
  detail::pool_block<B>* b_ = nullptr;
};

/**
 * @brief A non-owning view of a memory pool: everything but destruction.
 *
 * Ownership: none; the pool object must outlive the view. Thread safety:
 * every call is thread-safe (allocate and release from any thread and
 * stream). Exceptions: keel::error naming the pool and the rule broken; a
 * failed call changes nothing (strong guarantee).
 */
template <KEEL_MEMORY_POOL_BACKEND B>
class basic_memory_pool_ref {
  static_assert(detail::memory_pool_layer::check<B>::value);  // names the missing call of the layers it needs

 public:
  /// An empty view.
  constexpr basic_memory_pool_ref() noexcept = default;

  /**
   * @brief An allocation of @p bytes whose release is ordered on @p stream:
   * reuses a block of its size class when the reuse rules allow it,
   * otherwise reserves one. On a stream capturing with this pool, the
   * allocation belongs to the model as well.
   * @throws keel::error out_of_memory (beyond max_size or the device's
   * memory; the pool is unchanged), invalid_handle for an empty view or stream.
   */
  basic_pool_buffer<B> allocate(basic_stream_ref<B> stream, std::size_t bytes) const {
    static constexpr const char* api = "keel::memory_pool::allocate";
    auto s = stream.checked(api);
    detail::pool_block<B>* b = core(api)->allocate(s, bytes);
    return basic_pool_buffer<B>(core_, b);
  }
  /**
   * @brief Releases @p buffer in @p stream's order. @throws keel::error
   * invalid_parameter naming the pool when the buffer comes from another
   * pool or @p stream is not its stream; nothing changes then.
   */
  void release(basic_pool_buffer<B>& buffer, basic_stream_ref<B> stream) const {
    static constexpr const char* api = "keel::memory_pool::release";
    core(api);
    if (buffer && buffer.pool_ != core_)
      throw_error(errc::invalid_parameter, api,
                  core_->pool_text() + ": the allocation comes from another pool (" + buffer.pool_->pool_text() + ")");
    buffer.release(stream);
  }
  /**
   * @brief Frees idle memory until at most @p keep bytes are reserved
   * (idle blocks whose releases have not passed are freed behind them).
   * @throws keel::error invalid_parameter when @p keep is below the bytes in
   * use (the pool is unchanged).
   */
  void trim_to(std::size_t keep) const { core("keel::memory_pool::trim_to")->trim_to(keep); }
  /// The figures now. @throws keel::error invalid_handle for an empty view.
  pool_statistics statistics() const { return core("keel::memory_pool::statistics")->statistics(); }
  /// Restarts the high-water marks at the current figures. @throws keel::error invalid_handle for an empty view.
  void reset_high_water() const { core("keel::memory_pool::reset_high_water")->reset_high_water(); }
  /// The reuse rules and release threshold. @throws keel::error invalid_handle for an empty view.
  pool_attributes attributes() const { return core("keel::memory_pool::attributes")->attributes(); }
  /// Changes the reuse rules and the threshold (applied at once). @throws keel::error invalid_handle for an empty view.
  void set_attributes(const pool_attributes& a) const { core("keel::memory_pool::set_attributes")->set_attributes(a); }
  /// The pool's name, as diagnostics give it. @throws keel::error invalid_handle for an empty view.
  const std::string& name() const { return core("keel::memory_pool::name")->name(); }
  /// Device or pinned host memory. @throws keel::error invalid_handle for an empty view.
  memory_kind kind() const { return core("keel::memory_pool::kind")->kind(); }
  /// Whether this views a pool.
  constexpr explicit operator bool() const noexcept { return core_ != nullptr; }
  friend bool operator==(basic_memory_pool_ref a, basic_memory_pool_ref b) noexcept { return a.core_ == b.core_; }
  friend bool operator!=(basic_memory_pool_ref a, basic_memory_pool_ref b) noexcept { return a.core_ != b.core_; }

  /// @cond
  // What basic_capture_scope takes allocations of a capture from.
  std::shared_ptr<detail::capture_memory_source<B>> capture_source() const {
    detail::pool_core<B>* c = core("keel::capture_scope");
    c->hold();
    return std::shared_ptr<detail::capture_memory_source<B>>(c, [](detail::capture_memory_source<B>* p) {
      detail::pool_core<B>::unhold_and_delete(static_cast<detail::pool_core<B>*>(p));
    });
  }
  /// @endcond

 private:
  friend class basic_memory_pool<B>;
  friend class basic_pool_buffer<B>;
  explicit basic_memory_pool_ref(detail::pool_core<B>* c) noexcept : core_(c) {}
  detail::pool_core<B>* core(const char* api) const {
    if (core_ == nullptr) detail::throw_empty(api);
    return core_;
  }
  detail::pool_core<B>* core_ = nullptr;
};

/**
 * @brief A stream-ordered memory pool (keel's own, over the memory and event
 * layers): allocations by size class, released in stream order and reused
 * under the pool's attributes, with statistics readable at any time.
 *
 * Destroying the pool while allocations, spans or models still hold its
 * memory is deferred: the pool takes no new allocations from its owner, and
 * its memory goes back to the backend when the last holder lets go.
 *
 * Ownership: unique (move-only); the memory it reserved is freed when the
 * pool and every holder are gone. Thread safety: every call is thread-safe.
 * Exceptions: as basic_memory_pool_ref; the constructor throws what
 * creating the pool's own stream throws; the destructor is noexcept.
 *
 * @code
 * keel::host::memory_pool pool{dev, {"activations"}};
 * auto x = pool.allocate(stream, 4096);          // released in stream's order when x goes
 * stream.launch(kind, kernel, x.span());
 * @endcode
 */
template <KEEL_MEMORY_POOL_BACKEND B>
class basic_memory_pool : public basic_memory_pool_ref<B> {
 public:
  /// The backend's device type.
  using device_type = typename B::device_type;
  /// An empty pool.
  basic_memory_pool() noexcept = default;
  /// A pool on @p dev with @p options (name, memory kind, max_size, attributes).
  explicit basic_memory_pool(device_type& dev, pool_options options = {})
      : basic_memory_pool_ref<B>(new detail::pool_core<B>(dev, std::move(options))) {}
  /// Takes the other pool; the other is left empty.
  basic_memory_pool(basic_memory_pool&& o) noexcept : basic_memory_pool_ref<B>(std::exchange(o.core_, nullptr)) {}
  /// Destroys this pool (deferred while held), then takes the other.
  basic_memory_pool& operator=(basic_memory_pool&& o) noexcept {
    if (this != &o) {
      reset();
      this->core_ = std::exchange(o.core_, nullptr);
    }
    return *this;
  }
  basic_memory_pool(const basic_memory_pool&) = delete;
  basic_memory_pool& operator=(const basic_memory_pool&) = delete;
  ~basic_memory_pool() { reset(); }

  /// A non-owning view.
  basic_memory_pool_ref<B> ref() const noexcept { return basic_memory_pool_ref<B>(this->core_); }
  /** @brief Destroys the pool now (deferred while its memory is held); empty afterwards. Throws: nothing. */
  void reset() noexcept {
    if (auto* c = std::exchange(this->core_, nullptr)) detail::pool_core<B>::unhold_and_delete(c);
  }
  /** @brief Whether allocations, spans, models or capture scopes still hold the pool's memory. */
  bool held() const { return this->core("keel::memory_pool::held")->holders() > 1; }
};

KEEL_END_NAMESPACE  // namespace keel
