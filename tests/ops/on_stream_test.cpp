// SPDX-License-Identifier: Apache-2.0
// The five operators' two phases on a stream, on every backend
// (backends.hpp): phase one validates by keel condition, phase two runs on a
// stream, in stream order, and capture replays it on current memory; one
// generic function runs prepare, run_on, the executor cache and exec() on
// each. The host operators' own rules (executor use counts, the cache's
// binding of hits, its policies) are in stream_test.cpp and operators_test.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends.hpp"
#include "keel/host/memory_pool.hpp"
#include "reference.hpp"
#ifdef KEEL_ACL_EMULATION_DIR
#include "keel/acl/memory_pool.hpp"  // the ACL registration hooks (aclrtAllocatorRegister)
#endif

using keel::ops::dtype;
using keel::ops::scalar;
using keel::ops::tensor;

namespace {

// n floats on the backend's device, filled from the host through a pinned buffer.
template <class F>
struct floats {
  typename F::device_buffer dev;
  typename F::pinned_buffer host;
  std::size_t n;
  floats(const typename F::stream& s, std::size_t count, float value)
      : dev(s, count * sizeof(float)), host(s, count * sizeof(float)), n(count) {
    for (std::size_t i = 0; i < n; ++i) host.template data_as<float>()[i] = value;
    s.copy_async(dev.span(), host.span());
  }
  tensor view(std::initializer_list<std::int64_t> shape) const { return tensor(dev.data(), dtype::float32, shape); }
  tensor view() const { return tensor(dev.data(), dtype::float32, {std::int64_t(n)}); }
  float* read() const { return host.template data_as<float>(); }
  void fetch(const typename F::stream& s) const { s.copy_async(host.span(), dev.span()); }
  bool all(float want) const {
    for (std::size_t i = 0; i < n; ++i)
      if (read()[i] != Approx(want)) return false;
    return true;
  }
};

// Phase two on s with a workspace of the executor's size, then synchronize:
// the same generic calls on every backend.
template <class F, class Executor>
void run_now(const typename F::stream& s, Executor&& ex) {
  typename F::device_buffer ws;
  if (ex.workspace_size() != 0) ws = typename F::device_buffer{s, static_cast<std::size_t>(ex.workspace_size())};
  keel::ops::run_on(s, ex, ws ? ws.span() : keel::memory_span{});
  s.synchronize();
}


// Written once against the library's vocabulary, with nothing that names a
// backend: phase one on any target, phase two on any stream, the executor
// cache of that target's layer and exec(). Returns the cache's hits and
// misses. out1 = x + 2y (prepare, run_on); out2 = x + 3y three times
// (exec, exec, acquire + run_on: the same call); then out1 = y + 3x (exec with
// other pointers under the same layout).
template <class Target, class Stream>
std::pair<std::size_t, std::size_t> add_every_way(Target& target, const Stream& s, const tensor& x, const tensor& y,
                                                  const tensor& out1, const tensor& out2) {
  auto ex = keel::ops::prepare_add(target, x, y, scalar(2.0f), out1);
  keel::ops::run_on(s, ex);  // the workspace (if any) comes from the stream, released in stream order
  CHECK(ex.runs() == 1);
  CHECK(ex.op() == keel::ops::op_kind::add);
  keel::ops::executor_cache_for<Target> cache(target, 8);
  keel::ops::exec(cache, s, keel::ops::add_op{}, x, y, scalar(3.0f), out2);  // a miss: prepared and kept
  keel::ops::exec(cache, s, keel::ops::add_op{}, x, y, scalar(3.0f), out2);  // the same call: a hit
  auto again = cache.acquire(keel::ops::add_op{}, x, y, scalar(3.0f), out2);
  keel::ops::run_on(s, again);
  s.synchronize();
  CHECK(cache.size() == 1);
  keel::ops::exec(cache, s, keel::ops::add_op{}, y, x, scalar(3.0f), out1);  // other memory, same layout
  s.synchronize();
  return {cache.hits(), cache.misses()};
}

// out = x * y twice through exec and the target's executor cache: one miss, one hit.
template <class Target, class Stream>
std::pair<std::size_t, std::size_t> mul_through_cache(Target& target, const Stream& s, const tensor& x, const tensor& y,
                                                      const tensor& out) {
  keel::ops::executor_cache_for<Target> cache(target, 4);
  keel::ops::exec(cache, s, keel::ops::mul_op{}, x, y, out);
  keel::ops::exec(cache, s, keel::ops::mul_op{}, x, y, out);
  s.synchronize();
  return {cache.hits(), cache.misses()};
}

}  // namespace

