// SPDX-License-Identifier: Apache-2.0
// An explicit executor cache and the exec() adaptor: the shape of the
// vendor's operator macro (look up or prepare, take a workspace, launch),
// with every piece of state in objects the caller owns.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "keel/core/mutex_policy.hpp"
#include "keel/ops/detail/bound_launch.hpp"
#include "keel/ops/detail/plan_key.hpp"
#include "keel/ops/detail/shared_plan.hpp"
#include "keel/ops/launch.hpp"
#include "keel/ops/operator_layer.hpp"
#include "keel/ops/operators.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops {

template <class Layer, class Policy>
class basic_executor_cache;
template <class Layer, class Policy, class Stream, class Op, class... Args>
void exec(basic_executor_cache<Layer, Policy>& cache, const Stream& stream, Op op, const Args&... args);

/**
 * @brief A bounded, thread-safe LRU cache of prepared plans of operator
 * layer @p Layer (executor_cache<Policy>: the host operators), keyed on the
 * operator, every tensor's dtype, shape and strides, and the attributes (the
 * layer may add to the key: ACL's aclOpExecutor is bound to its tensors'
 * addresses and scalar values, so they are in its key).
 * A hit binds this call's data pointers and scalar values, so no executor
 * ever runs on an earlier call's memory or values, and plans already queued
 * or captured never change: acquire() returns a new executor over a copy of
 * the cached plan (host) or the cached plan itself (a key that fixes every
 * pointer and value); exec() launches the shared plan with this call's
 * pointers and scalar in the task (host element-wise operators), copying
 * nothing. Nothing is global: share a cache by sharing the object.
 *
 * Ownership: owns its plans; executors it returned and launched or captured
 * work keep theirs alive on their own (an evicted or cleared plan lives
 * until the last of them ends). Thread safety: every member may be called
 * concurrently when Policy is thread-safe (std_shared_mutex_policy by
 * default); a hit on the most recent entry takes only the shared lock.
 * Exceptions: acquire() throws what phase one throws and leaves the cache
 * unchanged; std::bad_alloc leaves it unchanged too.
 *
 * @code
 * ops::executor_cache<> cache(ops::dynamic_kernels(), 512);
 * ops::exec(cache, stream, ops::add_op{}, self, other, 2.0f, out);
 * @endcode
 */
template <class Layer, class Policy = std_shared_mutex_policy>
class basic_executor_cache {
  static_assert(is_mutex_policy<Policy>::value, "executor_cache: Policy must be a keel mutex policy");
  using mutex_type = typename Policy::mutex_type;
  using plan_type = typename Layer::plan_type;
  using shared_plan_ref = detail::basic_shared_plan_ref<plan_type>;
  using shared_plan_owner = detail::basic_shared_plan_owner<plan_type>;

 public:
  /// What phase one plans against (the host operators: the kernel table; ACL: the device).
  using target_type = typename Layer::target_type;
  /// The executors acquire() returns.
  using executor_type = basic_executor<Layer>;

  /**
   * @param target the kernel table (host operators) or device every plan
   * uses; @param capacity the most plans kept (least recently used leave
   * first; 0 keeps none); @param options workers and use for the executors
   * (use must be repeatable: a cached plan runs many times).
   */
  explicit basic_executor_cache(target_type& target, std::size_t capacity = 256, prepare_options options = {})
      : target_(&target), capacity_(capacity), options_(options) {
    if (options.use != executor_use::repeatable) {
      throw_error(errc::invalid_parameter, "keel::ops::executor_cache",
                  "cached executors run many times: options.use must be executor_use::repeatable");
    }
  }
  basic_executor_cache(const basic_executor_cache&) = delete;
  basic_executor_cache& operator=(const basic_executor_cache&) = delete;

  /** @brief Phase one through the cache: a hit binds this call into a copy of the plan, a miss prepares and stores. */
  template <class Op, class... Args>
  executor_type acquire(Op, const Args&... args) {
    bool hit = false;
    shared_plan_ref p = find_or_prepare<Op>(hit, args...);
    if (hit) return executor_type(Layer::template bind<Op>(p->shared(), args...), options_);
    return executor_type(p->shared(), options_);
  }

  /// How many executors the cache holds.
  std::size_t size() const {
    std::shared_lock<mutex_type> lock(mutex_);
    return lru_.size();
  }
  /// The most executors the cache holds before it evicts the least recently used.
  std::size_t capacity() const noexcept { return capacity_; }
  /** @brief Lookups that found their key (sums the entries' counts: O(size())). */
  std::size_t hits() const {
    std::shared_lock<mutex_type> lock(mutex_);
    std::size_t n = retired_hits_;
    for (const entry& e : lru_) n += static_cast<std::size_t>(e.plan.get()->leased());
    return n;
  }
  /// How many lookups prepared a new executor.
  std::size_t misses() const noexcept { return misses_.load(std::memory_order_relaxed); }
  /** @brief Drops every plan (executors and launches already made keep theirs). */
  void clear() {
    std::unique_lock<mutex_type> lock(mutex_);
    index_.clear();
    for (const entry& e : lru_) retire(e);
    lru_.clear();
  }
  /// What the cache prepares with (the kernel table, the device).
  target_type& target() const noexcept { return *target_; }
  /// The kernel table the cache prepares with (keel 0.1's name of target() for the host operators).
  target_type& kernels() const noexcept { return *target_; }

