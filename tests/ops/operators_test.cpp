// SPDX-License-Identifier: Apache-2.0
// Phase one: every validation rule is the documented error, names the
// tensor, and writes nothing to out. Phase two: executor use, workspace
// checks, and chunks run by several workers giving the serial result.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "keel/ops/kernels/dynamic_dispatch.hpp"
#include "keel/ops/operators.hpp"
#include "reference.hpp"

using namespace keel::ops;
using namespace keel_test;

namespace {

// Runs f, which must throw keel::error with `code` and a message containing
// `needle`, and checks that out's storage is unchanged.
template <class F>
void expect_error(F&& f, keel::errc code, const std::string& needle, const owned_tensor& out) {
  const std::vector<unsigned char> before = out.bytes;
  try {
    f();
    FAIL("no error; expected one containing \"" << needle << "\"");
  } catch (const keel::error& e) {
    INFO(e.what());
    CHECK(e.code() == code);
    CHECK(std::string(e.rule()).find(needle) != std::string::npos);
  }
  CHECK(out.bytes == before);
}

// A two-thread fork-join for_each: chunk i runs on worker i % 2.
struct two_workers {
  template <class Body>
  void operator()(std::size_t count, Body&& body) const {
    std::thread other([&] {
      for (std::size_t i = 1; i < count; i += 2) body(i, std::size_t{1});
    });
    for (std::size_t i = 0; i < count; i += 2) body(i, std::size_t{0});
    other.join();
  }
};

}  // namespace

TEST_CASE("add: validation errors name the tensor and the rule and leave out untouched", "[ops][operators][add]") {
  const kernel_table& k = dynamic_kernels();
  auto a = make_tensor(dtype::float32, {4, 5});
  auto b = make_tensor(dtype::float32, {4, 5});
  auto out = make_tensor(dtype::float32, {4, 5});
  std::mt19937 rng(1);
  fill_random(out.view, rng);
  using E = keel::errc;
  expect_error([&] { add(k, tensor(), b.view, 1.0f, out.view); }, E::null_parameter, "self", out);
  expect_error([&] { add(k, a.view, tensor(), 1.0f, out.view); }, E::null_parameter, "other", out);
  expect_error([&] { add(k, a.view, b.view, 1.0f, tensor(nullptr, dtype::float32, {4, 5})); }, E::null_parameter, "out", out);
  auto c3 = make_tensor(dtype::float32, {3});
  expect_error([&] { add(k, a.view, c3.view, 1.0f, out.view); }, E::invalid_parameter, "not broadcastable", out);
  auto wrong = make_tensor(dtype::float32, {4, 6});
  expect_error([&] { add(k, a.view, b.view, 1.0f, wrong.view); }, E::invalid_parameter, "out has shape", wrong);
  auto ints = make_tensor(dtype::int32, {4, 5});
  expect_error([&] { add(k, a.view, b.view, 1.0f, ints.view); }, E::invalid_parameter, "can't be cast", ints);
  expect_error([&] { add(k, ints.view, ints.view, 1.5f, out.view); }, E::invalid_parameter, "alpha", out);
  expect_error([&] { add(k, a.view, b.view, true, out.view); }, E::invalid_parameter, "alpha", out);
  auto i8 = make_tensor(dtype::int8, {4, 5});
  auto u8 = make_tensor(dtype::uint8, {4, 5});
  expect_error([&] { add(k, i8.view, u8.view, 1, out.view); }, E::invalid_parameter, "int16", out);
  expect_error([&] { add(k, i8.view, i8.view, 1, out.view); }, E::invalid_parameter, "promote to int8", out);
  // Partial overlap: out shifted by one element over self.
  std::vector<float> buf(64, 1.0f);
  const tensor self(buf.data(), dtype::float32, {4, 5});
  const tensor shifted(buf.data(), dtype::float32, {4, 5}, {5, 1}, 1);
  owned_tensor view_of_buf;  // checks buf through a copy below
  const std::vector<float> before = buf;
  try {
    add(k, self, b.view, 1.0f, shifted);
    FAIL("partial overlap accepted");
  } catch (const keel::error& e) {
    CHECK(e.code() == E::invalid_parameter);
    CHECK(std::string(e.rule()).find("partial overlap") != std::string::npos);
  }
  CHECK(buf == before);
  // An out that writes one element twice.
  expect_error([&] { add(k, a.view, b.view, 1.0f, tensor(out.view.data(), dtype::float32, {4, 5}, {0, 1})); },
               E::invalid_parameter, "overlapping elements", out);
}