KEEL_OPS_BACKEND_TEST("mul: broadcasting on a stream, exec through the cache, and a refused shape leaves out alone",
                      "[ops][stream][mul]") {
  using F = TestType;
  typename F::stream s{F::device()};
  floats<F> a(s, 6, 1.5f), b(s, 3, -2.0f), out(s, 6, 9.0f);
  s.synchronize();
  auto ex = keel::ops::prepare_mul(F::target(), a.view({2, 3}), b.view({3}), out.view({2, 3}));  // b broadcast over rows
  CHECK(ex.op() == keel::ops::op_kind::mul);
  run_now<F>(s, ex);
  out.fetch(s);
  s.synchronize();
  CHECK(out.all(-3.0f));
  const auto counts = mul_through_cache(F::target(), s, b.view({1, 3}), a.view({2, 3}), out.view({2, 3}));
  CHECK(counts.first == 1);
  CHECK(counts.second == 1);
  out.fetch(s);
  s.synchronize();
  CHECK(out.all(-3.0f));
  bool refused = false;
  try {
    (void)keel::ops::prepare_mul(F::target(), a.view({2, 3}), b.view({1, 2}), out.view({2, 3}));
  } catch (const keel::error& e) {
    INFO(e.what());
    refused = true;
    CHECK(keel_test::is(e.code(), keel::errc::invalid_parameter));
  }
  CHECK(refused);
  out.fetch(s);
  s.synchronize();
  CHECK(out.all(-3.0f));
}

KEEL_OPS_BACKEND_TEST("operators: every operator through its two phases on a stream", "[ops][stream]") {
  using F = TestType;
  typename F::stream s{F::device()};
  floats<F> a(s, 4, 2.0f), b(s, 4, 3.0f), c(s, 4, 0.5f), out(s, 4, 0.0f);
  s.synchronize();

  run_now<F>(s, keel::ops::prepare_add(F::target(), a.view(), b.view(), scalar(2.0f), out.view()));
  out.fetch(s);
  s.synchronize();
  CHECK(out.all(8.0f));  // 2 + 2 * 3

  run_now<F>(s, keel::ops::prepare_mul(F::target(), a.view(), b.view(), out.view()));
  out.fetch(s);
  s.synchronize();
  CHECK(out.all(6.0f));  // 2 * 3

  run_now<F>(s, keel::ops::prepare_addcmul(F::target(), a.view(), b.view(), c.view(), scalar(4.0f), out.view()));
  out.fetch(s);
  s.synchronize();
  CHECK(out.all(8.0f));  // 2 + 4 * 3 * 0.5

  {  // float32 -> int32
    typename F::device_buffer ints{s, 4 * sizeof(std::int32_t)};
    run_now<F>(s, keel::ops::prepare_cast(F::target(), b.view(), tensor(ints.data(), dtype::int32, {4})));
    std::int32_t back[4] = {0, 0, 0, 0};
    s.copy(back, ints.data(), sizeof back, keel::copy_kind::device_to_host);
    CHECK(back[0] == 3);
    CHECK(back[3] == 3);
  }
  {  // 1 x 1 x 4 x 4 ramp -> 2 x 2 means
    floats<F> img(s, 16, 0.0f), pooled(s, 4, 0.0f);
    s.synchronize();  // the constructors' uploads read the host buffers
    for (int i = 0; i < 16; ++i) img.read()[i] = static_cast<float>(i);
    s.copy_async(img.dev.span(), img.host.span());
    run_now<F>(s, keel::ops::prepare_adaptive_avg_pool2d(F::target(), img.view({1, 1, 4, 4}), 2, 2, pooled.view({1, 1, 2, 2})));
    pooled.fetch(s);
    s.synchronize();
    CHECK(pooled.read()[0] == Approx(2.5f));   // mean of 0 1 4 5
    CHECK(pooled.read()[3] == Approx(12.5f));  // mean of 10 11 14 15
  }
  {  // one batch: 0.5 * 1 + 2 * ([[1,2],[3,4]] @ [[1,0],[0,1]])
    floats<F> self(s, 4, 1.0f), m1(s, 4, 0.0f), m2(s, 4, 0.0f), res(s, 4, 0.0f);
    s.synchronize();
    const float x[4] = {1, 2, 3, 4}, id[4] = {1, 0, 0, 1};
    std::memcpy(m1.host.data(), x, sizeof x);
    std::memcpy(m2.host.data(), id, sizeof id);
    s.copy_async(m1.dev.span(), m1.host.span());
    s.copy_async(m2.dev.span(), m2.host.span());
    run_now<F>(s, keel::ops::prepare_baddbmm(F::target(), self.view({1, 2, 2}), m1.view({1, 2, 2}), m2.view({1, 2, 2}), scalar(0.5f),
                                     scalar(2.0f), res.view({1, 2, 2})));
    res.fetch(s);
    s.synchronize();
    CHECK(res.read()[0] == Approx(2.5f));
    CHECK(res.read()[1] == Approx(4.5f));
    CHECK(res.read()[2] == Approx(6.5f));
    CHECK(res.read()[3] == Approx(8.5f));
  }
}

