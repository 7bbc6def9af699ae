// SPDX-License-Identifier: Apache-2.0
// Phase two on host streams (what only keel's host operators have): run_on's
// own workspace and once-executors, the executor cache,
// the exec() adaptor, and two clients of one stream that must not break each
// other (the first of the bugs the README's introduction names).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "keel/core/checked_mutex.hpp"
#include "keel/host/host.hpp"
#include "keel/ops/executor_cache.hpp"
#include "keel/ops/kernels/dynamic_dispatch.hpp"
#include "keel/ops/launch.hpp"
#include "reference.hpp"

using namespace keel::ops;
using namespace keel_test;

namespace {

keel::host::device& two_worker_device() {
  static keel::host::device dev{keel::host::device_options{2}};
  return dev;
}

std::vector<float> iota(std::size_t n, float start, float step) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i);
  return v;
}

tensor view(std::vector<float>& v, std::initializer_list<std::int64_t> shape) {
  return tensor(v.data(), dtype::float32, shape);
}

}  // namespace

TEST_CASE("run_on: allocates the workspace on the stream, a once-executor runs once", "[ops][stream][host]") {
  // The backend-generic run_on and replay tests are in on_stream_test.cpp.
  const kernel_table& k = dynamic_kernels();
  keel::host::stream stream{two_worker_device()};
  baddbmm_operands o(31);
  baddbmm(k, o.self.view, o.b1.view, o.b2.view, 0.5f, 2.0f, o.expect.view);
  executor ex = prepare_baddbmm(k, o.self.view, o.b1.view, o.b2.view, 0.5f, 2.0f, o.got.view, {2, executor_use::once});
  REQUIRE(ex.workspace_size() > 0);
  run_on(stream, ex);  // workspace allocated on the stream, released in stream order
  stream.synchronize();
  CHECK(o.got.bytes == o.expect.bytes);
  CHECK_THROWS_AS(run_on(stream, ex), keel::error);  // once means once
}

TEST_CASE("run_on: once-executors are refused in capture, a replayed launch is one run", "[ops][stream][host]") {
  const kernel_table& k = dynamic_kernels();
  keel::host::stream stream{two_worker_device()};
  auto a = iota(10, 1.0f, 1.0f), b = iota(10, 0.5f, 0.0f);
  std::vector<float> out(10, 0.0f);
  executor ex = prepare_add(k, view(a, {10}), view(b, {10}), 2.0f, view(out, {10}));
  executor once = prepare_add(k, view(a, {10}), view(b, {10}), 2.0f, view(out, {10}), {1, executor_use::once});
  keel::host::model model;
  {
    keel::host::capture_scope capture{stream};
    CHECK_THROWS_AS(run_on(stream, once), keel::error);
    run_on(stream, ex);
    model = capture.end();
  }
  model.execute(stream);
  model.execute(stream);
  stream.synchronize();
  CHECK(out[9] == 11.0f);
  CHECK(ex.runs() == 1);  // one launch, replayed by the model
}

TEST_CASE("executor_cache: a hit binds this call's pointers and scalars, LRU bound, errors store nothing",
          "[ops][cache]") {
  executor_cache<> cache(dynamic_kernels(), 2);
  keel::host::stream stream{two_worker_device()};
  auto a = iota(8, 1.0f, 1.0f), b = iota(8, 10.0f, 0.0f);
  std::vector<float> o1(8, 0.0f), o2(8, 0.0f);
  exec(cache, stream, add_op{}, view(a, {4, 2}), view(b, {4, 2}), 1.0f, view(o1, {4, 2}));
  exec(cache, stream, add_op{}, view(b, {4, 2}), view(a, {4, 2}), 3.0f, view(o2, {4, 2}));  // hit: new pointers, alpha
  stream.synchronize();
  CHECK(cache.misses() == 1);
  CHECK(cache.hits() == 1);
  CHECK(o1[7] == 18.0f);  // 8 + 1 * 10
  CHECK(o2[7] == 34.0f);  // 10 + 3 * 8
  // Other strides or dtypes are other keys; the least recent leaves.
  exec(cache, stream, add_op{}, view(a, {8}), view(b, {8}), 1.0f, view(o1, {8}));
  exec(cache, stream, cast_op{}, view(a, {8}), view(o2, {8}));
  stream.synchronize();
  CHECK(cache.size() == 2);
  CHECK(cache.misses() == 3);
  exec(cache, stream, add_op{}, view(a, {4, 2}), view(b, {4, 2}), 1.0f, view(o1, {4, 2}));  // evicted: miss
  CHECK(cache.misses() == 4);
  // A hit re-checks what depends on the pointers: partial overlap is caught.
  const tensor shifted(o1.data(), dtype::float32, {4, 2}, {2, 1}, 1);
  CHECK_THROWS_AS(exec(cache, stream, add_op{}, view(o1, {4, 2}), view(b, {4, 2}), 1.0f, shifted), keel::error);
  // A failing phase one stores nothing.
  const std::size_t before = cache.size();
  CHECK_THROWS_AS(exec(cache, stream, add_op{}, view(a, {8}), view(b, {4, 2}), 1.0f, view(o1, {8})), keel::error);
  CHECK(cache.size() == before);
  stream.synchronize();
}