TEST_CASE("mul: validation errors name the tensor and the rule and leave out untouched", "[ops][operators][mul]") {
  const kernel_table& k = dynamic_kernels();
  auto a = make_tensor(dtype::float32, {4, 5});
  auto b = make_tensor(dtype::float32, {4, 5});
  auto out = make_tensor(dtype::float32, {4, 5});
  std::mt19937 rng(2);
  fill_random(out.view, rng);
  using E = keel::errc;
  expect_error([&] { mul(k, tensor(), b.view, out.view); }, E::null_parameter, "self", out);
  expect_error([&] { mul(k, a.view, tensor(), out.view); }, E::null_parameter, "other", out);
  expect_error([&] { mul(k, a.view, b.view, tensor(nullptr, dtype::float32, {4, 5})); }, E::null_parameter, "out", out);
  auto c3 = make_tensor(dtype::float32, {3});
  expect_error([&] { mul(k, a.view, c3.view, out.view); }, E::invalid_parameter, "not broadcastable", out);
  auto wrong = make_tensor(dtype::float32, {4, 6});
  expect_error([&] { mul(k, a.view, b.view, wrong.view); }, E::invalid_parameter, "out has shape", wrong);
  auto ints = make_tensor(dtype::int32, {4, 5});
  expect_error([&] { mul(k, a.view, b.view, ints.view); }, E::invalid_parameter, "can't be cast", ints);
  auto i8 = make_tensor(dtype::int8, {4, 5});
  auto u8 = make_tensor(dtype::uint8, {4, 5});
  expect_error([&] { mul(k, i8.view, u8.view, out.view); }, E::invalid_parameter, "int16", out);
  expect_error([&] { mul(k, i8.view, i8.view, out.view); }, E::invalid_parameter, "promote to int8", out);
  std::vector<float> buf(64, 1.0f);
  const tensor self(buf.data(), dtype::float32, {4, 5});
  const tensor shifted(buf.data(), dtype::float32, {4, 5}, {5, 1}, 1);
  expect_error([&] { mul(k, self, b.view, shifted); }, E::invalid_parameter, "partial overlap", out);
  CHECK(std::all_of(buf.begin(), buf.end(), [](float f) { return f == 1.0f; }));
  // Still usable: the refused arguments corrected run.
  mul(k, a.view, b.view, out.view);
}

TEST_CASE("addcmul, cast: validation errors", "[ops][operators]") {
  const kernel_table& k = dynamic_kernels();
  auto a = make_tensor(dtype::float32, {3, 4});
  auto out = make_tensor(dtype::float32, {3, 4});
  auto ints = make_tensor(dtype::int32, {3, 4});
  using E = keel::errc;
  expect_error([&] { addcmul(k, a.view, tensor(), a.view, 1.0f, out.view); }, E::null_parameter, "tensor1", out);
  expect_error([&] { addcmul(k, a.view, a.view, tensor(), 1.0f, out.view); }, E::null_parameter, "tensor2", out);
  expect_error([&] { addcmul(k, ints.view, ints.view, ints.view, 1.0f, out.view); }, E::invalid_parameter, "float32, float16 and bfloat16", out);
  auto i_out = make_tensor(dtype::int64, {3, 4});
  expect_error([&] { addcmul(k, a.view, a.view, a.view, 1.0f, i_out.view); }, E::invalid_parameter, "can't be cast", i_out);
  auto t2 = make_tensor(dtype::float32, {2, 4});
  expect_error([&] { addcmul(k, a.view, a.view, t2.view, 1.0f, out.view); }, E::invalid_parameter, "tensor2 has size 2", out);
  auto small = make_tensor(dtype::float16, {3, 3});
  expect_error([&] { cast(k, a.view, small.view); }, E::invalid_parameter, "self's shape", small);
  expect_error([&] { cast(k, tensor(), out.view); }, E::null_parameter, "self", out);
}

