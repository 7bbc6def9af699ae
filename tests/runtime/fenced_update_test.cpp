// SPDX-License-Identifier: Apache-2.0
// Graph-owned updates (issue 17, part 5): a fenced model applies its
// pending updates per step on an update stream; a second signal before an
// execution consumed the first is refused, one after it is ordered after
// it; a replacement needing more workspace than captured is refused with
// the sizes. Each rule is broken once, its error checked, and the model shown
// to execute with its old parameters. Host and ACL (" - host" / " - acl").
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "keel/runtime/fenced_update.hpp"
#include "test_support.hpp"

using keel::errc;

namespace {

// out = tmp + alpha * other in one fenced group, then a host task that notes out.
template <class F>
struct fenced {
  typename F::stream s{F::device()}, u{F::device()};
  float tmp = 1.0f, other = 1.0f, out = 0.0f;
  std::vector<float> seen;
  keel::basic_fenced_model<typename F::backend> fm{F::device()};
  fenced() {
    typename F::capture_scope capture{s};
    fm.fenced_update(s, 64, [&](typename F::stream_ref c) { F::axpy(c, &out, &tmp, &other, 1.0f); });
    s.launch_host([this] { seen.push_back(out); });
    fm.adopt(capture.end());
  }
  void stage(float alpha, std::size_t workspace = 64) {
    fm.stage(0, workspace, [this, alpha](typename F::stream_ref us) { F::axpy(us, &out, &tmp, &other, alpha); });
  }
};

}  // namespace

KEEL_BACKEND_TEST("fenced model: each step's apply() issues its pending updates and the execution sees them",
                  "[runtime][fenced_update]") {
  fenced<TestType> f;
  CHECK(f.fm.fence_count() == 1);
  for (int i = 1; i <= 5; ++i) {
    f.fm.execute(f.s);  // waits at the fence for apply()
    f.stage(static_cast<float>(i));
    f.fm.apply(f.u);
    f.s.synchronize();
  }
  CHECK(f.seen == std::vector<float>{2.0f, 3.0f, 4.0f, 5.0f, 6.0f});
}

KEEL_BACKEND_TEST("fenced model: a step's apply() after the next execution was issued is ordered after it (no synchronize)",
                  "[runtime][fenced_update]") {
  fenced<TestType> f;
  for (int i = 1; i <= 6; ++i) {
    f.fm.execute(f.s);
    f.stage(static_cast<float>(i));
    f.fm.apply(f.u);  // the second signal waits for the first execution's pass, never merges
  }
  f.s.synchronize();
  f.u.synchronize();
  CHECK(f.seen == std::vector<float>{2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f});
}

KEEL_BACKEND_TEST("fenced model: a second signal before an execution consumed the first is refused, nothing is issued",
                  "[runtime][fenced_update]") {
  fenced<TestType> f;
  f.stage(3.0f);
  f.fm.apply(f.u);  // signal 1, for execution 1
  f.stage(9.0f);
  KEEL_REQUIRE_ERROR(f.fm.apply(f.u), errc::invalid_state, "would be lost");
  f.fm.execute(f.s);  // consumes signal 1: runs alpha 3, not 9
  f.s.synchronize();
  CHECK(f.seen == std::vector<float>{4.0f});
  f.fm.execute(f.s);
  f.fm.apply(f.u);  // the pending alpha 9 was kept for this apply
  f.s.synchronize();
  CHECK(f.seen == std::vector<float>{4.0f, 10.0f});
}

KEEL_BACKEND_TEST("fenced model: a replacement needing more workspace than captured is refused with both sizes",
                  "[runtime][fenced_update]") {
  fenced<TestType> f;
  KEEL_REQUIRE_ERROR(f.stage(5.0f, 128), errc::resource_limit, "needs 128 bytes of workspace");
  KEEL_REQUIRE_ERROR(f.stage(5.0f, 128), errc::resource_limit, "captured with 64 bytes");
  KEEL_REQUIRE_ERROR(f.fm.stage(3, 0, [](typename TestType::stream_ref) {}), errc::invalid_parameter,
                     "fence 3 does not exist");
  f.fm.execute(f.s);
  f.fm.apply(f.u);  // nothing pending: the group runs as captured
  f.s.synchronize();
  CHECK(f.seen == std::vector<float>{2.0f});
}

KEEL_BACKEND_TEST("fenced model: a refused update still signals its fence, the execution runs the unchanged group",
                  "[runtime][fenced_update]") {
  fenced<TestType> f;
  f.fm.execute(f.s);
  f.fm.stage(0, 0, [&](typename TestType::stream_ref us) {
    TestType::axpy(us, &f.out, &f.tmp, &f.other, 5.0f);
    TestType::axpy(us, &f.out, &f.tmp, &f.other, 5.0f);
  });
  KEEL_REQUIRE_ERROR(f.fm.apply(f.u), errc::update_violation, "has 1 tasks and the update issued 2");
  f.s.synchronize();
  CHECK(f.seen == std::vector<float>{2.0f});
}

KEEL_BACKEND_TEST("fenced model: apply() on a capturing update stream is refused, nothing is issued or counted",
                  "[runtime][fenced_update]") {
  // The fences' signals would go into that capture while apply() counted
  // them: the next execution would wait forever.
  fenced<TestType> f;
  f.stage(3.0f);
  {
    typename TestType::capture_scope capture{f.u};
    KEEL_REQUIRE_ERROR(f.fm.apply(f.u), errc::capture_violation, "keel::fenced_model::apply");
    KEEL_REQUIRE_ERROR(f.fm.apply(f.u), errc::capture_violation, "is capturing");
    capture.cancel();
  }
  f.fm.execute(f.s);
  f.fm.apply(f.u);  // the staged alpha 3 was kept; this is the first signal
  f.s.synchronize();
  CHECK(f.seen == std::vector<float>{4.0f});
}

KEEL_BACKEND_TEST("fenced model: apply() on an empty update stream is refused before the staged updates are touched",
                  "[runtime][fenced_update]") {
  fenced<TestType> f;
  f.stage(3.0f);
  f.fm.execute(f.s);
  KEEL_REQUIRE_ERROR(f.fm.apply(typename TestType::stream_ref{}), errc::invalid_handle, "keel::fenced_model::apply");
  f.fm.apply(f.u);  // the staged alpha 3 was kept; the refusal counted no signal
  f.s.synchronize();
  CHECK(f.seen == std::vector<float>{4.0f});
}