KEEL_OPS_BACKEND_TEST("operators: phase one reports null and invalid arguments by keel condition", "[ops][stream]") {
  using F = TestType;
  typename F::stream s{F::device()};
  floats<F> a(s, 8, 1.0f), out(s, 8, 0.0f);
  s.synchronize();
  auto condition_of = [](auto&& f) {
    try {
      f();
    } catch (const keel::error& e) {
      INFO(e.what());
      return e.code();
    }
    return std::error_code{};
  };
  const tensor none(nullptr, dtype::float32, {8});
  CHECK(keel_test::is(condition_of([&] { (void)keel::ops::prepare_add(F::target(), none, a.view(), scalar(1.0f), out.view()); }),
                      keel::errc::null_parameter));
  const tensor wrong(out.dev.data(), dtype::float32, {3});
  CHECK(keel_test::is(condition_of([&] { (void)keel::ops::prepare_add(F::target(), a.view(), a.view(), scalar(1.0f), wrong); }),
                      keel::errc::invalid_parameter));
  CHECK(keel_test::is(condition_of([&] {
                        (void)keel::ops::prepare_adaptive_avg_pool2d(F::target(), a.view({2, 4}), 1, 1, out.view({1, 1}));
                      }),
                      keel::errc::invalid_parameter));
}

KEEL_OPS_BACKEND_TEST("operators: a workspace size that would wrap is refused at phase one", "[ops][stream]") {
  using F = TestType;
  typename F::stream s{F::device()};
  floats<F> a(s, 8, 1.0f), out(s, 8, 0.0f);
  s.synchronize();
  auto refusal_of = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const keel::error& e) {
      INFO(e.what());
      CHECK(keel_test::is(e.code(), keel::errc::invalid_parameter));
      return e.what();
    }
    return "no error";
  };
  // Stride-0 float16 views of 2^62 elements over 2 bytes of device memory:
  // their float32 copies in the workspace would take 2^64 bytes.
  const std::int64_t two_58 = std::int64_t{1} << 58, two_60 = std::int64_t{1} << 60;
  const tensor plane(a.dev.data(), dtype::float16, {1, 1, two_58, 16}, {0, 0, 0, 0});
  const tensor pooled(out.dev.data(), dtype::float16, {1, 1, 2, 2});
  CHECK_THAT(refusal_of([&] { (void)keel::ops::prepare_adaptive_avg_pool2d(F::target(), plane, 2, 2, pooled); }),
             Catch::Contains("per-worker scratch") && Catch::Contains("PTRDIFF_MAX"));
  const tensor b1(a.dev.data(), dtype::float16, {4, 1, two_60}, {0, 0, 0});
  const tensor b2(a.dev.data(), dtype::float16, {4, two_60, 1}, {0, 0, 0});
  const tensor product(out.dev.data(), dtype::float16, {4, 1, 1});
  const tensor bias(a.dev.data(), dtype::float16, {4, 1, 1}, {0, 0, 0});
  CHECK_THAT(refusal_of([&] { (void)keel::ops::prepare_baddbmm(F::target(), bias, b1, b2, scalar(1.0f), scalar(1.0f), product); }),
             Catch::Contains("half-precision baddbmm") && Catch::Contains("PTRDIFF_MAX"));
}

