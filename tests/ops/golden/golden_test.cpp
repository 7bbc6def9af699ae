// SPDX-License-Identifier: Apache-2.0
// The PyTorch-generated golden cases (generate.py, cases.txt): every
// operator on every SIMD target this CPU supports, through the one-call form
// (phase one, then phase two) and through exec() twice (a miss, then a hit
// that binds the call into a cached plan), each on fresh copies of the
// storages. out's view must hold the expected values (exactly, or within the
// case's per-element bound) and out's storage outside the view must be
// untouched.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "golden_reader.hpp"
#include "keel/host/host.hpp"
#include "keel/ops/executor_cache.hpp"
#include "keel/ops/kernels/dynamic_dispatch.hpp"
#include "keel/ops/launch.hpp"
#include "keel/ops/operators.hpp"

#include "../targets.hpp"

using namespace keel::ops;
using keel_golden::golden_case;

namespace {

const std::vector<golden_case>& cases() {
  static const std::vector<golden_case> all = keel_golden::read_golden(KEEL_GOLDEN_DATA);
  return all;
}

// Fresh copies of a case's storages and views over them.
struct bound_case {
  std::map<std::string, std::vector<unsigned char>> bytes;
  std::map<std::string, tensor> views;
  explicit bound_case(const golden_case& c) {
    for (const auto& [name, t] : c.tensors) bytes[name] = t.storage;
    for (const auto& [name, t] : c.tensors) views[name] = t.view(bytes[name]);
  }
  const tensor& operator[](const std::string& name) const { return views.at(name); }
};

double as_double(dtype t, const unsigned char* p) {
  return detail::visit_dtype(t, [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, p, sizeof v);
    if constexpr (std::is_same_v<decltype(tag), std::int64_t>) {
      return static_cast<double>(v);
    } else {
      return static_cast<double>(detail::convert<float>(v));
    }
  });
}

// Bitwise equality, any NaN equal to any NaN (PyTorch does not pin payloads).
bool same_bits(dtype t, const unsigned char* a, const unsigned char* b) {
  if (std::memcmp(a, b, element_size(t)) == 0) return true;
  return is_floating(t) && std::isnan(as_double(t, a)) && std::isnan(as_double(t, b));
}

// Empty when out matches; otherwise what the first bad element was.
std::string check_out(const golden_case& c, const kernel_table& k, const bound_case& b) {
  const keel_golden::golden_tensor& o = c.tensor("out");
  const tensor& out = b["out"];
  const std::vector<unsigned char>& storage = b.bytes.at("out");
  const std::size_t es = element_size(o.type);
  const std::vector<unsigned char>& want =
      !k.fused_multiply_add && !c.unfused.empty() ? c.unfused : c.expect;
  if (want.size() != static_cast<std::size_t>(out.numel()) * es) return "expected data has the wrong size";
  std::vector<bool> in_view(o.storage.size() / es, false);
  std::int64_t idx[tensor::max_dims] = {};
  std::ostringstream bad;
  for (std::int64_t n = 0; n < out.numel(); ++n) {
    std::int64_t off = o.offset;
    for (std::size_t i = 0; i < out.dim(); ++i) off += idx[i] * out.stride(i);
    in_view[static_cast<std::size_t>(off)] = true;
    const unsigned char* got = storage.data() + off * static_cast<std::int64_t>(es);
    const unsigned char* w = want.data() + n * static_cast<std::int64_t>(es);
    bool ok = same_bits(o.type, got, w);
    if (!ok && !c.tol.empty()) {
      const double g = as_double(o.type, got), e = as_double(o.type, w);
      ok = std::isfinite(g) && std::isfinite(e) && std::fabs(g - e) <= c.tol[static_cast<std::size_t>(n)];
    }
    if (!ok) {
      bad << "element " << n << " got " << as_double(o.type, got) << " want " << as_double(o.type, w);
      if (!c.tol.empty()) bad << " tol " << c.tol[static_cast<std::size_t>(n)];
      return bad.str();
    }
    for (std::size_t i = out.dim(); i-- > 0;) {
      if (++idx[i] < out.size(i)) break;
      idx[i] = 0;
    }
  }
  for (std::size_t e = 0; e < in_view.size(); ++e) {
    if (!in_view[e] && std::memcmp(storage.data() + e * es, o.storage.data() + e * es, es) != 0) {
      bad << "storage element " << e << " outside out's view was written";
      return bad.str();
    }
  }
  return {};
}

