// SPDX-License-Identifier: Apache-2.0
// Fuzz target: executor_cache keying. A sequence of calls drawn from a few
// decoded descriptions (so keys repeat) runs through one cache and, on an
// identical copy of the memory, through a freshly prepared executor: both
// must fail with the same error or write the same bytes (a cached plan that
// aliased a distinct key would compute something else, or run out of
// bounds). A call whose key was stored before must hit; any other must miss
// (a miss is counted only when phase one succeeds). Half the calls go
// through exec() on a host stream instead of acquire(): element-wise hits
// then bind the call into the launch rather than into a copy of the plan.
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "keel/host/host.hpp"
#include "keel/ops/executor_cache.hpp"
#include "ops_cases.hpp"

using namespace keel_fuzz;

namespace {

// The key as documented: the operator, every tensor's null-ness, dtype,
// shape and strides, the scalars' dtypes, pooling's output size, and
// whether baddbmm's beta is zero. Written from the documentation, not from
// plan_key.
std::string documented_key(const call& c) {
  std::string k = std::to_string(c.op) + "|";
  for (int i = 0; i < c.count; ++i) {
    const tensor_desc& d = c.t[i];
    if (d.null) {  // the null tensor: no dtype, shape or strides of its own
      k += "null|";
      continue;
    }
    k += std::to_string(static_cast<int>(d.type)) + ":" + std::to_string(d.nd);
    std::int64_t running = 1;
    std::int64_t strides[6];
    for (std::size_t j = d.nd; j-- > 0;) {
      strides[j] = d.contiguous ? running : d.strides[j];
      // A product past 64 bits makes the tensor itself invalid (its
      // constructor rejects it), so the key is never compared: stop there.
      if (__builtin_mul_overflow(running, d.shape[j], &running)) running = 0;
    }
    // append() rather than operator+: GCC 12 in C++20 reports a false
    // -Wrestrict on chained string concatenation (GCC bug 105651).
    for (std::size_t j = 0; j < d.nd; ++j) {
      k.append(",").append(std::to_string(d.shape[j])).append("/").append(std::to_string(strides[j]));
    }
    k += "|";
  }
  const bool two_scalars = c.op == 4;
  if (c.op != 2 && c.op != 3) k += std::to_string(static_cast<int>(c.s1.type())) + "|";
  if (two_scalars) k += std::to_string(static_cast<int>(c.s2.type())) + (c.s1.to_double() == 0.0 ? "b0" : "b1") + "|";
  if (c.op == 3) k += std::to_string(c.oh) + "x" + std::to_string(c.ow);
  return k;
}

template <class Cache>
ko::executor acquire(Cache& cache, const call& c, const std::vector<ko::tensor>& v) {
  switch (c.op) {
    case 0: return cache.acquire(ko::add_op{}, v[0], v[1], c.s1, v[2]);
    case 1: return cache.acquire(ko::addcmul_op{}, v[0], v[1], v[2], c.s1, v[3]);
    case 2: return cache.acquire(ko::cast_op{}, v[0], v[1]);
    case 3: return cache.acquire(ko::adaptive_avg_pool2d_op{}, v[0], c.oh, c.ow, v[1]);
    default: return cache.acquire(ko::baddbmm_op{}, v[0], v[1], v[2], c.s1, c.s2, v[3]);
  }
}

keel::host::stream& fuzz_stream() {
  static keel::host::stream s{keel::host::default_device()};
  return s;
}

template <class Cache>
void exec_call(Cache& cache, const call& c, const std::vector<ko::tensor>& v) {
  keel::host::stream& s = fuzz_stream();
  switch (c.op) {
    case 0: return ko::exec(cache, s, ko::add_op{}, v[0], v[1], c.s1, v[2]);
    case 1: return ko::exec(cache, s, ko::addcmul_op{}, v[0], v[1], v[2], c.s1, v[3]);
    case 2: return ko::exec(cache, s, ko::cast_op{}, v[0], v[1]);
    case 3: return ko::exec(cache, s, ko::adaptive_avg_pool2d_op{}, v[0], c.oh, c.ow, v[1]);
    default: return ko::exec(cache, s, ko::baddbmm_op{}, v[0], v[1], v[2], c.s1, c.s2, v[3]);
  }
}

// Runs a call through exec() and waits for it; returns the error code (0 on success).
template <class Cache>
int attempt_exec(const call& c, arena& a, Cache& cache, std::string& message) {
  try {
    exec_call(cache, c, a.views);
  } catch (const keel::error& e) {
    KEEL_FUZZ_REQUIRE(e.code() == keel::errc::invalid_parameter || e.code() == keel::errc::null_parameter,
                      "exec threw %s", e.what());
    message = e.what();
    return e.code().value();
  }
  fuzz_stream().synchronize();
  return 0;
}

// Runs a call one way; returns the error code (0 on success).
template <class Prepare>
int attempt(const call& c, arena& a, Prepare&& prep, std::string& message) {
  ko::executor ex;
  try {
    ex = prep(a.views);
  } catch (const keel::error& e) {
    KEEL_FUZZ_REQUIRE(e.code() == keel::errc::invalid_parameter || e.code() == keel::errc::null_parameter,
                      "phase one threw %s", e.what());
    message = e.what();
    return e.code().value();
  }
  if (a.runnable) run_exactly(ex);
  (void)c;
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  input in(data, size);
  const int palette_size = 1 + static_cast<int>(in.below(4));
  std::vector<call> palette;
  for (int i = 0; i < palette_size; ++i) palette.push_back(decode_call(in));
  const bool small = in.chance(60);  // a capacity of 2 exercises eviction
  ko::executor_cache<> cache(kernels(), small ? 2 : 64, ko::prepare_options{2, ko::executor_use::repeatable});
  std::map<std::string, bool> stored;
  for (int n = 0; n < 12 && !in.empty(); ++n) {
    call c = palette[in.below(static_cast<unsigned>(palette_size))];
    c.workers = 2;  // the cache's options
    // Same key, new values: the scalars' values may change (their dtypes
    // stay); pointers change because every call gets new buffers.
    if (in.chance(100) && c.op != 4 && c.s1.type() == keel::ops::dtype::float32)
      c.s1 = ko::scalar(static_cast<float>(static_cast<std::int8_t>(in.byte())) / 8.0f);
    const std::uint32_t seed = in.u32();
    arena cached_mem, fresh_mem;
    if (!build(c, cached_mem, seed) || !build(c, fresh_mem, seed)) continue;
    const std::string key = documented_key(c);
    const std::size_t hits = cache.hits(), misses = cache.misses();
    std::string got_message, want_message;
    // exec() runs what it launches, so only views inside their buffers go
    // that way; the seed's low bit chooses (no input byte is spent on it).
    const bool through_exec = cached_mem.runnable && (seed & 1) != 0;
    const int got = through_exec ? attempt_exec(c, cached_mem, cache, got_message)
                                 : attempt(
                                       c, cached_mem,
                                       [&](const std::vector<ko::tensor>& v) { return acquire(cache, c, v); },
                                       got_message);
    const int want = attempt(
        c, fresh_mem, [&](const std::vector<ko::tensor>& v) { return prepare(c, v); }, want_message);
    // Views too large to allocate describe memory beyond their buffers, so
    // whether they overlap depends on where the two arenas landed: compare
    // only calls whose every view lies inside its buffer.
    if (!cached_mem.runnable) {
      if (got == 0) stored[key] = true;
      continue;
    }
    KEEL_FUZZ_REQUIRE(got == want, "op %d through the cache gave %d (%s), prepared afresh %d (%s); key %s", c.op, got,
                      got_message.c_str(), want, want_message.c_str(), key.c_str());
    if (!small) {
      if (stored.count(key))
        KEEL_FUZZ_REQUIRE(cache.hits() == hits + 1, "op %d: the same key missed", c.op);
      else
        KEEL_FUZZ_REQUIRE(cache.hits() == hits && cache.misses() == misses + (got == 0 ? 1 : 0), "op %d: a new key hit (keys alias): %s; stored before: %s",
                          c.op, key.c_str(), [&] {
                            std::string all;
                            for (const auto& kv : stored) all += kv.first + "  ";
                            return all;
                          }().c_str());
    }
    if (got == 0) stored[key] = true;
    for (std::size_t b = 0; b < cached_mem.buffers.size(); ++b)
      KEEL_FUZZ_REQUIRE(cached_mem.sizes[b] == 0 || std::memcmp(cached_mem.buffers[b].get(), fresh_mem.buffers[b].get(), cached_mem.sizes[b]) == 0,
                        "op %d: the cached executor wrote other bytes than a fresh one (buffer %zu)", c.op, b);
  }
  return 0;
}