TEST_CASE("executor_cache: concurrent clients share one cache safely", "[ops][cache]") {
  executor_cache<> cache(dynamic_kernels(), 4);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      keel::host::stream stream{two_worker_device()};
      auto a = iota(8, static_cast<float>(t), 0.0f), b = iota(8, 1.0f, 0.0f);
      std::vector<float> out(8, 0.0f);
      for (int i = 0; i < 200; ++i) {
        const std::int64_t rows = 1 + (i % 3);  // three keys, all hot
        exec(cache, stream, add_op{}, view(a, {rows, 2}), view(b, {rows, 2}), static_cast<float>(i),
             view(out, {rows, 2}));
        stream.synchronize();
        if (out[0] != static_cast<float>(t) + static_cast<float>(i)) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(wrong == 0);
  CHECK(cache.hits() + cache.misses() == 800);
  CHECK(cache.size() <= 4);
}

TEST_CASE("mixed clients: adaptor client A and raw two-phase client B on one stream", "[ops][stream][mixed]") {
  const kernel_table& k = dynamic_kernels();
  keel::host::stream stream{two_worker_device()};
  executor_cache<> cache_a(k, 16);
  std::mt19937 rng(37);
  // B's raw two-phase call: phase one, a stream-ordered workspace, phase two.
  auto client_b_addcmul = [&](const tensor& s, const tensor& t1, const tensor& t2, float value, const tensor& out) {
    executor ex = prepare_addcmul(k, s, t1, t2, value, out, {2, executor_use::once});
    keel::host::device_buffer ws{stream, std::max<std::size_t>(ex.workspace_size(), 1)};
    run_on(stream, ex, ws.span());
  };

  SECTION("A's cast feeds B's addcmul") {
    auto x = make_tensor(dtype::float32, {6, 33});
    fill_random(x.view, rng);
    auto x16 = make_tensor(dtype::float16, {6, 33});
    auto t = make_tensor(dtype::float16, {33});
    fill_random(t.view, rng);
    auto out = make_tensor(dtype::float32, {6, 33});
    exec(cache_a, stream, cast_op{}, x.view, x16.view);
    client_b_addcmul(x16.view, x16.view, t.view, 0.5f, out.view);
    stream.synchronize();
    std::size_t bad = 0;
    for_each_index(out.view, [&](const std::int64_t* idx) {
      const float xv = read_float(x16.view, element(x16.view, idx, 2));
      const float h = half_bits_to_float(float_to_half_bits(read_float(x.view, element(x.view, idx, 2))));
      const float tv = read_float(t.view, element(t.view, idx, 2));
      // float16 inputs: computed in float32, rounded to float16, then written as float32.
      const float want = round_to(dtype::float16, target_mul_add(k.fused_multiply_add, 0.5f * h, tv, h));
      const float got = read_float(out.view, element(out.view, idx, 2));
      bad += !(got == want || (std::isnan(got) && std::isnan(want))) || !(xv == h || (std::isnan(xv) && std::isnan(h)));
    });
    CHECK(bad == 0);
  }
  SECTION("A's adaptive_avg_pool2d, then B's addcmul on the pooled result") {
    auto img = make_tensor(dtype::float32, {2, 4, 14, 14});
    fill_random(img.view, rng, false);
    auto pooled = make_tensor(dtype::float32, {2, 4, 7, 7});
    auto scale = make_tensor(dtype::float32, {4, 1, 1});
    fill_random(scale.view, rng, false);
    auto out = make_tensor(dtype::float32, {2, 4, 7, 7});
    exec(cache_a, stream, adaptive_avg_pool2d_op{}, img.view, std::int64_t{7}, std::int64_t{7}, pooled.view);
    client_b_addcmul(pooled.view, pooled.view, scale.view, 2.0f, out.view);
    stream.synchronize();
    std::size_t bad = 0;
    for_each_index(out.view, [&](const std::int64_t* idx) {
      double sum = 0;
      std::int64_t src[4] = {idx[0], idx[1], 0, 0};
      for (std::int64_t r = 0; r < 2; ++r) {
        for (std::int64_t c = 0; c < 2; ++c) {
          src[2] = idx[2] * 2 + r;
          src[3] = idx[3] * 2 + c;
          sum += read_float(img.view, element(img.view, src, 4));
        }
      }
      const double p = sum / 4;
      const double want = p + 2.0 * p * read_float(scale.view, element(scale.view, idx, 4));
      const double got = read_float(out.view, element(out.view, idx, 4));
      bad += !(std::fabs(got - want) <= 1e-4 * (1 + std::fabs(want)));
    });
    CHECK(bad == 0);
  }
  SECTION("B's addcmul, then A's baddbmm on B's result") {
    auto s = make_tensor(dtype::float32, {2, 9, 13});
    auto t1 = make_tensor(dtype::float32, {2, 9, 13});
    auto t2 = make_tensor(dtype::float32, {13});
    auto b2 = make_tensor(dtype::float32, {2, 13, 5});
    fill_random(s.view, rng, false);
    fill_random(t1.view, rng, false);
    fill_random(t2.view, rng, false);
    fill_random(b2.view, rng, false);
    auto mid = make_tensor(dtype::float32, {2, 9, 13});
    auto out = make_tensor(dtype::float32, {2, 9, 5});
    client_b_addcmul(s.view, t1.view, t2.view, 0.25f, mid.view);
    exec(cache_a, stream, baddbmm_op{}, tensor(), mid.view, b2.view, 0.0f, 1.0f, out.view);
    stream.synchronize();
    std::size_t bad = 0;
    for_each_index(out.view, [&](const std::int64_t* idx) {
      double acc = 0, mag = 0;
      for (std::int64_t kk = 0; kk < 13; ++kk) {
        const std::int64_t ia[3] = {idx[0], idx[1], kk}, ib[3] = {idx[0], kk, idx[2]}, it2[1] = {kk};
        const float m = read_float(s.view, element(s.view, ia, 3)) +
                        (0.25f * read_float(t1.view, element(t1.view, ia, 3))) * read_float(t2.view, element(t2.view, it2, 1));
        acc += static_cast<double>(m) * read_float(b2.view, element(b2.view, ib, 3));
        mag += std::fabs(static_cast<double>(m) * read_float(b2.view, element(b2.view, ib, 3)));
      }
      const double got = read_float(out.view, element(out.view, idx, 3));
      bad += !(std::fabs(got - acc) <= 1e-5 * (1 + mag));
    });
    CHECK(bad == 0);
  }
}

TEST_CASE("mixed clients: a buffer released on the host is not reused under a pending task", "[ops][stream][mixed]") {
  const kernel_table& k = dynamic_kernels();
  keel::host::stream stream{two_worker_device()};
  executor_cache<> cache(k, 4);
  constexpr std::int64_t n = 4096;
  std::vector<float> out(n, 0.0f), b(n, 1.0f);
  {
    keel::host::device_buffer in{stream, n * sizeof(float)};
    std::fill_n(in.data_as<float>(), n, 7.0f);
    stream.launch_host([] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); });  // a slow task ahead
    exec(cache, stream, add_op{}, tensor(in.data(), dtype::float32, {n}), view(b, {n}), 1.0f, view(out, {n}));
  }  // `in` released on the host while the add still waits behind the slow task
  // Another client allocates the same size at once and scribbles on it.
  keel::host::device_buffer other{stream, n * sizeof(float)};
  std::fill_n(other.data_as<float>(), n, -1.0f);
  stream.synchronize();
  CHECK(out[0] == 8.0f);
  CHECK(out[n - 1] == 8.0f);
}