void run_one_call(const golden_case& c, const kernel_table& k, const bound_case& b) {
  if (c.op == "add") {
    add(k, b["self"], b["other"], c.scalars.at("alpha"), b["out"]);
  } else if (c.op == "addcmul") {
    addcmul(k, b["self"], b["tensor1"], b["tensor2"], c.scalars.at("value"), b["out"]);
  } else if (c.op == "cast") {
    cast(k, b["self"], b["out"]);
  } else if (c.op == "adaptive_avg_pool2d") {
    adaptive_avg_pool2d(k, b["self"], c.ints.at("oh"), c.ints.at("ow"), b["out"]);
  } else if (c.op == "baddbmm") {
    baddbmm(k, b["self"], b["batch1"], b["batch2"], c.scalars.at("beta"), c.scalars.at("alpha"), b["out"]);
  } else {
    FAIL("unknown golden operator " << c.op);
  }
}

void run_exec(const golden_case& c, executor_cache<>& cache, const keel::host::stream& s, const bound_case& b) {
  if (c.op == "add") {
    exec(cache, s, add_op{}, b["self"], b["other"], c.scalars.at("alpha"), b["out"]);
  } else if (c.op == "addcmul") {
    exec(cache, s, addcmul_op{}, b["self"], b["tensor1"], b["tensor2"], c.scalars.at("value"), b["out"]);
  } else if (c.op == "cast") {
    exec(cache, s, cast_op{}, b["self"], b["out"]);
  } else if (c.op == "adaptive_avg_pool2d") {
    exec(cache, s, adaptive_avg_pool2d_op{}, b["self"], c.ints.at("oh"), c.ints.at("ow"), b["out"]);
  } else {
    exec(cache, s, baddbmm_op{}, b["self"], b["batch1"], b["batch2"], c.scalars.at("beta"), c.scalars.at("alpha"),
         b["out"]);
  }
  s.synchronize();
}

}  // namespace

TEST_CASE("golden: the data covers every operator, read without error", "[ops][golden]") {
  std::map<std::string, std::size_t> per_op;
  for (const golden_case& c : cases()) ++per_op[c.op];
  for (const char* op : {"add", "addcmul", "cast", "adaptive_avg_pool2d", "baddbmm"}) {
    INFO(op);
    CHECK(per_op[op] >= 50);
  }
  CHECK(cases().size() >= 1000);
}

TEST_CASE("golden: every operator on every target matches PyTorch's cases, one call and through exec()",
          "[ops][golden]") {
  keel::host::stream stream{keel::host::default_device()};
  const auto targets = keel_test::every_kernel_target();
  REQUIRE(targets.size() == hwy::SupportedAndGeneratedTargets().size());
  for (const kernel_table* k : targets) {
    executor_cache<> cache(*k, 64);
    std::size_t bad = 0;
    for (const golden_case& c : cases()) {
      for (int path = 0; path < 3; ++path) {  // one call; exec() (a miss unless an earlier case had this key); exec() again (a hit)
        bound_case b(c);
        if (path == 0) {
          run_one_call(c, *k, b);
        } else {
          run_exec(c, cache, stream, b);
        }
        const std::string why = check_out(c, *k, b);
        if (!why.empty() && bad++ < 10) {
          UNSCOPED_INFO("target " << k->target << " line " << c.line << " " << c.op << " " << c.label << " ("
                                  << c.source << ") " << (path == 0 ? "one call" : path == 1 ? "exec, first" : "exec, again (a hit)")
                                  << ": " << why);
        }
      }
    }
    INFO("target " << k->target);
    CHECK(bad == 0);
  }
}
