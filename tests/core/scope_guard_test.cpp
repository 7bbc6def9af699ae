// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <keel/core/scope_guard.hpp>

#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace {

struct plain_action {
  int* count;
  void operator()() const noexcept { ++*count; }
};

// Every path out of a scope, as a function: normal, early return, exception.
template <template <class> class Guard>
int calls_after(int path) {
  int count = 0;
  try {
    [&] {
      Guard<plain_action> guard{plain_action{&count}};
      if (path == 1) return;
      if (path == 2) throw std::runtime_error("leave by exception");
    }();
  } catch (const std::runtime_error&) {
  }
  return count;
}

}  // namespace

static_assert(!std::is_copy_constructible_v<keel::scope_exit<plain_action>>, "guards are not copyable");
static_assert(!std::is_move_assignable_v<keel::scope_exit<plain_action>>, "guards are not assignable");
static_assert(std::is_move_constructible_v<keel::scope_exit<plain_action>>, "guards are movable");
static_assert(std::is_nothrow_destructible_v<keel::scope_exit<std::function<void()>>>,
              "scope_exit's destructor is noexcept whatever the callable");
static_assert(std::is_nothrow_destructible_v<keel::scope_fail<std::function<void()>>>,
              "scope_fail's destructor is noexcept whatever the callable");
static_assert(!std::is_nothrow_destructible_v<keel::scope_success<std::function<void()>>>,
              "scope_success's destructor may throw what its callable throws");
static_assert(std::is_nothrow_destructible_v<keel::scope_success<plain_action>>,
              "scope_success's destructor is noexcept when the callable is");

namespace {
struct stateless_action {
  void operator()() const noexcept {}
};
struct final_stateless_action final {
  void operator()() const noexcept {}
};
int free_action_runs = 0;
void free_action() noexcept { ++free_action_runs; }
}  // namespace

// Boost.Scope's storage: an empty callable costs nothing, so a scope_exit of
// one is its active flag alone; the others add their uncaught-exception count.
static_assert(sizeof(keel::scope_exit<stateless_action>) == sizeof(bool),
              "a scope_exit of a stateless callable is as small as a bool");
static_assert(sizeof(keel::scope_fail<stateless_action>) == sizeof(int) * 2,
              "a scope_fail of a stateless callable is its exception count and the flag (padded)");
static_assert(sizeof(keel::scope_exit<final_stateless_action>) <= 2,
              "a final callable cannot be a base: a member byte and the flag");
static_assert(sizeof(keel::scope_exit<void (*)()>) == 2 * sizeof(void (*)()),
              "a function pointer is stored as a member");
static_assert(sizeof(keel::scope_exit<plain_action>) == 2 * sizeof(int*),
              "a stateful callable is stored as a member, beside the flag");

TEST_CASE("scope_exit: runs on every exit path", "[core][scope_guard]") {
  CHECK(calls_after<keel::scope_exit>(0) == 1);
  CHECK(calls_after<keel::scope_exit>(1) == 1);
  CHECK(calls_after<keel::scope_exit>(2) == 1);
}

TEST_CASE("scope_fail: runs only when left by an exception", "[core][scope_guard]") {
  CHECK(calls_after<keel::scope_fail>(0) == 0);
  CHECK(calls_after<keel::scope_fail>(1) == 0);
  CHECK(calls_after<keel::scope_fail>(2) == 1);
}

TEST_CASE("scope_success: runs only when left normally", "[core][scope_guard]") {
  CHECK(calls_after<keel::scope_success>(0) == 1);
  CHECK(calls_after<keel::scope_success>(1) == 1);
  CHECK(calls_after<keel::scope_success>(2) == 0);
}

TEST_CASE("scope_exit: runs on break and continue out of a loop body", "[core][scope_guard]") {
  int count = 0;
  for (int i = 0; i < 4; ++i) {
    keel::scope_exit guard{[&] { ++count; }};
    if (i == 1) continue;
    if (i == 2) break;
  }
  CHECK(count == 3);
}

