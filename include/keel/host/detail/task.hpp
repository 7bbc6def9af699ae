// SPDX-License-Identifier: Apache-2.0
// The host backend's task machinery: intrusive reference counts, the
// type-erased one-shot task a stream's ring holds, the reusable task a model
// replays, and the lock-free ring a stream's worker drains.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "keel/core/asymmetric_fence.hpp"
#include "keel/core/biased_lock.hpp"
#include "keel/core/error.hpp"
#include "keel/host/detail/spin.hpp"
#include "keel/runtime/types.hpp"


#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
using ::keel::detail::asymmetric_fence;
using ::keel::detail::self_biased_lock;
// Intrusive counts: a native handle is a plain pointer (trivially copyable, as
// unique_handle wants) and a task keeps what it uses alive with one increment.
class ref_counted {
 public:
  void retain() const noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  bool release_ref() const noexcept { return refs_.fetch_sub(1, std::memory_order_acq_rel) == 1; }
  // Whether the caller's reference is the only one: every other holder's
  // use happened before (acquire pairs with release_ref), so the object may
  // be reused when no one else can take a new reference.
  bool sole_reference() const noexcept { return refs_.load(std::memory_order_acquire) == 1; }
  // An object whose last reference went and that was kept for reuse (a
  // recycled node_table) is counted again: one reference, the taker's.
  void revive() const noexcept { refs_.store(1, std::memory_order_relaxed); }

 protected:
  ref_counted() = default;
  ~ref_counted() = default;

 private:
  mutable std::atomic<long> refs_{1};
};

template <class T, class = void>
struct has_recycle : std::false_type {};
template <class T>
struct has_recycle<T, std::void_t<decltype(T::recycle(static_cast<T*>(nullptr)))>> : std::true_type {};