TEMPLATE_TEST_CASE("executor_cache: every keel mutex policy", "[ops][cache]", keel::std_shared_mutex_policy,
                   keel::null_mutex_policy, keel::checked_mutex_policy) {
  executor_cache<TestType> cache(dynamic_kernels(), 8);
  auto a = iota(8, 1.0f, 1.0f), b = iota(8, 2.0f, 0.0f);
  std::vector<float> out(8, 0.0f);
  for (int i = 0; i < 3; ++i) {
    executor ex = cache.acquire(add_op{}, view(a, {8}), view(b, {8}), static_cast<float>(i), view(out, {8}));
    ex.run(nullptr, 0);
    CHECK(out[7] == 8.0f + 2.0f * static_cast<float>(i));
  }
  CHECK(cache.misses() == 1);
  CHECK(cache.hits() == 2);
  cache.clear();
  CHECK(cache.size() == 0);
}

TEST_CASE("exec: a hit binds this call's pointers and scalar into the launch, queued and captured launches keep theirs",
          "[ops][cache]") {
  executor_cache<> cache(dynamic_kernels(), 4);
  keel::host::stream stream{two_worker_device()};
  constexpr int calls = 6;
  std::vector<std::vector<float>> a(calls), b(calls), out(calls, std::vector<float>(8, 0.0f));
  for (int i = 0; i < calls; ++i) {
    a[i] = iota(8, static_cast<float>(i), 1.0f);
    b[i] = iota(8, 100.0f * static_cast<float>(i), 0.0f);
  }
  std::atomic<bool> go{false};
  stream.launch_host([&] {  // every call below waits in the queue until all were issued
    while (!go.load()) std::this_thread::yield();
  });
  for (int i = 0; i < calls; ++i) {
    exec(cache, stream, add_op{}, view(a[i], {4, 2}), view(b[i], {4, 2}), static_cast<float>(i + 1),
         view(out[i], {4, 2}));
  }
  go = true;
  stream.synchronize();
  CHECK(cache.misses() == 1);
  CHECK(cache.hits() == calls - 1);
  for (int i = 0; i < calls; ++i) {
    for (int e = 0; e < 8; ++e) {
      CHECK(out[i][e] == a[i][e] + static_cast<float>(i + 1) * b[i][e]);
    }
  }

  // A captured launch keeps the pointers and alpha of its own call, whatever
  // later hits on the same key bind.
  std::vector<float> cap_out(8, 0.0f), eager_out(8, 0.0f);
  keel::host::model model;
  {
    keel::host::capture_scope capture{stream};
    exec(cache, stream, add_op{}, view(a[0], {4, 2}), view(b[1], {4, 2}), 2.0f, view(cap_out, {4, 2}));
    model = capture.end();
  }
  exec(cache, stream, add_op{}, view(a[2], {4, 2}), view(b[2], {4, 2}), 5.0f, view(eager_out, {4, 2}));
  model.execute(stream);
  stream.synchronize();
  CHECK(cap_out[7] == a[0][7] + 2.0f * b[1][7]);
  CHECK(eager_out[7] == a[2][7] + 5.0f * b[2][7]);
}

