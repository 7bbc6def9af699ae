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
#include "keel/ops/launch.hpp"
#include "keel/ops/operators.hpp"

namespace keel::ops {

/// @cond
namespace detail {

// A key as stored or probed: its words and their hash.
struct key_view {
  const std::uint64_t* words;
  std::uint32_t size;
  std::size_t hash;
};
struct key_view_hash {
  std::size_t operator()(const key_view& k) const noexcept { return k.hash; }
};
struct key_view_equal {
  bool operator()(const key_view& a, const key_view& b) const noexcept {
    if (a.hash != b.hash || a.size != b.size) return false;
    for (std::uint32_t i = 0; i < a.size; ++i) {  // a few dozen words: no call to memcmp
      if (a.words[i] != b.words[i]) return false;
    }
    return true;
  }
};

// Cache keys: the operator, then every tensor's dtype, rank, null-ness,
// shape and strides, then the attributes that shape the plan. Data
// pointers, storage offsets and scalar values are not in the key: a hit
// binds this call's. Whole 64-bit words, hashed as they are written, so a
// lookup costs one pass over the words and never allocates.
class plan_key {
 public:
  // The operator, five tensors of tensor::max_dims dimensions (a header
  // word, then size and stride per dimension) and a few attribute words.
  static constexpr std::size_t capacity = 1 + 5 * (1 + 2 * tensor::max_dims) + 6;

  explicit plan_key(op_kind op) noexcept { put(static_cast<std::uint64_t>(op)); }
  void add(const tensor& t) noexcept {
    // A null tensor validates differently, so null-ness is in the key.
    put(std::uint64_t{static_cast<std::uint8_t>(t.type())} | std::uint64_t{t.dim()} << 8 |
        std::uint64_t{t.data() == nullptr} << 16);
    for (std::size_t i = 0; i < t.dim(); ++i) {
      put(static_cast<std::uint64_t>(t.size(i)));
      put(static_cast<std::uint64_t>(t.stride(i)));
    }
  }
  // A scalar's dtype decides validation (a floating alpha for integers).
  void add(const scalar& s) noexcept { put(static_cast<std::uint8_t>(s.type())); }
  void put(std::uint64_t w) noexcept {
    // The table compares whole keys, so the hash only has to spread them
    // over buckets. Each word is mixed with its position on its own and the
    // results are summed: the multiplies overlap, where a chained hash
    // (h = (h ^ w) * k) waits for each one in turn.
    hash_ += (w ^ (size_ * 0x9e3779b97f4a7c15ull)) * 0x517cc1b727220a95ull;
    words_[size_++] = w;
  }
  key_view view() const noexcept {
    std::uint64_t h = hash_ ^ hash_ >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return {words_, size_, static_cast<std::size_t>(h ^ h >> 32)};
  }

 private:
  std::uint64_t words_[capacity];
  std::uint32_t size_ = 0;
  std::uint64_t hash_ = 0;
};

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
 * instead of moving between the two cores at every call (measured: that
 * transfer was half the cost of a cache hit).
 */
class shared_plan {
 public:
  shared_plan(std::shared_ptr<const plan> p, std::size_t workers) noexcept : plan_(std::move(p)), workers_(workers) {}
  shared_plan(const shared_plan&) = delete;
  shared_plan& operator=(const shared_plan&) = delete;

  const plan& get() const noexcept { return *plan_; }
  const std::shared_ptr<const plan>& shared() const noexcept { return plan_; }
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
  ~shared_plan() = default;
  void release(long n) const noexcept {
    if (refs_.fetch_sub(n, std::memory_order_acq_rel) == n) delete this;
  }

