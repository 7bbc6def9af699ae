// SPDX-License-Identifier: Apache-2.0
// An explicit executor cache and the exec() adaptor: the shape of the
// vendor's operator macro (look up or prepare, take a workspace, launch),
// with every piece of state in objects the caller owns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "keel/core/mutex_policy.hpp"
#include "keel/ops/launch.hpp"
#include "keel/ops/operators.hpp"

namespace keel::ops {

/// @cond
namespace detail {

// Cache keys: the operator, then every tensor's dtype, shape and strides,
// then the attributes that shape the plan. Data pointers, storage offsets
// and scalar values are not in the key: a hit binds this call's.
class key_builder {
 public:
  // Room for five tensors of tensor::max_dims dimensions and the attributes:
  // the lookup of a hit never allocates.
  static constexpr std::size_t capacity = 5 * (3 + tensor::max_dims * 16) + 64;

  explicit key_builder(op_kind op) noexcept { put(static_cast<std::uint8_t>(op)); }
  void add(const tensor& t) noexcept {
    put(static_cast<std::uint8_t>(t.type()));
    put(static_cast<std::uint8_t>(t.dim()));
    put(t.data() == nullptr);  // a null tensor validates differently
    for (std::size_t i = 0; i < t.dim(); ++i) {
      put(t.size(i));
      put(t.stride(i));
    }
  }
  // A scalar's dtype decides validation (a floating alpha for integers).
  void add(const scalar& s) noexcept { put(static_cast<std::uint8_t>(s.type())); }
  template <class T>
  void put(const T& v) noexcept {
    static_assert(std::is_trivially_copyable_v<T>);
    std::memcpy(bytes_ + size_, &v, sizeof(T));
    size_ += sizeof(T);
  }
  std::string_view view() const noexcept { return {bytes_, size_}; }