TEST_CASE("exec: addcmul, cast and integer add bind their operands and scalar on a hit", "[ops][cache]") {
  executor_cache<> cache(dynamic_kernels(), 8);
  keel::host::stream stream{two_worker_device()};
  for (int round = 0; round < 3; ++round) {
    const float r = static_cast<float>(round);
    auto s = iota(6, r, 1.0f), t1 = iota(6, 1.0f + r, 0.5f), t2 = iota(6, 2.0f, r);
    std::vector<float> m(6, 0.0f);
    exec(cache, stream, addcmul_op{}, view(s, {2, 3}), view(t1, {2, 3}), view(t2, {2, 3}), 0.5f + r, view(m, {2, 3}));
    std::vector<std::int32_t> ia(6), ib(6), io(6, 0);
    for (int e = 0; e < 6; ++e) ia[e] = e + round, ib[e] = 10 * e;
    const std::int64_t alpha = round - 1;
    exec(cache, stream, add_op{}, tensor(ia.data(), dtype::int32, {6}), tensor(ib.data(), dtype::int32, {6}), alpha,
         tensor(io.data(), dtype::int32, {6}));
    std::vector<std::int64_t> wide(6, -1);
    exec(cache, stream, cast_op{}, tensor(io.data(), dtype::int32, {6}), tensor(wide.data(), dtype::int64, {6}));
    stream.synchronize();
    for (int e = 0; e < 6; ++e) {
      CHECK(m[e] == s[e] + (0.5f + r) * t1[e] * t2[e]);
      CHECK(io[e] == ia[e] + static_cast<std::int32_t>(alpha) * ib[e]);
      CHECK(wide[e] == io[e]);
    }
  }
  CHECK(cache.misses() == 3);
  CHECK(cache.hits() == 6);
}