KEEL_OPS_BACKEND_TEST("run_on: phase two on a stream matches the synchronous run, workspace included", "[ops][stream]") {
  using F = TestType;
  using namespace keel_test;
  typename F::stream s{F::device()};
  baddbmm_operands o(31);
  keel::ops::baddbmm(keel::ops::dynamic_kernels(), o.self.view, o.b1.view, o.b2.view, 0.5f, 2.0f, o.expect.view);
  auto ex = keel::ops::prepare_baddbmm(F::target(), o.self.view, o.b1.view, o.b2.view, scalar(0.5f), scalar(2.0f), o.got.view);
  REQUIRE(ex.workspace_size() > 0);
  run_now<F>(s, ex);  // the workspace is released in stream order
  CHECK(o.got.bytes == o.expect.bytes);
}

KEEL_OPS_BACKEND_TEST("run_on: an executor prepared in the call (a temporary) runs, with or without a workspace",
                      "[ops][stream]") {
  using F = TestType;
  using namespace keel_test;
  typename F::stream s{F::device()};
  std::vector<float> a(10, 1.0f), b(10, 0.5f), out(10, 0.0f);
  auto v = [](std::vector<float>& x) { return tensor(x.data(), dtype::float32, {10}); };
  keel::ops::run_on(s, keel::ops::prepare_add(F::target(), v(a), v(b), scalar(2.0f), v(out)));
  s.synchronize();
  CHECK(out[9] == 2.0f);
  keel::ops::run_on(s, keel::ops::prepare_add(F::target(), v(a), v(b), scalar(4.0f), v(out)), keel::memory_span{});
  s.synchronize();
  CHECK(out[9] == 3.0f);
  baddbmm_operands o(31);
  keel::ops::baddbmm(keel::ops::dynamic_kernels(), o.self.view, o.b1.view, o.b2.view, 0.5f, 2.0f, o.expect.view);
  // The workspace comes from the stream and is released in stream order.
  keel::ops::run_on(s, keel::ops::prepare_baddbmm(F::target(), o.self.view, o.b1.view, o.b2.view, scalar(0.5f),
                                                  scalar(2.0f), o.got.view));
  s.synchronize();
  CHECK(o.got.bytes == o.expect.bytes);
}

KEEL_OPS_BACKEND_TEST("run_on: a captured launch replays on current memory", "[ops][stream]") {
  using F = TestType;
  typename F::stream s{F::device()};
  std::vector<float> a(10), b(10, 0.5f), out(10, 0.0f);
  for (std::size_t i = 0; i < 10; ++i) a[i] = 1.0f + static_cast<float>(i);
  auto v = [](std::vector<float>& x) { return tensor(x.data(), dtype::float32, {10}); };
  auto ex = keel::ops::prepare_add(F::target(), v(a), v(b), scalar(2.0f), v(out));
  typename F::model model;
  {
    typename F::capture_scope capture{s};
    keel::ops::run_on(s, ex, keel::memory_span{});
    model = capture.end();
  }
  s.synchronize();
  CHECK(out[0] == 0.0f);  // captured, not run
  model.execute(s);
  s.synchronize();
  CHECK(out[9] == 11.0f);
  b.assign(10, 1.0f);  // the replay reads memory as it is at run time
  model.execute(s);
  model.execute(s);
  s.synchronize();
  CHECK(out[9] == 12.0f);
}