TEST_CASE("adaptive_avg_pool2d: validation errors", "[ops][operators][pool]") {
  const kernel_table& k = dynamic_kernels();
  auto in = make_tensor(dtype::float32, {2, 3, 8, 8});
  auto out = make_tensor(dtype::float32, {2, 3, 2, 2});
  using E = keel::errc;
  expect_error([&] { adaptive_avg_pool2d(k, make_tensor(dtype::float32, {8, 8}).view, 2, 2, out.view); },
               E::invalid_parameter, "3-D (C, H, W) or 4-D", out);
  expect_error([&] { adaptive_avg_pool2d(k, make_tensor(dtype::float32, {2, 3, 0, 8}).view, 2, 2, out.view); },
               E::invalid_parameter, "empty dimension", out);
  expect_error([&] { adaptive_avg_pool2d(k, in.view, -1, 2, out.view); }, E::invalid_parameter, "negative", out);
  expect_error([&] { adaptive_avg_pool2d(k, in.view, 3, 2, out.view); }, E::invalid_parameter, "output_size", out);
  auto half_out = make_tensor(dtype::float16, {2, 3, 2, 2});
  expect_error([&] { adaptive_avg_pool2d(k, in.view, 2, 2, half_out.view); }, E::invalid_parameter, "must match", half_out);
  auto iin = make_tensor(dtype::int32, {2, 3, 8, 8});
  expect_error([&] { adaptive_avg_pool2d(k, iin.view, 2, 2, out.view); }, E::invalid_parameter, "supports float32", out);
  // out inside self's memory: no in-place pooling.
  const tensor inside(in.view.data(), dtype::float32, {2, 3, 2, 2});
  const std::vector<unsigned char> before = in.bytes;
  CHECK_THROWS_AS(adaptive_avg_pool2d(k, in.view, 2, 2, inside), keel::error);
  CHECK(in.bytes == before);
}

TEST_CASE("baddbmm: validation errors", "[ops][operators][baddbmm]") {
  const kernel_table& k = dynamic_kernels();
  auto b1 = make_tensor(dtype::float32, {2, 3, 4});
  auto b2 = make_tensor(dtype::float32, {2, 4, 5});
  auto self = make_tensor(dtype::float32, {2, 3, 5});
  auto out = make_tensor(dtype::float32, {2, 3, 5});
  using E = keel::errc;
  expect_error([&] { baddbmm(k, self.view, tensor(), b2.view, 1.0f, 1.0f, out.view); }, E::null_parameter, "batch1", out);
  expect_error([&] { baddbmm(k, tensor(), b1.view, b2.view, 1.0f, 1.0f, out.view); }, E::null_parameter, "self", out);
  expect_error([&] { baddbmm(k, self.view, b2.view, b2.view, 1.0f, 1.0f, out.view); }, E::invalid_parameter, "cannot be multiplied", out);
  expect_error([&] { baddbmm(k, self.view, make_tensor(dtype::float32, {3, 3, 4}).view, b2.view, 1.0f, 1.0f, out.view); },
               E::invalid_parameter, "different batch sizes", out);
  expect_error([&] { baddbmm(k, self.view, make_tensor(dtype::float32, {3, 4}).view, b2.view, 1.0f, 1.0f, out.view); },
               E::invalid_parameter, "batch1 must be 3-D", out);
  expect_error([&] { baddbmm(k, make_tensor(dtype::float32, {2, 4, 5}).view, b1.view, b2.view, 1.0f, 1.0f, out.view); },
               E::invalid_parameter, "self", out);
  expect_error([&] { baddbmm(k, make_tensor(dtype::float16, {2, 3, 5}).view, b1.view, b2.view, 1.0f, 1.0f, out.view); },
               E::invalid_parameter, "dtypes must all match", out);
  expect_error([&] { baddbmm(k, self.view, b1.view, b2.view, 1.0f, 1.0f, tensor(b1.view.data(), dtype::float32, {2, 3, 5})); },
               E::invalid_parameter, "overlaps batch1", b1);
  // beta == 0: a null self is fine, and self is not read.
  std::mt19937 rng(2);
  fill_random(b1.view, rng, false);
  fill_random(b2.view, rng, false);
  CHECK_NOTHROW(baddbmm(k, tensor(), b1.view, b2.view, 0.0f, 1.0f, out.view));
}