TEST_CASE("exec: launched and captured work keeps its plan alive past eviction, clear() and the cache itself",
          "[ops][cache]") {
  keel::host::stream stream{two_worker_device()};
  auto a = iota(8, 1.0f, 1.0f), b = iota(8, 2.0f, 0.0f);
  std::vector<float> out(8, 0.0f), cap(8, 0.0f);
  keel::host::model model;
  std::atomic<bool> go{false};  // outlives the queued host task that polls it
  {
    executor_cache<> cache(dynamic_kernels(), 1);
    stream.launch_host([&] {
      while (!go.load()) std::this_thread::yield();
    });
    // More hits than one prepaid batch of references, all queued, then the
    // entry is evicted by another key and the cache cleared.
    for (int i = 0; i < 1500; ++i) exec(cache, stream, add_op{}, view(a, {8}), view(b, {8}), 1.0f, view(out, {8}));
    {
      keel::host::capture_scope capture{stream};
      exec(cache, stream, add_op{}, view(a, {8}), view(b, {8}), 3.0f, view(cap, {8}));
      model = capture.end();
    }
    exec(cache, stream, add_op{}, view(a, {4, 2}), view(b, {4, 2}), 1.0f, view(out, {4, 2}));  // evicts the {8} plan
    CHECK(cache.size() == 1);
    cache.clear();
    go = true;
  }  // the cache is gone; queued tasks and the model still hold the plans
  stream.synchronize();
  CHECK(out[7] == 8.0f + 2.0f);
  model.execute(stream);
  stream.synchronize();
  CHECK(cap[7] == 8.0f + 3.0f * 2.0f);
}