KEEL_OPS_BACKEND_TEST("operators: mixed dtypes promote through the common dtype on every backend",
                      "[ops][stream][promotion]") {
  // The ACL emulation's aclnnAdd and aclnnAddcmul share keel's operators:
  // an int32 operand meeting a half tensor is rounded to the half type first.
  using F = TestType;
  typename F::stream s{F::device()};
  const std::int32_t ints[2] = {2049, 999};
  const std::uint16_t halves[3] = {keel::ops::float_to_half_bits(-2048.0f), keel::ops::float_to_bfloat16_bits(1.0f),
                                   keel::ops::float_to_bfloat16_bits(-1000.0f)};
  typename F::device_buffer i_dev{s, sizeof ints}, h_dev{s, sizeof halves}, out_dev{s, 2 * sizeof(std::uint16_t)};
  s.copy(i_dev.data(), ints, sizeof ints, keel::copy_kind::host_to_device);
  s.copy(h_dev.data(), halves, sizeof halves, keel::copy_kind::host_to_device);
  const auto* i_ptr = static_cast<const std::int32_t*>(i_dev.data());
  const auto* h_ptr = static_cast<const std::uint16_t*>(h_dev.data());
  auto* o_ptr = static_cast<std::uint16_t*>(out_dev.data());
  // add(int32 {2049}, float16 {-2048}) -> float16: 0 (2049 is 2048 in float16)
  run_now<F>(s, keel::ops::prepare_add(F::target(), tensor(i_ptr, dtype::int32, {1}), tensor(h_ptr, dtype::float16, {1}), scalar(1.0f),
                               tensor(o_ptr, dtype::float16, {1})));
  // addcmul(int32 {999}, bfloat16 {1}, bfloat16 {-1000}) -> bfloat16: 0
  run_now<F>(s, keel::ops::prepare_addcmul(F::target(), tensor(i_ptr + 1, dtype::int32, {1}), tensor(h_ptr + 1, dtype::bfloat16, {1}),
                                   tensor(h_ptr + 2, dtype::bfloat16, {1}), scalar(1.0f),
                                   tensor(o_ptr + 1, dtype::bfloat16, {1})));
  std::uint16_t back[2] = {0xFFFF, 0xFFFF};
  s.copy(back, out_dev.data(), sizeof back, keel::copy_kind::device_to_host);
  CHECK(keel::ops::half_bits_to_float(back[0]) == 0.0f);
  CHECK(keel::ops::bfloat16_bits_to_float(back[1]) == 0.0f);
}

KEEL_OPS_BACKEND_TEST("operators: one generic function prepares, runs, caches and execs on every backend",
                      "[ops][stream][cache]") {
  using F = TestType;
  typename F::stream s{F::device()};
  floats<F> x(s, 6, 1.0f), y(s, 6, 3.0f), out1(s, 6, 0.0f), out2(s, 6, 0.0f);
  s.synchronize();
  const auto [hits, misses] = add_every_way(F::target(), s, x.view(), y.view(), out1.view(), out2.view());
  out1.fetch(s);
  out2.fetch(s);
  s.synchronize();
  CHECK(out2.all(10.0f));  // 1 + 3 * 3, from the miss, the hit and the acquired executor alike
  CHECK(out1.all(6.0f));   // 3 + 3 * 1: the last call ran on its own memory, never on the cached call's
  // The host operators bind a hit to this call's memory, so other pointers
  // under the same layout hit; an aclOpExecutor is bound to its tensors'
  // addresses, so on ACL they are a new key.
  CHECK(hits == (F::is_host ? 3u : 2u));
  CHECK(misses == (F::is_host ? 1u : 2u));
}

// ---- pools registered per stream --------------------------------------------