TEST_CASE("executor: workspace size, once versus repeatable, empty executors", "[ops][executor]") {
  const kernel_table& k = dynamic_kernels();
  auto b1 = make_tensor(dtype::float16, {2, 8, 16});
  auto b2 = make_tensor(dtype::float16, {2, 16, 4});
  auto out = make_tensor(dtype::float16, {2, 8, 4});
  executor once = prepare_baddbmm(k, tensor(), b1.view, b2.view, 0.0f, 1.0f, out.view, {1, executor_use::once});
  CHECK(once.workspace_size() > 0);
  CHECK(once.stage_count() == 3);
  std::vector<unsigned char> ws(once.workspace_size());
  using E = keel::errc;
  auto code_of = [](auto&& f) {
    try {
      f();
    } catch (const keel::error& e) {
      return e.code();
    }
    return std::error_code{};
  };
  CHECK(code_of([&] { once.run(nullptr, 0); }) == E::null_parameter);
  CHECK(code_of([&] { once.run(ws.data(), ws.size() - 1); }) == E::invalid_parameter);
  CHECK(once.runs() == 0);  // failed checks do not count as a run
  once.run(ws.data(), ws.size());
  CHECK(once.runs() == 1);
  CHECK(code_of([&] { once.run(ws.data(), ws.size()); }) == E::invalid_state);

  // The defaults: repeatable, sized for every hardware thread (one scratch
  // slice each), so a launch splits across all of a default device.
  executor again = prepare_baddbmm(k, tensor(), b1.view, b2.view, 0.0f, 1.0f, out.view);
  CHECK(again.use() == executor_use::repeatable);
  CHECK(again.workers() == keel::ops::default_workers());
  CHECK(again.workers() == std::max(1u, std::thread::hardware_concurrency()));
  if (again.workers() > 1) {
    CHECK(again.workspace_size() > once.workspace_size());
    CHECK(code_of([&] { again.run(ws.data(), ws.size()); }) == E::invalid_parameter);
  }
  ws.resize(again.workspace_size());
  again.run(ws.data(), ws.size());
  again.run(ws.data(), ws.size());
  CHECK(again.runs() == 2);
  executor moved = std::move(again);
  CHECK(moved.runs() == 2);
  CHECK_FALSE(again);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  CHECK(code_of([&] { again.run(ws.data(), ws.size()); }) == E::invalid_state);

  auto a = make_tensor(dtype::float32, {16});
  executor no_ws = prepare_add(k, a.view, a.view, 1.0f, a.view);
  CHECK(no_ws.workspace_size() == 0);
  no_ws.run(nullptr, 0);
}

TEST_CASE("executor: every accessor of an empty executor is defined or the invalid_state run() throws",
          "[ops][executor]") {
  auto code_of = [](auto&& f) {
    try {
      f();
    } catch (const keel::error& e) {
      INFO(e.what());
      CHECK(std::string(e.rule()).find("empty") != std::string::npos);
      return e.code();
    }
    return std::error_code{};
  };
  auto a = make_tensor(dtype::float32, {16});
  executor prepared = prepare_add(dynamic_kernels(), a.view, a.view, 1.0f, a.view);
  executor moved_to = std::move(prepared);
  executor never_prepared;
  for (executor* empty : {&never_prepared, &prepared}) {  // NOLINT(bugprone-use-after-move): the moved-from state is specified
    const executor& ex = *empty;
    CHECK_FALSE(ex);
    CHECK(ex.workspace_size() == 0);
    CHECK(ex.runs() == 0);
    CHECK(ex.plan() == nullptr);
    CHECK(code_of([&] { (void)ex.op(); }) == keel::errc::invalid_state);
    CHECK(code_of([&] { (void)ex.stage_count(); }) == keel::errc::invalid_state);
    CHECK(code_of([&] { (void)ex.chunk_count(0); }) == keel::errc::invalid_state);
    CHECK(code_of([&] { empty->begin_run(nullptr, 0); }) == keel::errc::invalid_state);
    CHECK(code_of([&] { empty->run(nullptr, 0); }) == keel::errc::invalid_state);
  }
  CHECK(moved_to.op() == op_kind::add);
  CHECK(moved_to.stage_count() == 1);
  CHECK(moved_to.chunk_count(0) == 1);
}

