// SPDX-License-Identifier: Apache-2.0
// The host backend's task machinery: intrusive reference counts, the
// type-erased one-shot task a stream's ring holds, the reusable task a model
// replays, and the lock-free ring a stream's worker drains.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <thread>
#include <type_traits>
#include <utility>

#include "keel/runtime/types.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace keel::host::detail {

/// @cond
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#else
  std::this_thread::yield();
#endif
}

// Intrusive counts: a native handle is a plain pointer (trivially copyable, as
// unique_handle wants) and a task keeps what it uses alive with one increment.
class ref_counted {
 public:
  void retain() const noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  bool release_ref() const noexcept { return refs_.fetch_sub(1, std::memory_order_acq_rel) == 1; }

 protected:
  ref_counted() = default;
  ~ref_counted() = default;

 private:
  mutable std::atomic<long> refs_{1};
};

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
  static void drop(T* p) noexcept {
    if (p && p->release_ref()) delete p;
  }

 private:
  T* p_ = nullptr;
};

// One slot of a stream's ring: a function pointer and 24 bytes in which a
// small callable lives in place, so a tiny task allocates nothing. Two slots
// share a cache line, which halves the lines that move between the
// submitting thread and the worker.
struct alignas(32) slot {
  // run == false: the stream is in its error state; work is destroyed
  // unrun, control tasks (event records, releases) still run.
  using fn_type = void (*)(void* storage, bool run);
  fn_type fn = nullptr;
  alignas(8) unsigned char storage[24];
};

template <class T>
inline constexpr bool fits_in_slot = sizeof(T) <= sizeof(slot::storage) && alignof(T) <= 8 &&
                                     std::is_nothrow_move_constructible_v<T>;

template <bool Control, class T>
void slot_run_inline(void* storage, bool run) {
  T* t = std::launder(reinterpret_cast<T*>(storage));
  struct destroy {
    T* t;
    ~destroy() { t->~T(); }
  } d{t};
  if (Control || run) (*t)();
}

template <bool Control, class T>
void slot_run_heap(void* storage, bool run) {
  std::unique_ptr<T> t(*std::launder(reinterpret_cast<T**>(storage)));
  if (Control || run) (*t)();
}

// The lock-free hand-off between any number of submitting threads and one
// worker. Producers serialise on a tiny spin lock (uncontended in the common
// one-producer case, so it costs one locked instruction on a line the
// producer owns); the consumer never takes it.
class task_ring {
 public:
  static constexpr std::size_t capacity = 4096;

  task_ring() : slots_(new slot[capacity]) {}

  // Constructs the task in its slot. A callable too big for a slot is boxed
  // before the lock is taken, so nothing inside the lock can throw.
  template <bool Control, class F>
  void push(F&& f) {
    using T = std::decay_t<F>;
    if constexpr (fits_in_slot<T>) {
      lock();
      slot& s = acquire_slot();
      ::new (static_cast<void*>(s.storage)) T(std::forward<F>(f));
      s.fn = &slot_run_inline<Control, T>;
      publish();
    } else {
      T* boxed = new T(std::forward<F>(f));
      lock();
      slot& s = acquire_slot();
      ::new (static_cast<void*>(s.storage)) T*(boxed);
      s.fn = &slot_run_heap<Control, T>;
      publish();
    }
  }

  std::uint64_t tail() const noexcept { return tail_.load(std::memory_order_seq_cst); }
  std::uint64_t head() const noexcept { return head_.load(std::memory_order_seq_cst); }

  // Consumer side.
  slot& at(std::uint64_t index) noexcept { return slots_[index & (capacity - 1)]; }
  void set_head(std::uint64_t h, std::memory_order order) noexcept { head_.store(h, order); }

 private:
  void lock() noexcept {
    while (lock_.exchange(true, std::memory_order_acquire)) {
      while (lock_.load(std::memory_order_relaxed)) cpu_relax();
    }
  }
  slot& acquire_slot() noexcept {
    const std::uint64_t t = tail_.load(std::memory_order_relaxed);
    while (t - cached_head_ >= capacity) {
      cached_head_ = head_.load(std::memory_order_acquire);
      if (t - cached_head_ >= capacity) std::this_thread::yield();  // full: the worker is behind
    }
    return at(t);
  }
  void publish() noexcept {
    // seq_cst: pairs with the worker's seq_cst store of its sleeping flag, so
    // either the worker sees this task or the producer sees it asleep.
    tail_.store(tail_.load(std::memory_order_relaxed) + 1, std::memory_order_seq_cst);
    lock_.store(false, std::memory_order_release);
  }

  alignas(64) std::atomic<bool> lock_{false};
  std::uint64_t cached_head_ = 0;
  std::atomic<std::uint64_t> tail_{0};
  alignas(64) std::atomic<std::uint64_t> head_{0};
  alignas(64) std::unique_ptr<slot[]> slots_;
};

// A task a model keeps and runs many times: one indirect call per replay, no
// allocation, no queue. Move-only; owns its callable.
class replay_task {
 public:
  enum class category : std::uint8_t { host, kernel, copy, event, group, model };

  template <class F>
  replay_task(F&& f, category cat, kernel_kind kind = kernel_kind{""})
      : obj_(new std::decay_t<F>(std::forward<F>(f))),
        invoke_([](void* p) { (*static_cast<std::decay_t<F>*>(p))(); }),
        destroy_([](void* p) noexcept { delete static_cast<std::decay_t<F>*>(p); }),
        kind_(kind),
        category_(cat) {}
  replay_task(replay_task&& o) noexcept
      : obj_(std::exchange(o.obj_, nullptr)), invoke_(o.invoke_), destroy_(o.destroy_), kind_(o.kind_),
        category_(o.category_) {}
  replay_task& operator=(replay_task&& o) noexcept {
    replay_task tmp(std::move(o));
    std::swap(obj_, tmp.obj_);
    std::swap(invoke_, tmp.invoke_);
    std::swap(destroy_, tmp.destroy_);
    std::swap(kind_, tmp.kind_);
    std::swap(category_, tmp.category_);
    return *this;
  }
  ~replay_task() {
    if (obj_) destroy_(obj_);
  }
  void operator()() const { invoke_(obj_); }
  kernel_kind kind() const noexcept { return kind_; }
  category cat() const noexcept { return category_; }

 private:
  void* obj_;
  void (*invoke_)(void*);
  void (*destroy_)(void*) noexcept;
  kernel_kind kind_;
  category category_;
};
/// @endcond

}  // namespace keel::host::detail