 private:
  template <class L, class P, class S, class O, class... A>
  friend void exec(basic_executor_cache<L, P>&, const S&, O, const A&...);

  struct entry {
    std::unique_ptr<std::uint64_t[]> words;
    std::uint32_t size;
    std::size_t hash;
    shared_plan_owner plan;
    detail::key_view key() const noexcept { return {words.get(), size, hash}; }
  };
  using list_type = std::list<entry>;

  // The plan for this call's key: the cached one (hit = true) or a freshly
  // prepared one, stored unless capacity is 0.
  template <class Op, class... Args>
  shared_plan_ref find_or_prepare(bool& hit, const Args&... args) {
    const detail::plan_key built = Layer::template key<Op>(args...);
    const detail::key_view key = built.view();
    bool found = false;
    {
      // Most hits are on the entry used last (a loop of one call, a model's
      // operator run again): it needs no move, so readers share the lock.
      std::shared_lock<mutex_type> lock(mutex_);
      auto it = index_.find(key);
      if (it != index_.end()) {
        if (it->second == lru_.begin()) return take_hit(hit, it->second->plan);
        found = true;
      }
    }
    if (found) {
      std::unique_lock<mutex_type> lock(mutex_);
      auto it = index_.find(key);  // evicted meanwhile: prepare it again
      if (it != index_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);  // most recent first
        return take_hit(hit, it->second->plan);
      }
    }
    executor_type fresh = Layer::template prepare<Op>(*target_, options_, args...);  // throws: nothing stored
    auto made = shared_plan_ref::adopt(new detail::basic_shared_plan<plan_type>(fresh.plan(), options_.workers));
    if (capacity_ == 0) {
      misses_.fetch_add(1, std::memory_order_relaxed);
      return made;
    }
    std::unique_ptr<std::uint64_t[]> words(new std::uint64_t[key.size]);
    std::memcpy(words.get(), key.words, key.size * sizeof(std::uint64_t));
    std::unique_lock<mutex_type> lock(mutex_);
    misses_.fetch_add(1, std::memory_order_relaxed);
    if (index_.count(key) != 0) return made;  // another thread stored it meanwhile
    lru_.push_front(entry{std::move(words), key.size, key.hash, shared_plan_owner(made)});
    try {
      index_.emplace(lru_.front().key(), lru_.begin());
    } catch (...) {
      lru_.pop_front();
      throw;
    }
    if (lru_.size() > capacity_) {
      index_.erase(lru_.back().key());
      retire(lru_.back());
      lru_.pop_back();
    }
    return made;
  }

  // Caller holds the lock (shared or exclusive): the entry cannot leave
  // meanwhile. The lease counts the hit (see hits()).
  static shared_plan_ref take_hit(bool& hit, const shared_plan_owner& p) noexcept {
    hit = true;
    return shared_plan_ref::lease(p.get());
  }
  // Caller holds the exclusive lock: e leaves, its hits stay counted.
  void retire(const entry& e) noexcept { retired_hits_ += static_cast<std::size_t>(e.plan.get()->leased()); }

  target_type* target_;
  std::size_t capacity_;
  prepare_options options_;
  mutable mutex_type mutex_;
  list_type lru_;
  std::unordered_map<detail::key_view, typename list_type::iterator, detail::key_view_hash, detail::key_view_equal>
      index_;
  std::size_t retired_hits_ = 0;  // hits on entries that left
  std::atomic<std::size_t> misses_{0};
};

/**
 * @brief The host operators' executor cache (keel 0.1's name;
 * basic_executor_cache<host_operators, Policy>).
 */
template <class Policy = std_shared_mutex_policy>
using executor_cache = basic_executor_cache<host_operators, Policy>;

/** @brief The executor cache of phase-one target @p Target's operator layer (a kernel table, an acl::device). */
template <class Target, class Policy = std_shared_mutex_policy>
using executor_cache_for = basic_executor_cache<operator_layer_of_t<Target>, Policy>;

/**
 * @brief The adaptor: look up or prepare through `cache`, take a workspace
 * on `stream` that is released in stream order, and launch. One call does
 * what the vendor's operator macro does, with no hidden state. For add,
 * addcmul and cast (no workspace) a hit launches the cached plan with this
 * call's pointers and scalar carried by the task: no copy, no allocation.
 * @throws keel::error from phase one (nothing launched, out untouched) or the launch.
 *
 * @code
 * ops::exec(cache, stream, ops::baddbmm_op{}, self, b1, b2, 0.0f, 1.0f, out);
 * @endcode
 */
template <class Layer, class Policy, class Stream, class Op, class... Args>
void exec(basic_executor_cache<Layer, Policy>& cache, const Stream& stream, Op op, const Args&... args) {
  if constexpr (Layer::template binds_at_launch<Op>()) {
    bool hit = false;
    Op::launch(stream, cache.template find_or_prepare<Op>(hit, args...), args...);
  } else {
    auto ex = cache.acquire(op, args...);
    run_on(stream, ex);
  }
}

} KEEL_END_NAMESPACE  // namespace keel::ops