TEST_CASE("executor: an element-wise split gives each worker 64K elements at least, and keeps a large one streaming",
          "[ops][executor]") {
  const kernel_table& k = dynamic_kernels();
  const prepare_options one{1, executor_use::repeatable}, two{2, executor_use::repeatable},
      many{64, executor_use::repeatable};
  auto a = make_tensor(dtype::float32, {1 << 16});
  auto b = make_tensor(dtype::float32, {1 << 18});
  auto big_in = make_tensor(dtype::float32, {1 << 22});
  auto big_out = make_tensor(dtype::float16, {1 << 22});
  // 64K elements: one chunk however many workers (splitting it costs what it saves).
  CHECK(prepare_add(k, a.view, a.view, 1.0f, a.view, many).chunk_count(0) == 1);
  // 256K elements (3 MiB of an add): 16 chunks per worker would be 8K
  // elements each; the floor makes them 64K, four chunks.
  CHECK(prepare_add(k, b.view, b.view, 1.0f, b.view, one).chunk_count(0) == 1);
  CHECK(prepare_add(k, b.view, b.view, 1.0f, b.view, two).chunk_count(0) == 4);
  CHECK(prepare_add(k, b.view, b.view, 1.0f, b.view, many).chunk_count(0) == 4);
  // An operation above the streaming threshold keeps its chunks at the
  // threshold at least: a 4M-element conversion to float16 moves 24 MiB,
  // so its chunks hold 4 MiB (699,051 elements of 6 bytes) however many
  // workers share it, and every chunk's kernel call streams.
  auto at_threshold = [](std::size_t bytes_per_item) {
    const std::size_t items = (keel::ops::stream_store_min_bytes + bytes_per_item - 1) / bytes_per_item;
    return ((std::size_t{1} << 22) + items - 1) / items;
  };
  CHECK(prepare_cast(k, big_in.view, big_out.view, two).chunk_count(0) == at_threshold(6));
  CHECK(prepare_cast(k, big_in.view, big_out.view, many).chunk_count(0) == at_threshold(6));
  CHECK(prepare_add(k, big_in.view, big_in.view, 1.0f, big_in.view, many).chunk_count(0) == at_threshold(12));
}

TEST_CASE("executor: chunks on two workers give the serial result", "[ops][executor]") {
  const kernel_table& k = dynamic_kernels();
  std::mt19937 rng(23);
  const prepare_options two{2, executor_use::repeatable};
  SECTION("add, large enough to split") {
    auto a = make_tensor(dtype::float32, {300000});
    auto b = make_tensor(dtype::bfloat16, {300000}, layout::strided);
    fill_random(a.view, rng);
    fill_random(b.view, rng);
    auto serial = make_tensor(dtype::float32, {300000});
    auto parallel = make_tensor(dtype::float32, {300000});
    add(k, a.view, b.view, 0.5f, serial.view);
    executor ex = prepare_add(k, a.view, b.view, 0.5f, parallel.view, two);
    CHECK(ex.chunk_count(0) > 2);
    ex.run(nullptr, 0, two_workers{});
    CHECK(serial.bytes == parallel.bytes);
  }
  SECTION("baddbmm float16 (three stages, per-worker scratch)") {
    auto b1 = make_tensor(dtype::float16, {4, 40, 50});
    auto b2 = make_tensor(dtype::float16, {4, 50, 30});
    auto self = make_tensor(dtype::float16, {30});
    fill_random(b1.view, rng, false);
    fill_random(b2.view, rng, false);
    fill_random(self.view, rng, false);
    auto serial = make_tensor(dtype::float16, {4, 40, 30});
    auto parallel = make_tensor(dtype::float16, {4, 40, 30});
    baddbmm(k, self.view, b1.view, b2.view, 1.0f, 2.0f, serial.view);
    executor ex = prepare_baddbmm(k, self.view, b1.view, b2.view, 1.0f, 2.0f, parallel.view, two);
    std::vector<unsigned char> ws(ex.workspace_size());
    ex.run(ws.data(), ws.size(), two_workers{});
    CHECK(serial.bytes == parallel.bytes);
  }
  SECTION("adaptive_avg_pool2d") {
    auto in = make_tensor(dtype::bfloat16, {3, 5, 20, 21}, layout::transposed);
    fill_random(in.view, rng, false);
    auto serial = make_tensor(dtype::bfloat16, {3, 5, 6, 4});
    auto parallel = make_tensor(dtype::bfloat16, {3, 5, 6, 4});
    adaptive_avg_pool2d(k, in.view, 6, 4, serial.view);
    executor ex = prepare_adaptive_avg_pool2d(k, in.view, 6, 4, parallel.view, two);
    std::vector<unsigned char> ws(ex.workspace_size());
    ex.run(ws.data(), ws.size(), two_workers{});
    CHECK(serial.bytes == parallel.bytes);
  }
}

