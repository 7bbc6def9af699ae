// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <keel/core/error.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

TEST_CASE("error: carries the code, the API and the rule", "[core][error]") {
  const keel::error e(keel::errc::invalid_parameter, "aclnnAddGetWorkspaceSize", "self and other do not broadcast");
  CHECK(e.code() == keel::errc::invalid_parameter);
  CHECK(e.code().category() == keel::keel_category());
  CHECK(std::string(e.api()) == "aclnnAddGetWorkspaceSize");
  CHECK(std::string(e.rule()) == "self and other do not broadcast");
  const std::string what = e.what();
  CHECK(what.find("aclnnAddGetWorkspaceSize") != std::string::npos);
  CHECK(what.find("do not broadcast") != std::string::npos);
  CHECK(what.find("invalid parameter") != std::string::npos);
}

TEST_CASE("error: is a std::system_error and copies without losing details", "[core][error]") {
  try {
    keel::throw_error(keel::errc::capture_violation, "stream::synchronize", "stream 3 is capturing in global mode");
  } catch (const std::system_error& e) {
    const auto* k = dynamic_cast<const keel::error*>(&e);
    REQUIRE(k != nullptr);
    const keel::error copy = *k;  // NOLINT: copying an exception must keep its details
    CHECK(std::string(copy.api()) == "stream::synchronize");
    CHECK(copy.code() == keel::errc::capture_violation);
    CHECK(noexcept(keel::error(copy)));
  }
}

TEST_CASE("error: codes map onto portable conditions where one exists", "[core][error]") {
  CHECK(make_error_code(keel::errc::invalid_parameter) == std::errc::invalid_argument);
  CHECK(make_error_code(keel::errc::null_parameter) == std::errc::invalid_argument);
  CHECK(make_error_code(keel::errc::not_supported) == std::errc::function_not_supported);
  CHECK(make_error_code(keel::errc::would_deadlock) == std::errc::resource_deadlock_would_occur);
  CHECK(make_error_code(keel::errc::out_of_memory) == std::errc::not_enough_memory);
  CHECK(make_error_code(keel::errc::capture_violation) != std::errc::invalid_argument);
}

TEST_CASE("error: every code has its own message", "[core][error]") {
  for (int code = 0; code <= static_cast<int>(keel::errc::timeout); ++code) {
    const std::string message = keel::keel_category().message(code);
    CHECK(message.find("unknown") == std::string::npos);
  }
  CHECK(keel::keel_category().message(999).find("unknown") != std::string::npos);
}

namespace {
int handler_calls = 0;
std::string last_api;
void counting_handler(std::error_code, const char* api, const char*) noexcept {
  ++handler_calls;
  last_api = api;
}
}  // namespace

TEST_CASE("error: destructor failures go to the replaceable handler", "[core][error]") {
  handler_calls = 0;
  const keel::error_handler previous = keel::set_error_handler(&counting_handler);
  keel::report_error(keel::errc::task_failed, "model::~model", "pending replay failed");
  CHECK(handler_calls == 1);
  CHECK(last_api == "model::~model");

  try {
    throw std::runtime_error("boom");
  } catch (...) {
    keel::report_current_exception("plugin finalizer");
  }
  CHECK(handler_calls == 2);
  CHECK(last_api == "plugin finalizer");

  keel::set_error_handler(previous);
  CHECK(keel::get_error_handler() == previous);
  // A null handler restores the default rather than leaving none.
  keel::set_error_handler(nullptr);
  CHECK(keel::get_error_handler() != nullptr);
  keel::set_error_handler(previous);
}

namespace {
// What std::error_category compares (its address) differs from keel's own
// category, as it does in a plugin built with hidden visibility.
class unrelated_category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "unrelated"; }
  std::string message(int) const override { return "unrelated"; }
};
}  // namespace

TEST_CASE("error: keel::errc is a condition, so another shared object's keel code equals it", "[core][error]") {
  const keel::detail::keel_category_impl plugins_copy;  // a second keel category, as a plugin has
  REQUIRE(&plugins_copy != &keel::keel_category());
  const std::error_code thrown_there(static_cast<int>(keel::errc::timeout), plugins_copy);
  CHECK(thrown_there == keel::errc::timeout);
  CHECK(keel::errc::timeout == thrown_there);
  CHECK(thrown_there != keel::errc::task_failed);
  CHECK(thrown_there == std::errc::timed_out);
  CHECK(thrown_there == keel::make_error_condition(keel::errc::timeout));
  // Same value, not a keel category: not keel's condition.
  const unrelated_category unrelated;
  CHECK(std::error_code(static_cast<int>(keel::errc::timeout), unrelated) != keel::errc::timeout);
  // A keel code is not an instance of a foreign category's condition of the same value.
  CHECK(keel::make_error_code(keel::errc::timeout) != std::error_condition(14, unrelated));
}

TEST_CASE("error: with no handler set, set_error_handler returns the default, never null", "[core][error]") {
  const keel::error_handler previous = keel::set_error_handler(nullptr);
  const keel::error_handler the_default = keel::get_error_handler();
  CHECK(the_default != nullptr);
  CHECK(keel::set_error_handler(&counting_handler) == the_default);
  CHECK(keel::set_error_handler(the_default) == &counting_handler);  // the default, set explicitly
  CHECK(keel::get_error_handler() == the_default);
  keel::set_error_handler(previous);
}

TEST_CASE("error: a composed rule reads exactly as the concatenation it replaces", "[core][error]") {
  const std::string owned = "pool";
  const std::string_view viewed = "kernel 'add'";
  const std::uint64_t id = 18446744073709551615ull;  // the largest stream number
  const std::int32_t negative = -7;
  const unsigned char small = 200;
  try {
    keel::detail::throw_composed(keel::errc::invalid_state, "keel::test",
                                 {"stream #", id, " of ", owned, ": ", viewed, ", value ", negative, ", byte ", small,
                                  std::string_view{}, ""});
    FAIL("throw_composed returned");
  } catch (const keel::error& e) {
    CHECK(e.code() == keel::errc::invalid_state);
    CHECK(std::string(e.api()) == "keel::test");
    CHECK(std::string(e.rule()) == "stream #" + std::to_string(id) + " of " + owned + ": " + std::string(viewed) +
                                       ", value " + std::to_string(negative) + ", byte " + std::to_string(small));
  }
}