KEEL_OPS_BACKEND_TEST("run_on: an operator's workspace comes from the pool registered as its stream's allocator",
                      "[ops][stream][memory_pool]") {
  using F = TestType;
  using backend = typename F::backend;
  typename F::stream s{F::device()};
  keel_test::baddbmm_operands o(31);
  keel::ops::baddbmm(keel::ops::dynamic_kernels(), o.self.view, o.b1.view, o.b2.view, 0.5f, 2.0f, o.expect.view);
  auto ex = keel::ops::prepare_baddbmm(F::target(), o.self.view, o.b1.view, o.b2.view, scalar(0.5f), scalar(2.0f), o.got.view);
  REQUIRE(ex.workspace_size() > 0);
  keel::basic_memory_pool<backend> pool{F::device(), {"client workspaces"}};
  {
    keel::basic_allocator_registration<backend> uses{s, pool};
    keel::ops::run_on(s, ex);  // keel's phase two takes the workspace from the registered pool
    CHECK(pool.statistics().allocations == 1);
    CHECK(pool.statistics().used_high >= ex.workspace_size());
    s.synchronize();
    CHECK(o.got.bytes == o.expect.bytes);
#ifdef KEEL_ACL_EMULATION_DIR
    if constexpr (!F::is_host) {
      // aclnnBaddbmm given no workspace: the runtime asks the stream's
      // aclrtAllocator (aclrtAllocatorGetByStream), which is the pool.
      std::fill(o.got.bytes.begin(), o.got.bytes.end(), 0);
      keel::acl::run_on(s, ex);
      s.synchronize();
      CHECK(pool.statistics().allocations == 2);
      CHECK(o.got.bytes == o.expect.bytes);
    }
#endif
  }
  CHECK(pool.statistics().used == 0);  // every workspace went back in stream order
  // Without a registration the workspace is the device's, and a null one is refused.
  std::fill(o.got.bytes.begin(), o.got.bytes.end(), 0);
  keel::ops::run_on(s, ex);
  s.synchronize();
  CHECK(pool.statistics().allocations == 2 - int(F::is_host));
  CHECK(o.got.bytes == o.expect.bytes);
#ifdef KEEL_ACL_EMULATION_DIR
  if constexpr (!F::is_host) {
    std::string refusal;
    try {
      keel::acl::run_on(s, ex);
    } catch (const keel::error& e) {
      refusal = e.what();
      CHECK(e.code() == keel::errc::null_parameter);
    }
    CHECK_THAT(refusal, Catch::Contains("keel::acl::run_on") && Catch::Contains("needs a workspace"));
  }
#endif
}