// Views may describe far more elements than memory holds (stride 0), so
// every size phase one derives from shapes is checked instead of wrapping: a
// wrapped workspace_size() of a few hundred bytes let phase two write far
// past the workspace. Phase one never touches the views' memory here.
TEST_CASE("workspace sizes that do not fit are refused at phase one, naming the tensors and the rule",
          "[ops][operators][executor]") {
  const kernel_table& k = dynamic_kernels();
  using E = keel::errc;
  const std::int64_t two_62 = std::int64_t{1} << 62, two_60 = std::int64_t{1} << 60, two_58 = std::int64_t{1} << 58;
  std::uint16_t storage[4] = {};
  SECTION("adaptive_avg_pool2d: a float16 plane of 2^62 elements (one float32 copy per worker)") {
    const tensor self(storage, dtype::float16, {1, 1, two_58, 16}, {0, 0, 0, 0});
    REQUIRE(self.numel() == two_62);
    auto out = make_tensor(dtype::float16, {1, 1, 2, 2});
    expect_error([&] { (void)prepare_adaptive_avg_pool2d(k, self, 2, 2, out.view, {1, executor_use::once}); },
                 E::invalid_parameter, "per-worker scratch for self [1, 1, " + std::to_string(two_58) + ", 16]", out);
    expect_error([&] { (void)prepare_adaptive_avg_pool2d(k, self, 2, 2, out.view); }, E::invalid_parameter,
                 "PTRDIFF_MAX", out);
  }
  SECTION("baddbmm: float16 with k = 2^60 (float32 copies of the inputs in the workspace)") {
    const tensor b1(storage, dtype::float16, {4, 1, two_60}, {0, 0, 0});
    const tensor b2(storage + 1, dtype::float16, {4, two_60, 1}, {0, 0, 0});
    auto out = make_tensor(dtype::float16, {4, 1, 1});
    expect_error([&] { (void)prepare_baddbmm(k, tensor(), b1, b2, 0.0f, 1.0f, out.view, {1, executor_use::once}); },
                 E::invalid_parameter, "shared workspace of a half-precision baddbmm (float32 copies of batch1 [4, 1, " +
                     std::to_string(two_60) + "]", out);
    const tensor self(storage + 2, dtype::float16, {4, 1, 1}, {0, 0, 0});
    auto small1 = make_tensor(dtype::float16, {4, 1, 8});
    const tensor wide2(storage, dtype::float16, {4, 8, 1}, {0, 0, 0});
    CHECK_NOTHROW(prepare_baddbmm(k, self, small1.view, wide2, 1.0f, 1.0f, out.view));  // the same rule, in range
  }
  SECTION("the whole workspace: a scratch slice per worker for more workers than fit") {
    auto in = make_tensor(dtype::float16, {2, 3, 8, 8});
    auto out = make_tensor(dtype::float16, {2, 3, 2, 2});
    prepare_options many{SIZE_MAX / 64, executor_use::repeatable};
    expect_error([&] { (void)prepare_adaptive_avg_pool2d(k, in.view, 2, 2, out.view, many); }, E::invalid_parameter,
                 "per-worker slices", out);
    auto b1 = make_tensor(dtype::float32, {2, 3, 4});
    auto b2 = make_tensor(dtype::float32, {2, 4, 5});
    auto bout = make_tensor(dtype::float32, {2, 3, 5});
    expect_error([&] { (void)prepare_baddbmm(k, tensor(), b1.view, b2.view, 0.0f, 1.0f, bout.view, many); },
                 E::invalid_parameter, "the workspace (", bout);
    // Element-wise operators have no workspace: any number of workers sizes nothing, and chunks stay sane.
    auto a = make_tensor(dtype::float32, {1 << 20});
    executor ex = prepare_add(k, a.view, a.view, 1.0f, a.view, {SIZE_MAX, executor_use::repeatable});
    CHECK(ex.workspace_size() == 0);
    CHECK(ex.chunk_count(0) >= 1);
    CHECK(ex.chunk_count(0) <= (std::size_t{1} << 20) / detail::elementwise_plan::min_chunk_items);
  }
  SECTION("in range: workspace_size() is what the layout adds up to, with one slice for workers = 0") {
    auto in = make_tensor(dtype::float16, {2, 3, 8, 8});
    auto out = make_tensor(dtype::float16, {2, 3, 2, 2});
    executor one = prepare_adaptive_avg_pool2d(k, in.view, 2, 2, out.view, {1, executor_use::repeatable});
    executor none = prepare_adaptive_avg_pool2d(k, in.view, 2, 2, out.view, {0, executor_use::repeatable});
    CHECK(none.workspace_size() == one.workspace_size());
    std::vector<unsigned char> ws(none.workspace_size());
    none.run(ws.data(), ws.size());  // worker 0's slice is inside the workspace (ASan)
  }
}
