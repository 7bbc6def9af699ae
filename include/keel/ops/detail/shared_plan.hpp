// SPDX-License-Identifier: Apache-2.0
// A plan shared by an executor cache and the launches bound to it, with an
// intrusive, batch-prepaid count (one pointer per launch), for any operator
// layer's plan type.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <utility>

#include "keel/ops/executor.hpp"
#include "keel/ops/scalar.hpp"
#include "keel/ops/tensor.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops::detail {

/*
 * A plan shared by an executor cache and every launch bound to it, with an
 * intrusive count: a launch keeps it alive with one 8-byte pointer, where a
 * shared_ptr's 16 bytes would leave no room in a host stream's ring slot
 * (48 bytes) for the call's pointers and scalar. Immutable once made;
 * every member is thread-safe except as noted.
 *
 * Launches take references from a prepaid batch (lease()) rather than from
 * the count itself: the count is then written by the threads that end
 * tasks (a stream's worker) and, once per batch, by the launching thread,
 * instead of moving between the two cores at every call (a transfer that
 * would cost as much as the rest of a cache hit).
 */
template <class Plan>
class basic_shared_plan {
 public:
  basic_shared_plan(std::shared_ptr<const Plan> p, std::size_t workers) noexcept : plan_(std::move(p)), workers_(workers) {}
  basic_shared_plan(const basic_shared_plan&) = delete;
  basic_shared_plan& operator=(const basic_shared_plan&) = delete;

  const Plan& get() const noexcept { return *plan_; }
  const std::shared_ptr<const Plan>& shared() const noexcept { return plan_; }
  std::size_t workers() const noexcept { return workers_; }

  void retain() const noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() const noexcept { release(1); }

  // One reference from the prepaid batch. The caller keeps the owner's
  // reference alive meanwhile (the cache's lock), so the count never
  // reaches zero while a lease tops it up.
  void lease() const noexcept {
    if (prepaid_.fetch_sub(1, std::memory_order_relaxed) <= 0) {
      // Over-drawn: count a new batch before this reference can be released.
      refs_.fetch_add(batch, std::memory_order_relaxed);
      granted_.fetch_add(batch, std::memory_order_relaxed);
      prepaid_.fetch_add(batch, std::memory_order_relaxed);
    }
  }
  // How many lease() calls there were: an executor cache's hits on this
  // plan, counted with no atomic of their own. Exact when none runs.
  long leased() const noexcept {
    return granted_.load(std::memory_order_relaxed) - prepaid_.load(std::memory_order_relaxed);
  }
  // The owner's reference and the unused prepaid ones. Not concurrent with lease().
  void release_owner() const noexcept { release(1 + prepaid_.exchange(0, std::memory_order_relaxed)); }

 private:
  static constexpr long batch = 1024;
  ~basic_shared_plan() = default;
  void release(long n) const noexcept {
    if (refs_.fetch_sub(n, std::memory_order_acq_rel) == n) delete this;
  }

  std::shared_ptr<const Plan> plan_;
  std::size_t workers_;
  // Each count on a line of its own, apart from what every run reads.
  alignas(64) mutable std::atomic<long> refs_{1};
  alignas(64) mutable std::atomic<long> prepaid_{0};
  mutable std::atomic<long> granted_{0};
};

// An owning pointer to a shared_plan (move-only is enough for launches;
// copies retain, for a replayed or updated task that is copied).
template <class Plan>
class basic_shared_plan_ref {
  using shared_plan = basic_shared_plan<Plan>;

 public:
  basic_shared_plan_ref() noexcept = default;
  // Adopts the count `p` was made with (new shared_plan starts at 1).
  static basic_shared_plan_ref adopt(const shared_plan* p) noexcept {
    basic_shared_plan_ref r;
    r.p_ = p;
    return r;
  }
  static basic_shared_plan_ref share(const shared_plan* p) noexcept {
    if (p != nullptr) p->retain();
    return adopt(p);
  }
  // A reference from p's prepaid batch (see shared_plan::lease).
  static basic_shared_plan_ref lease(const shared_plan* p) noexcept {
    p->lease();
    return adopt(p);
  }
  basic_shared_plan_ref(const basic_shared_plan_ref& o) noexcept : p_(o.p_) {
    if (p_ != nullptr) p_->retain();
  }
  basic_shared_plan_ref(basic_shared_plan_ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  basic_shared_plan_ref& operator=(basic_shared_plan_ref o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~basic_shared_plan_ref() {
    if (p_ != nullptr) p_->release();
  }
  const shared_plan* get() const noexcept { return p_; }
  const shared_plan* release() noexcept { return std::exchange(p_, nullptr); }
  const shared_plan* operator->() const noexcept { return p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }

 private:
  const shared_plan* p_ = nullptr;
};

// The cache's own reference to a shared_plan: ending it also returns the
// references prepaid for launches that never came. Move-only.
template <class Plan>
class basic_shared_plan_owner {
  using shared_plan = basic_shared_plan<Plan>;
  using shared_plan_ref = basic_shared_plan_ref<Plan>;

 public:
  explicit basic_shared_plan_owner(const shared_plan_ref& p) noexcept : p_(shared_plan_ref::share(p.get()).release()) {}
  basic_shared_plan_owner(basic_shared_plan_owner&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  basic_shared_plan_owner& operator=(basic_shared_plan_owner&&) = delete;
  ~basic_shared_plan_owner() {
    if (p_ != nullptr) p_->release_owner();
  }
  const shared_plan* get() const noexcept { return p_; }

 private:
  const shared_plan* p_;
};

// The task body of an element-wise launch bound to a shared plan: this
// call's N operand pointers (out first) and scalar travel in the task, the
// plan is shared, so an executor cache hit copies nothing and allocates

// The host plans' shared form.
using shared_plan = basic_shared_plan<plan>;
using shared_plan_ref = basic_shared_plan_ref<plan>;

// The element-wise operators' cached launch (bound_launch.hpp, which
// executor_cache.hpp includes): whether a hit needs the full check, and the
// launch of the shared plan with this call bound.
template <std::size_t N>
bool needs_full_check(const shared_plan_ref& p, const tensor& out, const tensor* const (&ins)[N]) noexcept;
template <std::size_t N, class Stream>
void launch_bound(const Stream& stream, shared_plan_ref p, const tensor* const (&operands)[N], const scalar* s);

} KEEL_END_NAMESPACE  // namespace keel::ops::detail