TEST_CASE("scope guards: dismiss keeps the callable from running", "[core][scope_guard]") {
  int count = 0;
  try {
    keel::scope_exit exit_guard{[&] { ++count; }};
    keel::scope_fail fail_guard{[&] { ++count; }};
    keel::scope_success success_guard{[&] { ++count; }};
    CHECK(exit_guard.active());
    exit_guard.dismiss();
    fail_guard.dismiss();
    success_guard.dismiss();
    CHECK_FALSE(exit_guard.active());
    CHECK_FALSE(fail_guard.active());
    CHECK_FALSE(success_guard.active());
    throw std::runtime_error("unwind");
  } catch (const std::runtime_error&) {
  }
  CHECK(count == 0);
}

TEST_CASE("scope guards: a moved guard runs once, from its new place", "[core][scope_guard]") {
  int count = 0;
  {
    auto outer = keel::make_scope_exit([&] { ++count; });
    {
      auto inner = std::move(outer);
      CHECK_FALSE(outer.active());  // NOLINT(bugprone-use-after-move): moved-from is dismissed
      CHECK(inner.active());
    }
    CHECK(count == 1);
  }
  CHECK(count == 1);
}

TEST_CASE("scope guards: a dismissed guard stays dismissed after a move", "[core][scope_guard]") {
  int count = 0;
  {
    auto a = keel::make_scope_fail([&] { ++count; });
    a.dismiss();
    auto b = std::move(a);
    CHECK_FALSE(b.active());
    try {
      auto c = std::move(b);
      throw std::runtime_error("unwind");
    } catch (const std::runtime_error&) {
    }
  }
  CHECK(count == 0);
}

namespace {
// Creates guards in its destructor; when that destructor runs during
// unwinding, the guards' own scope is left normally.
struct checks_in_destructor {
  int* fail_runs;
  int* success_runs;
  ~checks_in_destructor() {
    keel::scope_fail fail{[this] { ++*fail_runs; }};
    keel::scope_success success{[this] { ++*success_runs; }};
  }
};
}  // namespace

TEST_CASE("scope guards: a guard inside a destructor run during unwinding sees its own scope succeed",
          "[core][scope_guard]") {
  int fail_runs = 0;
  int success_runs = 0;
  try {
    checks_in_destructor object{&fail_runs, &success_runs};
    throw std::runtime_error("unwind through the destructor");
  } catch (const std::runtime_error&) {
  }
  CHECK(fail_runs == 0);
  CHECK(success_runs == 1);
}

TEST_CASE("scope guards: nested failure inside unwinding is seen by the inner scope_fail", "[core][scope_guard]") {
  int inner_fail_runs = 0;
  int outer_fail_runs = 0;
  struct throws_inside_destructor {
    int* runs;
    ~throws_inside_destructor() {
      try {
        keel::scope_fail fail{[this] { ++*runs; }};
        throw std::logic_error("inner");
      } catch (const std::logic_error&) {
      }
    }
  };
  try {
    keel::scope_fail outer{[&] { ++outer_fail_runs; }};
    throws_inside_destructor object{&inner_fail_runs};
    throw std::runtime_error("outer");
  } catch (const std::runtime_error&) {
  }
  CHECK(inner_fail_runs == 1);
  CHECK(outer_fail_runs == 1);
}

TEST_CASE("scope_success: a callable that throws propagates from the destructor", "[core][scope_guard]") {
  int after = 0;
  auto leave_scope = [&] {
    keel::scope_success commit{[] { throw std::runtime_error("commit failed"); }};
    ++after;
  };
  CHECK_THROWS_WITH(leave_scope(), "commit failed");
  CHECK(after == 1);
}

