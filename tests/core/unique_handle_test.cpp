// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <keel/core/unique_handle.hpp>

#include <type_traits>
#include <vector>

namespace {

// Records every close, so tests can check that each handle is closed exactly once.
std::vector<int>& closed() {
  static std::vector<int> log;
  return log;
}

struct fd_traits {
  using native_type = int;
  static constexpr native_type null() noexcept { return -1; }
  static void close(native_type fd) noexcept { closed().push_back(fd); }
};
using unique_fd = keel::unique_handle<fd_traits>;

struct pointer_traits {
  using native_type = void*;
  static constexpr native_type null() noexcept { return nullptr; }
  static void close(native_type) noexcept {}
};

}  // namespace

static_assert(sizeof(unique_fd) == sizeof(int), "unique_handle adds no size to the native handle");
static_assert(sizeof(keel::unique_handle<pointer_traits>) == sizeof(void*), "unique_handle adds no size");
static_assert(!std::is_copy_constructible_v<unique_fd> && !std::is_copy_assignable_v<unique_fd>, "move-only");
static_assert(std::is_nothrow_move_constructible_v<unique_fd> && std::is_nothrow_move_assignable_v<unique_fd>,
              "moves never throw");
static_assert(!keel::is_handle_traits<int>::value, "a type without the traits members is rejected");

TEST_CASE("unique_handle: default is empty and closes nothing", "[core][unique_handle]") {
  closed().clear();
  {
    unique_fd h;
    CHECK_FALSE(h);
    CHECK(h.get() == -1);
  }
  CHECK(closed().empty());
}

TEST_CASE("unique_handle: destructor closes the owned handle once", "[core][unique_handle]") {
  closed().clear();
  { unique_fd h(3); CHECK(h); CHECK(h.get() == 3); }
  CHECK(closed() == std::vector<int>{3});
}

TEST_CASE("unique_handle: move constructor transfers every field", "[core][unique_handle]") {
  closed().clear();
  {
    unique_fd a(4);
    unique_fd b(std::move(a));
    CHECK(a.get() == -1);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
    CHECK_FALSE(a);
    CHECK(b.get() == 4);
    CHECK(closed().empty());
  }
  CHECK(closed() == std::vector<int>{4});
}

TEST_CASE("unique_handle: move assignment closes the old handle", "[core][unique_handle]") {
  closed().clear();
  unique_fd a(5);
  unique_fd b(6);
  b = std::move(a);
  CHECK(closed() == std::vector<int>{6});
  CHECK(b.get() == 5);
  CHECK(a.get() == -1);  // NOLINT(bugprone-use-after-move)
  b = unique_fd();
  CHECK(closed() == std::vector<int>{6, 5});
}

TEST_CASE("unique_handle: self-move keeps the handle", "[core][unique_handle]") {
  closed().clear();
  unique_fd a(7);
  unique_fd& alias = a;
  a = std::move(alias);
  CHECK(a.get() == 7);
  CHECK(closed().empty());
}

TEST_CASE("unique_handle: release gives up ownership without closing", "[core][unique_handle]") {
  closed().clear();
  int native = -1;
  {
    unique_fd a(8);
    native = a.release();
    CHECK_FALSE(a);
  }
  CHECK(native == 8);
  CHECK(closed().empty());
}

TEST_CASE("unique_handle: reset closes the old and adopts the new", "[core][unique_handle]") {
  closed().clear();
  unique_fd a(9);
  a.reset(10);
  CHECK(closed() == std::vector<int>{9});
  a.reset(10);  // resetting to the same handle must not close what it keeps
  CHECK(closed() == std::vector<int>{9});
  a.reset();
  CHECK(closed() == std::vector<int>{9, 10});
  CHECK_FALSE(a);
}

TEST_CASE("unique_handle: swap exchanges handles, comparisons see them", "[core][unique_handle]") {
  closed().clear();
  {
    unique_fd a(11);
    unique_fd b(12);
    swap(a, b);
    CHECK(a.get() == 12);
    CHECK(b.get() == 11);
    CHECK(a != b);
    unique_fd c;
    unique_fd d;
    CHECK(c == d);
  }
  CHECK(closed().size() == 2);
}