 private:
  char bytes_[capacity];
  std::size_t size_ = 0;
};

}  // namespace detail
/// @endcond

/**
 * @brief Operator tags for exec() and executor_cache: each knows how to
 * prepare its operator, key it, and bind another call's memory and scalars
 * into a copy of a cached plan (re-checking what depends on the pointers:
 * null tensors and overlap).
 */
struct add_op {
  static constexpr op_kind kind = op_kind::add;
  static detail::key_builder key(const tensor& self, const tensor& other, const scalar& alpha, const tensor& out) {
    detail::key_builder k(kind);
    k.add(self), k.add(other), k.add(alpha), k.add(out);
    return k;
  }
  static executor prepare(const kernel_table& k, const prepare_options& o, const tensor& self, const tensor& other,
                          const scalar& alpha, const tensor& out) {
    return prepare_add(k, self, other, alpha, out, o);
  }
  static std::shared_ptr<detail::plan> bind(const detail::plan& cached, const tensor& self, const tensor& other,
                                            const scalar& alpha, const tensor& out) {
    const char* api = "keel::ops::add";
    detail::check_present(api, self, "self");
    detail::check_present(api, other, "other");
    detail::check_present(api, out, "out");
    detail::check_overlap(api, out, self, "self", true);
    detail::check_overlap(api, out, other, "other", true);
    auto p = cached.clone();
    auto& e = static_cast<detail::elementwise_plan&>(*p);
    e.bind(0, out), e.bind(1, self), e.bind(2, other);
    e.alpha_f = alpha.to_float();
    e.alpha_i = alpha.to_integer<std::int64_t>();
    return p;
  }
};

struct addcmul_op {
  static constexpr op_kind kind = op_kind::addcmul;
  static detail::key_builder key(const tensor& self, const tensor& t1, const tensor& t2, const scalar& value, const tensor& out) {
    detail::key_builder k(kind);
    k.add(self), k.add(t1), k.add(t2), k.add(value), k.add(out);
    return k;
  }
  static executor prepare(const kernel_table& k, const prepare_options& o, const tensor& self, const tensor& t1,
                          const tensor& t2, const scalar& value, const tensor& out) {
    return prepare_addcmul(k, self, t1, t2, value, out, o);
  }
  static std::shared_ptr<detail::plan> bind(const detail::plan& cached, const tensor& self, const tensor& t1,
                                            const tensor& t2, const scalar& value, const tensor& out) {
    const char* api = "keel::ops::addcmul";
    detail::check_present(api, self, "self");
    detail::check_present(api, t1, "tensor1");
    detail::check_present(api, t2, "tensor2");
    detail::check_present(api, out, "out");
    detail::check_overlap(api, out, self, "self", true);
    detail::check_overlap(api, out, t1, "tensor1", true);
    detail::check_overlap(api, out, t2, "tensor2", true);
    auto p = cached.clone();
    auto& e = static_cast<detail::elementwise_plan&>(*p);
    e.bind(0, out), e.bind(1, self), e.bind(2, t1), e.bind(3, t2);
    e.value_f = value.to_float();
    return p;
  }
};

struct cast_op {
  static constexpr op_kind kind = op_kind::cast;
  static detail::key_builder key(const tensor& self, const tensor& out) {
    detail::key_builder k(kind);
    k.add(self), k.add(out);
    return k;
  }
  static executor prepare(const kernel_table& k, const prepare_options& o, const tensor& self, const tensor& out) {
    return prepare_cast(k, self, out, o);
  }
  static std::shared_ptr<detail::plan> bind(const detail::plan& cached, const tensor& self, const tensor& out) {
    const char* api = "keel::ops::cast";
    detail::check_present(api, self, "self");
    detail::check_present(api, out, "out");
    detail::check_overlap(api, out, self, "self", true);
    auto p = cached.clone();
    auto& e = static_cast<detail::elementwise_plan&>(*p);
    e.bind(0, out), e.bind(1, self);
    return p;
  }
};

struct adaptive_avg_pool2d_op {
  static constexpr op_kind kind = op_kind::adaptive_avg_pool2d;
  static detail::key_builder key(const tensor& self, std::int64_t oh, std::int64_t ow, const tensor& out) {
    detail::key_builder k(kind);
    k.add(self), k.put(oh), k.put(ow), k.add(out);
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
};

struct baddbmm_op {
  static constexpr op_kind kind = op_kind::baddbmm;
  static detail::key_builder key(const tensor& self, const tensor& b1, const tensor& b2, const scalar& beta,
                         const scalar& alpha, const tensor& out) {
    detail::key_builder k(kind);
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
};

/**
 * @brief A bounded, thread-safe LRU cache of prepared plans, keyed on the
 * operator, every tensor's dtype, shape and strides, and the attributes.
 * A hit returns a new executor over a copy of the cached plan bound to this
 * call's data pointers and scalar values, so no executor ever runs on an
 * earlier call's memory or values, and plans already queued or captured
 * never change. Nothing is global: share a cache by sharing the object.
 *
 * Ownership: owns its plans (executors it returned keep theirs alive on
 * their own). Thread safety: every member may be called concurrently when
 * Policy is thread-safe (std_shared_mutex_policy by default).
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

  /** @brief Phase one through the cache: a hit binds this call, a miss prepares and stores. */
  template <class Op, class... Args>
  executor acquire(Op, const Args&... args) {
    const detail::key_builder built = Op::key(args...);
    const std::string_view key = built.view();
    std::shared_ptr<const detail::plan> cached;
    {
      std::unique_lock<typename Policy::mutex_type> lock(mutex_);
      auto it = index_.find(key);
      if (it != index_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);  // most recent first
        cached = it->second->plan;
        ++hits_;
      }
    }
    if (cached) return executor(Op::bind(*cached, args...), options_);
    executor fresh = Op::prepare(*kernels_, options_, args...);  // throws: nothing stored
    std::unique_lock<typename Policy::mutex_type> lock(mutex_);
    ++misses_;
    if (capacity_ == 0 || index_.count(key) != 0) return fresh;  // another thread stored it meanwhile
    lru_.push_front(entry{std::string(key), fresh.plan()});
    try {
      index_.emplace(std::string_view(lru_.front().key), lru_.begin());
    } catch (...) {
      lru_.pop_front();
      throw;
    }
    if (lru_.size() > capacity_) {
      index_.erase(std::string_view(lru_.back().key));
      lru_.pop_back();
    }
    return fresh;
  }

  std::size_t size() const {
    std::shared_lock<typename Policy::mutex_type> lock(mutex_);
    return lru_.size();
  }
  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t hits() const {
    std::shared_lock<typename Policy::mutex_type> lock(mutex_);
    return hits_;
  }
  std::size_t misses() const {
    std::shared_lock<typename Policy::mutex_type> lock(mutex_);
    return misses_;
  }
  /** @brief Drops every plan (executors already returned keep theirs). */
  void clear() {
    std::unique_lock<typename Policy::mutex_type> lock(mutex_);
    index_.clear();
    lru_.clear();
  }
  const kernel_table& kernels() const noexcept { return *kernels_; }

 private:
  struct entry {
    std::string key;
    std::shared_ptr<const detail::plan> plan;
  };
  const kernel_table* kernels_;
  std::size_t capacity_;
  prepare_options options_;
  mutable typename Policy::mutex_type mutex_;
  std::list<entry> lru_;
  std::unordered_map<std::string_view, typename std::list<entry>::iterator> index_;
  std::size_t hits_ = 0, misses_ = 0;
};

/**
 * @brief The adaptor: look up or prepare through `cache`, take a workspace
 * on `stream` that is released in stream order, and launch. One call does
 * what the vendor's operator macro does, with no hidden state.
 * @throws keel::error from phase one (nothing launched, out untouched) or the launch.
 *
 * @code
 * ops::exec(cache, stream, ops::baddbmm_op{}, self, b1, b2, 0.0f, 1.0f, out);
 * @endcode
 */
template <class Policy, class Stream, class Op, class... Args>
void exec(executor_cache<Policy>& cache, const Stream& stream, Op op, const Args&... args) {
  executor ex = cache.acquire(op, args...);
  run_on(stream, ex);
}

}  // namespace keel::ops