TEST_CASE("scope_success: a throwing callable does not run while already unwinding", "[core][scope_guard]") {
  auto leave_scope = [] {
    keel::scope_success commit{[] { throw std::logic_error("must not run"); }};
    throw std::runtime_error("original");
  };
  CHECK_THROWS_AS(leave_scope(), std::runtime_error);
}

namespace {
// A callable whose copy throws: the guard must still run the cleanup
// (exit and fail) and rethrow, as LFTS v3 requires.
struct throwing_copy {
  int* count;
  explicit throwing_copy(int* c) : count(c) {}
  throwing_copy(const throwing_copy&) { throw std::runtime_error("copy failed"); }
  void operator()() const { ++*count; }
};
}  // namespace

TEST_CASE("scope guards: when storing the callable throws, exit and fail run it, success does not",
          "[core][scope_guard]") {
  int count = 0;
  throwing_copy action(&count);
  CHECK_THROWS_WITH(keel::scope_exit<throwing_copy>(action), "copy failed");
  CHECK(count == 1);
  CHECK_THROWS_WITH(keel::scope_fail<throwing_copy>(action), "copy failed");
  CHECK(count == 2);
  CHECK_THROWS_WITH(keel::scope_success<throwing_copy>(action), "copy failed");
  CHECK(count == 2);
}

TEST_CASE("scope guards: CTAD deduces the callable type, lvalues are copied", "[core][scope_guard]") {
  int count = 0;
  auto action = [&count] { ++count; };
  {
    keel::scope_exit guard{action};
    static_assert(std::is_same_v<decltype(guard), keel::scope_exit<decltype(action)>>);
  }
  CHECK(count == 1);
  {
    std::function<void()> f = [&count] { count += 10; };
    keel::scope_exit guard{f};
    f = nullptr;  // the guard holds its own copy
  }
  CHECK(count == 11);
}

TEST_CASE("scope guards: the macros run at the right time", "[core][scope_guard]") {
  std::string log;
  try {
    KEEL_SCOPE_EXIT { log += "exit;"; };
    KEEL_SCOPE_SUCCESS { log += "success;"; };
    KEEL_SCOPE_FAIL { log += "fail;"; };
    throw std::runtime_error("x");
  } catch (const std::runtime_error&) {
  }
  CHECK(log == "fail;exit;");
  log.clear();
  {
    KEEL_SCOPE_EXIT { log += "exit;"; };
    KEEL_SCOPE_SUCCESS { log += "success;"; };
    KEEL_SCOPE_FAIL { log += "fail;"; };
  }
  CHECK(log == "success;exit;");
}

TEST_CASE("scope guards: stateless, final, function pointer and function reference callables run once",
          "[core][scope_guard]") {
  static int runs = 0;
  struct counts {
    void operator()() const noexcept { ++runs; }
  };
  struct counts_final final {
    void operator()() const noexcept { ++runs; }
  };
  runs = 0;
  free_action_runs = 0;
  {
    keel::scope_exit lambda{[] { ++runs; }};
    static_assert(sizeof(lambda) == sizeof(bool), "a scope_exit of a captureless lambda is as small as a bool");
    keel::scope_exit a{counts{}};
    keel::scope_exit b{counts_final{}};
    auto moved = std::move(a);  // the source is dismissed, the moved-to guard runs
    CHECK_FALSE(a.active());    // NOLINT(bugprone-use-after-move)
    void (*pointer)() = [] { ++runs; };
    keel::scope_exit c{pointer};
    keel::scope_exit<void (&)()> d{free_action};
    static_assert(std::is_same_v<decltype(c), keel::scope_exit<void (*)()>>);
  }
  CHECK(runs == 4);
  CHECK(free_action_runs == 1);
}

TEST_CASE("scope guards: guards run in reverse order of creation", "[core][scope_guard]") {
  std::string order;
  {
    keel::scope_exit a{[&] { order += 'a'; }};
    keel::scope_exit b{[&] { order += 'b'; }};
    keel::scope_exit c{[&] { order += 'c'; }};
  }
  CHECK(order == "cba");
}