TEST_CASE("exec: concurrent clients hit, miss, evict and clear one cache", "[ops][cache]") {
  executor_cache<> cache(dynamic_kernels(), 3);  // fewer entries than keys: evictions race with hits
  std::atomic<int> wrong{0};
  std::atomic<bool> stop{false};
  std::thread clearer([&] {
    while (!stop.load()) {
      cache.clear();
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      keel::host::stream stream{two_worker_device()};
      std::vector<std::vector<float>> a, b, out;
      for (int k = 0; k < 5; ++k) {
        a.push_back(iota(10, static_cast<float>(t), 1.0f));
        b.push_back(iota(10, static_cast<float>(k), 0.0f));
        out.emplace_back(10, 0.0f);
      }
      for (int i = 0; i < 300; ++i) {
        const int k = (i * 7 + t) % 5;  // five keys: 1..5 elements
        const std::int64_t n = k + 1;
        exec(cache, stream, add_op{}, view(a[k], {n}), view(b[k], {n}), static_cast<float>(i % 4),
             view(out[k], {n}));
        if (i % 16 == 15 || i == 299) {
          stream.synchronize();
          // The last call on each key decides its output.
          for (int kk = 0; kk < 5; ++kk) {
            int last = -1;
            for (int j = 0; j <= i; ++j) {
              if ((j * 7 + t) % 5 == kk) last = j;
            }
            if (last < 0) continue;
            const float want = a[kk][kk] + static_cast<float>(last % 4) * b[kk][kk];
            if (out[kk][kk] != want) ++wrong;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  stop = true;
  clearer.join();
  CHECK(wrong == 0);
  CHECK(cache.hits() + cache.misses() == 1200);
  CHECK(cache.size() <= 3);
}

TEST_CASE("exec: a hit allows exactly in place and refuses any other overlap, as phase one does", "[ops][cache]") {
  executor_cache<> cache(dynamic_kernels(), 8);
  keel::host::stream stream{two_worker_device()};
  std::vector<float> buf(16, 1.0f), other(16, 2.0f);
  const tensor whole(buf.data(), dtype::float32, {8});
  for (int i = 0; i < 2; ++i) {  // a miss, then a hit: both in place
    exec(cache, stream, add_op{}, whole, tensor(other.data(), dtype::float32, {8}), 1.0f, whole);
    exec(cache, stream, addcmul_op{}, whole, tensor(other.data(), dtype::float32, {8}),
         tensor(other.data(), dtype::float32, {8}), 0.5f, whole);
  }
  stream.synchronize();
  CHECK(buf[0] == 1.0f + 2 * (2.0f + 2.0f));  // twice: +1*2, then +0.5*2*2
  CHECK(buf[8] == 1.0f);  // outside the views
  CHECK(cache.hits() == 2);
  // Same keys, views shifted by one element: partial overlap on a hit.
  const tensor shifted(buf.data() + 1, dtype::float32, {8});
  CHECK_THROWS_AS(exec(cache, stream, add_op{}, shifted, tensor(other.data(), dtype::float32, {8}), 1.0f, whole),
                  keel::error);
  CHECK_THROWS_AS(exec(cache, stream, addcmul_op{}, whole, shifted, tensor(other.data(), dtype::float32, {8}), 0.5f,
                       whole),
                  keel::error);
  // Adjacent, not overlapping: allowed.
  const tensor next(buf.data() + 8, dtype::float32, {8});
  exec(cache, stream, add_op{}, next, tensor(other.data(), dtype::float32, {8}), 1.0f, whole);
  stream.synchronize();
  CHECK(buf[0] == 3.0f);
  CHECK(cache.hits() == 5);
  // A cast between dtypes is never in place, even at the same address.
  std::vector<float> f(4, 1.5f);
  exec(cache, stream, cast_op{}, tensor(f.data(), dtype::float32, {4}), tensor(other.data(), dtype::int32, {4}));
  CHECK_THROWS_AS(exec(cache, stream, cast_op{}, tensor(f.data(), dtype::float32, {4}),
                       tensor(f.data(), dtype::int32, {4})),
                  keel::error);
  stream.synchronize();
}

TEST_CASE("exec: a captured hit in a task group is replaced by an update that exec()s the same operator",
          "[ops][cache]") {
  executor_cache<> cache(dynamic_kernels(), 4);
  keel::host::stream s{two_worker_device()}, u{two_worker_device()};
  auto a = iota(8, 1.0f, 1.0f), b = iota(8, 10.0f, 0.0f), c = iota(8, 100.0f, 0.0f);
  std::vector<float> out(8, 0.0f);
  exec(cache, s, add_op{}, view(a, {8}), view(b, {8}), 1.0f, view(out, {8}));  // the miss: captured below as hits
  s.synchronize();
  keel::host::model model;
  keel::host::task_group group;
  {
    keel::host::capture_scope capture{s};
    keel::host::task_group_scope mark{s};
    exec(cache, s, add_op{}, view(a, {8}), view(b, {8}), 2.0f, view(out, {8}));
    group = mark.end();
    model = capture.end();
  }
  model.execute(s);
  s.synchronize();
  CHECK(out[7] == 8.0f + 2.0f * 10.0f);
  {
    keel::host::update_scope update{u, group};  // same kind (keel.ops.add), other pointers and alpha
    exec(cache, u, add_op{}, view(a, {8}), view(c, {8}), 3.0f, view(out, {8}));
    update.end();
  }
  u.synchronize();
  model.execute(s);
  s.synchronize();
  CHECK(out[7] == 8.0f + 3.0f * 100.0f);
  CHECK(cache.misses() == 1);
  CHECK(cache.hits() == 2);
}