  std::shared_ptr<const plan> plan_;
  std::size_t workers_;
  // Each count on a line of its own, apart from what every run reads.
  alignas(64) mutable std::atomic<long> refs_{1};
  alignas(64) mutable std::atomic<long> prepaid_{0};
  mutable std::atomic<long> granted_{0};
};

// An owning pointer to a shared_plan (move-only is enough for launches;
// copies retain, for a replayed or updated task that is copied).
class shared_plan_ref {
 public:
  shared_plan_ref() noexcept = default;
  // Adopts the count `p` was made with (new shared_plan starts at 1).
  static shared_plan_ref adopt(const shared_plan* p) noexcept {
    shared_plan_ref r;
    r.p_ = p;
    return r;
  }
  static shared_plan_ref share(const shared_plan* p) noexcept {
    if (p != nullptr) p->retain();
    return adopt(p);
  }
  // A reference from p's prepaid batch (see shared_plan::lease).
  static shared_plan_ref lease(const shared_plan* p) noexcept {
    p->lease();
    return adopt(p);
  }
  shared_plan_ref(const shared_plan_ref& o) noexcept : p_(o.p_) {
    if (p_ != nullptr) p_->retain();
  }
  shared_plan_ref(shared_plan_ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  shared_plan_ref& operator=(shared_plan_ref o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~shared_plan_ref() {
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
class shared_plan_owner {
 public:
  explicit shared_plan_owner(const shared_plan_ref& p) noexcept : p_(shared_plan_ref::share(p.get()).release()) {}
  shared_plan_owner(shared_plan_owner&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  shared_plan_owner& operator=(shared_plan_owner&&) = delete;
  ~shared_plan_owner() {
    if (p_ != nullptr) p_->release_owner();
  }
  const shared_plan* get() const noexcept { return p_; }

 private:
  const shared_plan* p_;
};

// The task body of an element-wise launch bound to a shared plan: this
// call's N operand pointers (out first) and scalar travel in the task, the
// plan is shared, so an executor cache hit copies nothing and allocates
// nothing: with N <= 4 the task (at most 48 bytes) fits a host stream's ring
// slot, and with N <= 3 a captured one fits a model's task in place too.
template <std::size_t N>
struct bound_elementwise_task {
  static_assert(N <= elementwise_plan::max_operands);
  shared_plan_ref plan;
  char* ptr[N];
  scalar_word scalar;

  template <class Context>
  void operator()(Context& ctx) const {
    const auto& p = static_cast<const elementwise_plan&>(plan->get());
    elementwise_plan::binding b;
    for (std::size_t i = 0; i < N; ++i) b.ptr[i] = ptr[i];
    b.scalar = scalar;
    run_stages(ctx, p, nullptr, plan->workers(),
               [&](std::size_t, std::size_t c, char*, char*) { p.run_chunk_bound(c, b); });
  }
};

// Whether this call might fail the checks a hit repeats (Op::check): a null
// pointer, or out overlapping an input other than exactly (in place).
// Decided on what element-wise plan p kept from its key, without walking
// the views' shapes; when true, Op::check decides and names the operand.
template <std::size_t N>
bool needs_full_check(const shared_plan_ref& p, const tensor& out, const tensor* const (&ins)[N]) noexcept {
  const auto& e = static_cast<const elementwise_plan&>(p->get());
  bool bad = out.data() == nullptr;  // null views are in the key, but a hit never trusts that alone
  for (std::size_t i = 0; i < N; ++i) bad = bad || ins[i]->data() == nullptr || e.overlaps_out(i + 1, out, *ins[i]);
  return bad;
}

// Enqueues an element-wise plan bound to this call (pointers out first).
// The task is built in one expression: built member by member and then
// moved, the move read back stores still in flight (a store-forwarding
// stall that showed in the profile).
template <std::size_t N, class Stream, std::size_t... I>
void launch_bound(const Stream& stream, shared_plan_ref p, const tensor* const (&operands)[N], const scalar* s,
                  std::index_sequence<I...>) {
  const auto& e = static_cast<const elementwise_plan&>(p->get());
  const kernel_kind kind = kind_of(e.op);
  const scalar_word w = e.scalar_for(s != nullptr ? *s : scalar());
  stream.launch(kind, bound_elementwise_task<N>{std::move(p), {operands[I]->first()...}, w});
}
template <std::size_t N, class Stream>
void launch_bound(const Stream& stream, shared_plan_ref p, const tensor* const (&operands)[N], const scalar* s) {
  launch_bound(stream, std::move(p), operands, s, std::make_index_sequence<N>{});
}

}  // namespace detail
/// @endcond

/**
 * @brief Operator tags for exec() and executor_cache: each knows how to
 * prepare its operator, key it, re-check what depends on another call's
 * pointers (null tensors and overlap), and bind that call's memory and
 * scalars: into a copy of a cached plan (acquire()), or, for the
 * element-wise operators, into the launch itself (exec(): nothing copied).
 */
struct add_op {
  // The protocol exec() and executor_cache call (key, prepare, check, bind, launch): internal.
  /// @cond KEEL_OP_PROTOCOL
  static constexpr op_kind kind = op_kind::add;
  static constexpr bool binds_at_launch = true;  // exec() launches the shared plan with this call bound
  static detail::plan_key key(const tensor& self, const tensor& other, const scalar& alpha, const tensor& out) {
    detail::plan_key k(kind);
    k.add(self), k.add(other), k.add(alpha), k.add(out);
    return k;
  }
  static executor prepare(const kernel_table& k, const prepare_options& o, const tensor& self, const tensor& other,
                          const scalar& alpha, const tensor& out) {
    return prepare_add(k, self, other, alpha, out, o);
  }
  static void check(const tensor& self, const tensor& other, const tensor& out) {
    const char* api = "keel::ops::add";
    detail::check_present(api, self, "self");
    detail::check_present(api, other, "other");
    detail::check_present(api, out, "out");
    detail::check_overlap(api, out, self, "self", true);
    detail::check_overlap(api, out, other, "other", true);
  }
  static std::shared_ptr<detail::plan> bind(const detail::plan& cached, const tensor& self, const tensor& other,
                                            const scalar& alpha, const tensor& out) {
    check(self, other, out);
    auto p = cached.clone();
    auto& e = static_cast<detail::elementwise_plan&>(*p);
    e.bind(0, out), e.bind(1, self), e.bind(2, other);
    e.bind(alpha);
    return p;
  }
  template <class Stream>
  static void launch(const Stream& stream, detail::shared_plan_ref p, const tensor& self, const tensor& other,
                     const scalar& alpha, const tensor& out) {
    if (detail::needs_full_check(p, out, {&self, &other})) check(self, other, out);  // throws if refused
    detail::launch_bound(stream, std::move(p), {&out, &self, &other}, &alpha);
  }
  /// @endcond
};

/// @brief The tag of addcmul (out = self + value * t1 * t2) for exec() and executor_cache.
struct addcmul_op {
  // The protocol exec() and executor_cache call (key, prepare, check, bind, launch): internal.
  /// @cond KEEL_OP_PROTOCOL
  static constexpr op_kind kind = op_kind::addcmul;
  static constexpr bool binds_at_launch = true;  // exec() launches the shared plan with this call bound
  static detail::plan_key key(const tensor& self, const tensor& t1, const tensor& t2, const scalar& value, const tensor& out) {
    detail::plan_key k(kind);
    k.add(self), k.add(t1), k.add(t2), k.add(value), k.add(out);
    return k;
  }
  static executor prepare(const kernel_table& k, const prepare_options& o, const tensor& self, const tensor& t1,
                          const tensor& t2, const scalar& value, const tensor& out) {
    return prepare_addcmul(k, self, t1, t2, value, out, o);
  }
  static void check(const tensor& self, const tensor& t1, const tensor& t2, const tensor& out) {
    const char* api = "keel::ops::addcmul";
    detail::check_present(api, self, "self");
    detail::check_present(api, t1, "tensor1");
    detail::check_present(api, t2, "tensor2");
    detail::check_present(api, out, "out");
    detail::check_overlap(api, out, self, "self", true);
    detail::check_overlap(api, out, t1, "tensor1", true);
    detail::check_overlap(api, out, t2, "tensor2", true);
  }
  static std::shared_ptr<detail::plan> bind(const detail::plan& cached, const tensor& self, const tensor& t1,
                                            const tensor& t2, const scalar& value, const tensor& out) {
    check(self, t1, t2, out);
    auto p = cached.clone();
    auto& e = static_cast<detail::elementwise_plan&>(*p);
    e.bind(0, out), e.bind(1, self), e.bind(2, t1), e.bind(3, t2);
    e.bind(value);
    return p;
  }
  template <class Stream>
  static void launch(const Stream& stream, detail::shared_plan_ref p, const tensor& self, const tensor& t1,
                     const tensor& t2, const scalar& value, const tensor& out) {
    if (detail::needs_full_check(p, out, {&self, &t1, &t2})) check(self, t1, t2, out);  // throws if refused
    detail::launch_bound(stream, std::move(p), {&out, &self, &t1, &t2}, &value);
  }
  /// @endcond
};

/// @brief The tag of cast (out = self converted to out's dtype) for exec() and executor_cache.
struct cast_op {
  // The protocol exec() and executor_cache call (key, prepare, check, bind, launch): internal.
  /// @cond KEEL_OP_PROTOCOL
  static constexpr op_kind kind = op_kind::cast;
  static constexpr bool binds_at_launch = true;  // exec() launches the shared plan with this call bound
  static detail::plan_key key(const tensor& self, const tensor& out) {
    detail::plan_key k(kind);
    k.add(self), k.add(out);
    return k;
  }
  static executor prepare(const kernel_table& k, const prepare_options& o, const tensor& self, const tensor& out) {
    return prepare_cast(k, self, out, o);
  }
  static void check(const tensor& self, const tensor& out) {
    const char* api = "keel::ops::cast";
    detail::check_present(api, self, "self");
    detail::check_present(api, out, "out");
    detail::check_overlap(api, out, self, "self", true);
  }
  static std::shared_ptr<detail::plan> bind(const detail::plan& cached, const tensor& self, const tensor& out) {
    check(self, out);
    auto p = cached.clone();
    auto& e = static_cast<detail::elementwise_plan&>(*p);
    e.bind(0, out), e.bind(1, self);
    return p;
  }
  template <class Stream>
  static void launch(const Stream& stream, detail::shared_plan_ref p, const tensor& self, const tensor& out) {
    if (detail::needs_full_check(p, out, {&self})) check(self, out);  // throws if refused
    detail::launch_bound(stream, std::move(p), {&out, &self}, nullptr);
  }
  /// @endcond
};

// Pooling and baddbmm plans hold whole tensor views (hundreds of bytes) and
// do enough work that copying the plan on a hit does not show: exec()
// acquires an executor for them and runs it with a stream-ordered workspace.
/// @brief The tag of adaptive_avg_pool2d for exec() and executor_cache.
struct adaptive_avg_pool2d_op {
  // The protocol exec() and executor_cache call (key, prepare, check, bind, launch): internal.
  /// @cond KEEL_OP_PROTOCOL
  static constexpr op_kind kind = op_kind::adaptive_avg_pool2d;
  static detail::plan_key key(const tensor& self, std::int64_t oh, std::int64_t ow, const tensor& out) {
    detail::plan_key k(kind);
    k.add(self), k.put(static_cast<std::uint64_t>(oh)), k.put(static_cast<std::uint64_t>(ow)), k.add(out);
    return k;
  }
  static executor prepare(const kernel_table& k, const prepare_options& o, const tensor& self, std::int64_t oh,
                          std::int64_t ow, const tensor& out) {
    return prepare_adaptive_avg_pool2d(k, self, oh, ow, out, o);
  }
  static std::shared_ptr<detail::plan> bind(const detail::plan& cached, const tensor& self, std::int64_t,
                                            std::int64_t, const tensor& out) {
    const char* api = "keel::ops::adaptive_avg_pool2d";
    detail::check_present(api, self, "self");
    detail::check_present(api, out, "out");
    detail::check_overlap(api, out, self, "self", false);
    auto p = cached.clone();
    static_cast<detail::pool_plan&>(*p).bind(self, out);
    return p;
  }
  /// @endcond
};

/// @brief The tag of baddbmm (out = beta * self + alpha * b1 @ b2) for exec() and executor_cache.
struct baddbmm_op {
  // The protocol exec() and executor_cache call (key, prepare, check, bind, launch): internal.
  /// @cond KEEL_OP_PROTOCOL
  static constexpr op_kind kind = op_kind::baddbmm;
  static detail::plan_key key(const tensor& self, const tensor& b1, const tensor& b2, const scalar& beta,
                              const scalar& alpha, const tensor& out) {
    detail::plan_key k(kind);
    k.add(self), k.add(b1), k.add(b2), k.add(beta), k.add(alpha), k.add(out);
    k.put(beta.to_double() == 0.0);  // beta == 0 plans never read self
    return k;
  }
  static executor prepare(const kernel_table& k, const prepare_options& o, const tensor& self, const tensor& b1,
                          const tensor& b2, const scalar& beta, const scalar& alpha, const tensor& out) {
    return prepare_baddbmm(k, self, b1, b2, beta, alpha, out, o);
  }
  static std::shared_ptr<detail::plan> bind(const detail::plan& cached, const tensor& self, const tensor& b1,
                                            const tensor& b2, const scalar& beta, const scalar& alpha,
                                            const tensor& out) {
    const char* api = "keel::ops::baddbmm";
    const bool use_self = beta.to_double() != 0.0;
    if (use_self) detail::check_present(api, self, "self");
    detail::check_present(api, b1, "batch1");
    detail::check_present(api, b2, "batch2");
    detail::check_present(api, out, "out");
    detail::check_overlap(api, out, b1, "batch1", false);
    detail::check_overlap(api, out, b2, "batch2", false);
    if (use_self) detail::check_overlap(api, out, self, "self", true);
    auto p = cached.clone();
    static_cast<detail::baddbmm_plan&>(*p).bind(self, b1, b2, out, beta.to_float(), alpha.to_float());
    return p;
  }
  /// @endcond
};

/// @cond
namespace detail {
// Whether exec() binds Op's calls into the launch (Op::binds_at_launch).
template <class Op, class = void>
struct binds_at_launch : std::false_type {};
template <class Op>
struct binds_at_launch<Op, std::void_t<decltype(Op::binds_at_launch)>> : std::bool_constant<Op::binds_at_launch> {};
}  // namespace detail
/// @endcond

template <class Policy>
class executor_cache;
template <class Policy, class Stream, class Op, class... Args>
void exec(executor_cache<Policy>& cache, const Stream& stream, Op op, const Args&... args);

/**
 * @brief A bounded, thread-safe LRU cache of prepared plans, keyed on the
 * operator, every tensor's dtype, shape and strides, and the attributes.
 * A hit binds this call's data pointers and scalar values, so no executor
 * ever runs on an earlier call's memory or values, and plans already queued
 * or captured never change: acquire() returns a new executor over a copy of
 * the cached plan; exec() launches the shared plan with this call's
 * pointers and scalar in the task (element-wise operators), copying
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
template <class Policy = std_shared_mutex_policy>
class executor_cache {
  static_assert(is_mutex_policy<Policy>::value, "executor_cache: Policy must be a keel mutex policy");
  using mutex_type = typename Policy::mutex_type;

 public:
  /**
   * @param kernels the kernel table every plan uses; @param capacity the
   * most plans kept (least recently used leave first; 0 keeps none);
   * @param options workers and use for the executors (use must be repeatable:
   * a cached plan runs many times).
   */
  explicit executor_cache(const kernel_table& kernels, std::size_t capacity = 256, prepare_options options = {})
      : kernels_(&kernels), capacity_(capacity), options_(options) {
    if (options.use != executor_use::repeatable) {
      throw_error(errc::invalid_parameter, "keel::ops::executor_cache",
                  "cached executors run many times: options.use must be executor_use::repeatable");
    }
  }
  executor_cache(const executor_cache&) = delete;
  executor_cache& operator=(const executor_cache&) = delete;

  /** @brief Phase one through the cache: a hit binds this call into a copy of the plan, a miss prepares and stores. */
  template <class Op, class... Args>
  executor acquire(Op, const Args&... args) {
    bool hit = false;
    detail::shared_plan_ref p = find_or_prepare<Op>(hit, args...);
    if (hit) return executor(Op::bind(p->get(), args...), options_);
    return executor(p->shared(), options_);
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
  /// The kernel table the cache prepares with.
  const kernel_table& kernels() const noexcept { return *kernels_; }

 private:
  template <class P, class S, class O, class... A>
  friend void exec(executor_cache<P>&, const S&, O, const A&...);

  struct entry {
    std::unique_ptr<std::uint64_t[]> words;
    std::uint32_t size;
    std::size_t hash;
    detail::shared_plan_owner plan;
    detail::key_view key() const noexcept { return {words.get(), size, hash}; }
  };
  using list_type = std::list<entry>;

  // The plan for this call's key: the cached one (hit = true) or a freshly
  // prepared one, stored unless capacity is 0.
  template <class Op, class... Args>
  detail::shared_plan_ref find_or_prepare(bool& hit, const Args&... args) {
    const detail::plan_key built = Op::key(args...);
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
    executor fresh = Op::prepare(*kernels_, options_, args...);  // throws: nothing stored
    auto made = detail::shared_plan_ref::adopt(new detail::shared_plan(fresh.plan(), options_.workers));
    if (capacity_ == 0) {
      misses_.fetch_add(1, std::memory_order_relaxed);
      return made;
    }
    std::unique_ptr<std::uint64_t[]> words(new std::uint64_t[key.size]);
    std::memcpy(words.get(), key.words, key.size * sizeof(std::uint64_t));
    std::unique_lock<mutex_type> lock(mutex_);
    misses_.fetch_add(1, std::memory_order_relaxed);
    if (index_.count(key) != 0) return made;  // another thread stored it meanwhile
    lru_.push_front(entry{std::move(words), key.size, key.hash, detail::shared_plan_owner(made)});
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
  static detail::shared_plan_ref take_hit(bool& hit, const detail::shared_plan_owner& p) noexcept {
    hit = true;
    return detail::shared_plan_ref::lease(p.get());
  }
  // Caller holds the exclusive lock: e leaves, its hits stay counted.
  void retire(const entry& e) noexcept { retired_hits_ += static_cast<std::size_t>(e.plan.get()->leased()); }

  const kernel_table* kernels_;
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
template <class Policy, class Stream, class Op, class... Args>
void exec(executor_cache<Policy>& cache, const Stream& stream, Op op, const Args&... args) {
  if constexpr (detail::binds_at_launch<Op>::value) {
    bool hit = false;
    Op::launch(stream, cache.template find_or_prepare<Op>(hit, args...), args...);
  } else {
    executor ex = cache.acquire(op, args...);
    run_on(stream, ex);
  }
}

}  // namespace keel::ops