// The mixed-clients scenario of stream_test.cpp on every backend, each client
// with its own stream and its own pool registered as that stream's allocator:
// client A through an executor cache and exec(), client B by hand-written
// two-phase calls (on ACL, aclnn given no workspace: the runtime takes it
// from B's registered aclrtAllocator). Events order the hand-over; neither
// client's memory ever comes from the other's pool.
KEEL_OPS_BACKEND_TEST("mixed clients: an adaptor and a two-phase client, each with its own registered pool, in three orders",
                      "[ops][stream][mixed][memory_pool]") {
  using F = TestType;
  using backend = typename F::backend;
  const keel::ops::kernel_table& k = keel::ops::dynamic_kernels();
  typename F::stream sa{F::device()}, sb{F::device()};
  keel::basic_memory_pool<backend> pool_a{F::device(), {"client A"}}, pool_b{F::device(), {"client B"}};
  keel::basic_allocator_registration<backend> reg_a{sa, pool_a}, reg_b{sb, pool_b};
  keel::ops::executor_cache_for<std::remove_reference_t<decltype(F::target())>> cache_a(F::target(), 16);
  typename F::event a_done{F::device()}, b_done{F::device()};
  auto client_b = [&](auto&& prepare) {
    auto ex = prepare();
#ifdef KEEL_ACL_EMULATION_DIR
    if constexpr (!F::is_host) {
      keel::acl::run_on(sb, ex);  // no workspace: the runtime asks sb's aclrtAllocator
      return;
    }
#endif
    keel::ops::run_on(sb, ex);  // the workspace from sb's registered pool
  };
  std::mt19937 rng(37);
  using keel_test::make_tensor;
  using keel_test::fill_random;

  SECTION("A's cast feeds B's addcmul") {
    auto x = make_tensor(dtype::float32, {6, 33});
    fill_random(x.view, rng);
    auto x16 = make_tensor(dtype::float16, {6, 33}), t = make_tensor(dtype::float16, {33});
    fill_random(t.view, rng);
    auto out = make_tensor(dtype::float32, {6, 33}), want16 = make_tensor(dtype::float16, {6, 33}),
         want = make_tensor(dtype::float32, {6, 33});
    keel::ops::cast(k, x.view, want16.view);
    keel::ops::addcmul(k, want16.view, want16.view, t.view, 0.5f, want.view);
    keel::ops::exec(cache_a, sa, keel::ops::cast_op{}, x.view, x16.view);
    a_done.record(sa);
    sb.wait(a_done);
    client_b([&] { return keel::ops::prepare_addcmul(F::target(), x16.view, x16.view, t.view, scalar(0.5f), out.view); });
    sb.synchronize();
    CHECK(x16.bytes == want16.bytes);
    CHECK(out.bytes == want.bytes);
  }
  SECTION("A's adaptive_avg_pool2d, then B's addcmul on the pooled result") {
    auto img = make_tensor(dtype::float32, {2, 4, 14, 14});
    fill_random(img.view, rng, false);
    auto pooled = make_tensor(dtype::float32, {2, 4, 7, 7}), scale = make_tensor(dtype::float32, {4, 1, 1});
    fill_random(scale.view, rng, false);
    auto out = make_tensor(dtype::float32, {2, 4, 7, 7}), want_pooled = make_tensor(dtype::float32, {2, 4, 7, 7}),
         want = make_tensor(dtype::float32, {2, 4, 7, 7});
    keel::ops::adaptive_avg_pool2d(k, img.view, 7, 7, want_pooled.view);
    keel::ops::addcmul(k, want_pooled.view, want_pooled.view, scale.view, 2.0f, want.view);
    keel::ops::exec(cache_a, sa, keel::ops::adaptive_avg_pool2d_op{}, img.view, std::int64_t{7}, std::int64_t{7},
                    pooled.view);
    a_done.record(sa);
    sb.wait(a_done);
    client_b([&] {
      return keel::ops::prepare_addcmul(F::target(), pooled.view, pooled.view, scale.view, scalar(2.0f), out.view);
    });
    sb.synchronize();
    CHECK(pooled.bytes == want_pooled.bytes);
    // float32 addcmul: the emulation's kernels may fuse the multiply-add
    // where the dynamic target does not (stream_test.cpp allows the same).
    std::size_t bad = 0;
    for (std::size_t i = 0; i < want.bytes.size() / sizeof(float); ++i) {
      float got = 0, ref = 0;
      std::memcpy(&got, out.bytes.data() + i * sizeof(float), sizeof got);
      std::memcpy(&ref, want.bytes.data() + i * sizeof(float), sizeof ref);
      bad += !(std::fabs(got - ref) <= 1e-5f * (1 + std::fabs(ref)));
    }
    CHECK(bad == 0);
  }
  SECTION("B's addcmul, then A's baddbmm on B's result") {
    keel_test::baddbmm_operands o(41);
    auto t2 = make_tensor(dtype::bfloat16, {70});
    fill_random(t2.view, rng, false);
    auto mid = make_tensor(dtype::bfloat16, {3, 20, 70}), want_mid = make_tensor(dtype::bfloat16, {3, 20, 70});
    keel::ops::addcmul(k, o.b1.view, o.b1.view, t2.view, 0.25f, want_mid.view);
    keel::ops::baddbmm(k, o.self.view, want_mid.view, o.b2.view, 0.5f, 2.0f, o.expect.view);
    client_b([&] { return keel::ops::prepare_addcmul(F::target(), o.b1.view, o.b1.view, t2.view, scalar(0.25f), mid.view); });
    b_done.record(sb);
    sa.wait(b_done);
    keel::ops::exec(cache_a, sa, keel::ops::baddbmm_op{}, o.self.view, mid.view, o.b2.view, scalar(0.5f), scalar(2.0f),
                    o.got.view);
    sa.synchronize();
    CHECK(mid.bytes == want_mid.bytes);
    CHECK(o.got.bytes == o.expect.bytes);
    CHECK(pool_a.statistics().allocations >= 1);  // A's baddbmm workspace came from A's pool
  }
  sa.synchronize();
  sb.synchronize();
  CHECK(pool_a.statistics().used == 0);
  CHECK(pool_b.statistics().used == 0);
}