template <class T>
class ref_ptr {
 public:
  struct adopt_tag {};
  ref_ptr() noexcept = default;
  explicit ref_ptr(T* p) noexcept : p_(p) {
    if (p_) p_->retain();
  }
  ref_ptr(T* p, adopt_tag) noexcept : p_(p) {}
  ref_ptr(const ref_ptr& o) noexcept : ref_ptr(o.p_) {}
  ref_ptr(ref_ptr&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  ref_ptr& operator=(ref_ptr o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~ref_ptr() { drop(p_); }
  T* get() const noexcept { return p_; }
  T* operator->() const noexcept { return p_; }
  T& operator*() const noexcept { return *p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  T* release() noexcept { return std::exchange(p_, nullptr); }
  // The last reference deletes, or hands the object to T::recycle where T
  // has one (a node_table goes back to its model for reuse).
  static void drop(T* p) noexcept {
    if (p && p->release_ref()) {
      if constexpr (has_recycle<T>::value) {
        T::recycle(p);
      } else {
        delete p;
      }
    }
  }

 private:
  T* p_ = nullptr;
};

// One slot of a stream's ring, a cache line each: a sequence number that
// says the slot is full, a function pointer, and 48 bytes in which a small
// callable lives in place, so a tiny task (or a kernel with a few scalar
// arguments) allocates nothing.
struct alignas(64) slot {
  // run == false: the stream is in its error state; work is destroyed
  // unrun, control tasks (event records, releases) still run. context: what
  // the stream passes every task (the host device), so a kernel's body need
  // not carry it.
  using fn_type = void (*)(void* storage, void* context, bool run);
  std::atomic<std::uint64_t> sequence{0};  // index + 1 once the task is in
  fn_type fn = nullptr;
  alignas(8) unsigned char storage[48];
};

template <class T>
inline constexpr bool fits_in_slot = sizeof(T) <= sizeof(slot::storage) && alignof(T) <= 8 &&
                                     std::is_nothrow_move_constructible_v<T>;

// Whether a task of type T gets the next word of its slot written (see
// task_ring::widen_small_task): every callable of at most 8 bytes. The
// runtime benchmarks specialise it false for one functor, so that the pair
// BM_stream_eager_tiny / BM_unwidened_eager_tiny measures, in one process,
// what the store buys.
template <class T>
struct widens_small_task : std::bool_constant<sizeof(T) <= 8> {};

// A task is callable as f() or f(context).
template <class T>
void invoke_task(T& t, void* context) {
  if constexpr (std::is_invocable_v<T&, void*>) {
    t(context);
  } else {
    (void)context;
    t();
  }
}

// A task that decides itself what to do in the error state (a model
// execution still runs its event operations): called as f(work) with
// work == false when the stream is failed. A wrapper type, not a call
// signature, says so, so no user callable is ever mistaken for one.
template <class F>
struct failure_aware {
  F fn;
  void operator()(bool work) { fn(work); }
  void operator()(bool work) const { fn(work); }
};
template <class F>
failure_aware<std::decay_t<F>> make_failure_aware(F&& f) {
  return {std::forward<F>(f)};
}
template <class T>
struct is_failure_aware : std::false_type {};
template <class F>
struct is_failure_aware<failure_aware<F>> : std::true_type {};

// A failure-aware task always runs (and is told whether work may run); any
// other runs only if it is a control task or the stream is not failed.
template <bool Control, class T>
void run_task(T& t, void* context, bool run) {
  if constexpr (is_failure_aware<T>::value) {
    (void)context;
    t(run);
  } else if (Control || run) {
    invoke_task(t, context);
  }
}

template <bool Control, class T>
void slot_run_inline(void* storage, void* context, bool run) {
  T* t = std::launder(reinterpret_cast<T*>(storage));
  struct destroy {
    T* t;
    ~destroy() { t->~T(); }
  } d{t};
  run_task<Control>(*t, context, run);
}

template <bool Control, class T>
void slot_run_heap(void* storage, void* context, bool run) {
  std::unique_ptr<T> t(*std::launder(reinterpret_cast<T**>(storage)));
  run_task<Control>(*t, context, run);
}

// The lock-free hand-off between any number of submitting threads and one
// worker. Producers serialise on a lock that shares a line only with the
// producers' own index; the worker never touches that line. A slot's own
// sequence number publishes it, so the only lines that travel from a
// producer to the worker are the slots themselves.
//
// The lock is biased to the thread that feeds the stream (self_biased_lock):
// that thread enters with plain stores, where a locked instruction would
// wait, at every task, for the previous task's slot line to come back from
// the worker (a locked instruction drains the store buffer), a wait as long
// as the rest of a tiny task. A stream fed
// by several threads in turn takes the plain spin lock.
class task_ring {
 public:
  static constexpr std::size_t capacity = 2048;

  task_ring() : slots_(new slot[capacity]) {}

  // Constructs the task in its slot. A callable too big for a slot is boxed
  // before the lock is taken, so nothing inside the lock can throw but the
  // refusal of a task filling its own stream (acquire_slot).
  // Returns the task's index in the stream (its position in stream order).
  template <bool Control, class F>
  std::uint64_t push(F&& f) {
    using T = std::decay_t<F>;
    if constexpr (fits_in_slot<T> && std::is_nothrow_constructible_v<T, F&&>) {
      const bool owned = begin_section();
      const std::uint64_t t = tail_.load(std::memory_order_relaxed);
      slot& s = acquire_slot(t, owned);
      ::new (static_cast<void*>(s.storage)) T(std::forward<F>(f));
      widen_small_task<T>(s);
      s.fn = &slot_run_inline<Control, T>;
      publish(s, t, owned);
      return t;
    } else if constexpr (fits_in_slot<T>) {
      // A copy that may throw is made before the section; the move into
      // the slot cannot.
      T local(std::forward<F>(f));
      const bool owned = begin_section();
      const std::uint64_t t = tail_.load(std::memory_order_relaxed);
      slot& s = acquire_slot(t, owned);
      ::new (static_cast<void*>(s.storage)) T(std::move(local));
      widen_small_task<T>(s);
      s.fn = &slot_run_inline<Control, T>;
      publish(s, t, owned);
      return t;
    } else {
      std::unique_ptr<T> boxed(new T(std::forward<F>(f)));
      const bool owned = begin_section();
      const std::uint64_t t = tail_.load(std::memory_order_relaxed);
      slot& s = acquire_slot(t, owned);
      ::new (static_cast<void*>(s.storage)) T*(boxed.release());
      s.fn = &slot_run_heap<Control, T>;
      publish(s, t, owned);
      return t;
    }
  }

  // The worker's thread, set once when it starts.
  void set_consumer(std::thread::id id) noexcept { consumer_.store(id, std::memory_order_relaxed); }

  /** Tasks submitted so far. */
  std::uint64_t tail() const noexcept { return tail_.load(std::memory_order_seq_cst); }
  /** Tasks finished so far. */
  std::uint64_t head() const noexcept { return head_.load(std::memory_order_seq_cst); }

  // Consumer side: the slot at index h, if it is full.
  slot* ready(std::uint64_t h) noexcept {
    slot& s = at(h);
    return s.sequence.load(std::memory_order_seq_cst) == h + 1 ? &s : nullptr;
  }
  void set_head(std::uint64_t h, std::memory_order order) noexcept { head_.store(h, order); }

  // True when publishing costs no store-load barrier and the worker must
  // issue asymmetric_fence::heavy() before it sleeps.
  bool light_publish() const noexcept { return light_publish_; }

 private:
  slot& at(std::uint64_t index) noexcept { return slots_[index & (capacity - 1)]; }
  // The producers' section, entered lock-free by the lock's owner (true) or
  // locked. Not an RAII guard: the section ends in publish() or before the
  // one throw (refuse_own_fill), so push() needs no landing pad and keeps
  // the section's state in registers.
  bool begin_section() noexcept {
    if (KEEL_LIKELY(lock_.enter())) return true;
    lock_.lock();
    return false;
  }
  void end_section(bool owned) noexcept {
    if (owned) {
      lock_.leave();
    } else {
      lock_.unlock();
    }
  }
  // Caller is inside the producers' section. A full ring waits for the
  // worker, unless the caller is the worker itself (a task filling its own
  // stream would wait for itself forever): that ends the section and throws
  // would_deadlock.
  slot& acquire_slot(std::uint64_t t, bool owned) {
    while (KEEL_UNLIKELY(t - cached_head_ >= capacity)) {
      cached_head_ = head_.load(std::memory_order_acquire);
      if (t - cached_head_ < capacity) break;
      if (std::this_thread::get_id() == consumer_.load(std::memory_order_relaxed)) {
        end_section(owned);
        refuse_own_fill();
      }
      std::this_thread::yield();  // full: the worker is behind
    }
    // No prefetch of a later slot here: __builtin_prefetch(p, 1) compiles
    // to a read prefetch (prefetcht0) without -mprfchw, which takes the line
    // shared and leaves the store its upgrade anyway, and keeps the
    // submitter in step with the worker's reads (a tiny task then costs
    // several times what it does without).
    return at(t);
  }
  // A callable of at most 8 bytes (a lambda capturing one pointer: the
  // tiniest host task) also gets the next word of its slot written (zero;
  // nothing reads it), so that the submitter writes the slot's line as a
  // task of 16 bytes does: with one store fewer per line, submitter and
  // worker can fall into step at a line transfer per task. The store costs
  // nothing; what it buys is measured by BM_stream_eager_tiny against
  // BM_unwidened_eager_tiny (the same task without it) in one run.
  template <class T>
  static void widen_small_task(slot& s) noexcept {
    if constexpr (widens_small_task<T>::value) {
      const std::uint64_t zero = 0;
      std::memcpy(s.storage + 8, &zero, sizeof zero);
    } else {
      (void)s;
    }
  }
  [[noreturn]] static void refuse_own_fill() {
    ::keel::detail::throw_composed(
        errc::would_deadlock, "keel::stream (a task issuing to its own stream)",
        {"the stream's queue of ", capacity,
         " tasks is full and only this task's stream could drain it: a task cannot wait for itself"});
  }
  void publish(slot& s, std::uint64_t t, bool owned) noexcept {
    // Either the worker sees this task or the submitter sees it asleep
    // (worker_wake). With the asymmetric fence a plain release store
    // suffices: the worker's membarrier() supplies the store-load barrier.
    // Without it, seq_cst pairs with the worker's seq_cst store of its
    // sleeping flag. On the lock owner's path nothing after this store is a
    // locked instruction (leave() is a plain store), so the slot's store
    // reaches the worker before the submitter's load of the flag only
    // through that membarrier(): the owner's entry exists only where the
    // fence does (biased_lock::biasable_ and light_publish_ are one answer).
    if (light_publish_) {
      s.sequence.store(t + 1, std::memory_order_release);
    } else {
      s.sequence.store(t + 1, std::memory_order_seq_cst);
    }
    tail_.store(t + 1, std::memory_order_relaxed);
    end_section(owned);
  }

  const bool light_publish_ = asymmetric_fence::available();
  alignas(64) self_biased_lock lock_;
  std::uint64_t cached_head_ = 0;
  std::atomic<std::uint64_t> tail_{0};
  std::atomic<std::thread::id> consumer_{};
  alignas(64) std::atomic<std::uint64_t> head_{0};
  alignas(64) std::unique_ptr<slot[]> slots_;
};

// A task a model keeps and runs many times: one indirect call per replay, no
// queue. A callable of up to 48 bytes lives inside the task (a kernel with a
// few arguments), so capturing and updating allocate nothing for it.
class replay_task {
 public:
  enum class category : std::uint8_t { host, kernel, copy, event, group, model };

  template <class F>
  replay_task(F&& f, category cat, kernel_kind kind = kernel_kind{""}) : kind_(kind), category_(cat) {
    using T = std::decay_t<F>;
    if constexpr (sizeof(T) <= sizeof(storage_) && alignof(T) <= alignof(std::max_align_t) &&
                  std::is_nothrow_move_constructible_v<T>) {
      obj_ = ::new (static_cast<void*>(storage_)) T(std::forward<F>(f));
      manage_ = [](op o, void* self, void* to) noexcept {
        T* t = static_cast<T*>(self);
        if (o == op::move) ::new (to) T(std::move(*t));
        t->~T();
      };
    } else {
      obj_ = new T(std::forward<F>(f));
      manage_ = [](op o, void* self, void*) noexcept {
        if (o == op::destroy) delete static_cast<T*>(self);
      };
      heap_ = true;
    }
    if constexpr (is_failure_aware<T>::value) {
      invoke_ = [](void* p, bool work) { (*static_cast<T*>(p))(work); };
      skips_itself_ = true;
    } else {
      invoke_ = [](void* p, bool) { (*static_cast<T*>(p))(); };
    }
  }
  replay_task(replay_task&& o) noexcept { take(o); }
  replay_task& operator=(replay_task&& o) noexcept {
    if (this != &o) {
      reset();
      take(o);
    }
    return *this;
  }
  replay_task(const replay_task&) = delete;
  replay_task& operator=(const replay_task&) = delete;
  ~replay_task() { reset(); }

  void operator()() const { invoke_(obj_, true); }
  // After a failure earlier in the same execution, or on a stream in its
  // error state: event operations still run (so other streams never
  // deadlock) and a nested model execution runs its own; work does not.
  bool runs_when_failed() const noexcept { return category_ == category::event || skips_itself_; }
  void run_failed() const { invoke_(obj_, false); }
  kernel_kind kind() const noexcept { return kind_; }
  category cat() const noexcept { return category_; }
  // The stored callable, for a rebuild that knows its type (task_records.hpp's kernel_rebind).
  const void* object() const noexcept { return obj_; }
  // Whether @p o stores a callable of this task's type (then a rebuild that
  // knows the type may assign it in place); false may be a false negative.
  bool same_callable(const replay_task& o) const noexcept {
    return obj_ != nullptr && o.obj_ != nullptr && manage_ == o.manage_ && invoke_ == o.invoke_;
  }
  void* object_for_update() noexcept { return obj_; }
  void retag(kernel_kind kind) noexcept { kind_ = kind; }

 private:
  enum class op : std::uint8_t { move, destroy };
  using manage_fn = void (*)(op, void*, void*) noexcept;

  void take(replay_task& o) noexcept {
    invoke_ = o.invoke_;
    skips_itself_ = o.skips_itself_;
    manage_ = o.manage_;
    kind_ = o.kind_;
    category_ = o.category_;
    heap_ = o.heap_;
    if (o.obj_ == nullptr) {
      obj_ = nullptr;
    } else if (heap_) {
      obj_ = std::exchange(o.obj_, nullptr);
    } else {
      manage_(op::move, o.obj_, storage_);  // moves, then destroys the source
      obj_ = storage_;
      o.obj_ = nullptr;
    }
  }
  void reset() noexcept {
    if (obj_ != nullptr) manage_(op::destroy, obj_, nullptr);
    obj_ = nullptr;
  }

  void* obj_ = nullptr;
  void (*invoke_)(void*, bool) = nullptr;
  manage_fn manage_ = nullptr;
  kernel_kind kind_{""};
  category category_ = category::host;
  bool heap_ = false;
  bool skips_itself_ = false;  // takes the work flag (a model execution)
  alignas(std::max_align_t) unsigned char storage_[48];
};

// Runs one replayed task the way every replay loop does (a captured model's,
// a built model's part, a conditional body): while the replay is healthy
// (work) the task runs, and the first exception is kept in `failure` and
// turns `work` off; after that only tasks that must run on failure (event
// operations, so a stream waiting on this replay never hangs) run their
// failed path, and their exception is kept only if none came first.
inline void run_replay_task(const replay_task& t, bool& work, std::exception_ptr& failure) noexcept {
  if (work) {
    try {
      t();
    } catch (...) {
      failure = std::current_exception();
      work = false;
    }
  } else if (t.runs_when_failed()) {
    try {
      t.run_failed();
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
}
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
