// SPDX-License-Identifier: Apache-2.0
// The books the checked layer keeps for a model being built from bound
// streams (CANN's aclmdlRIBuildBegin ... aclmdlRIBuildEnd): the streams bound
// to it, which of them is a head stream, and the session their work is
// recorded through. A native backend embeds one in the record of each model
// it builds and hands it out through `build_books(model_handle)`; only
// keel/runtime/checked/ reads or writes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/runtime/backend/detection.hpp"
#include "keel/runtime/checked/books.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace checked {

/**
 * @brief A built model's books: the session its bound streams record through
 * (a capture_books with `build` set, one lane per bound stream), and per bound
 * stream whether it is a head stream. Embedded in a native backend's model
 * record; guarded by the device books' mutex.
 *
 * Ownership: a member of the native model record. Thread safety: the checked
 * layer locks the device books around every use. Exceptions: none.
 */
template <class Stream>
struct build_books {
  /// @cond
  struct bound {
    Stream stream{};
    std::uint64_t stream_id = 0;
    bool head = false;
  };
  std::shared_ptr<capture_books<Stream>> session;  // lanes[i] is streams[i]'s
  std::vector<bound> streams;                      // in bind order
  std::uint64_t id = 0;
  /// @endcond
};

/// @cond
namespace detail {

template <class N>
using build_books_call = decltype(N::build_books(std::declval<typename N::model_handle>()));
// A native backend that builds models from bound streams says so with build_books(m).
template <class N>
constexpr bool has_build_books() {
  return keel::detail::is_detected_v<build_books_call, N>;
}

// Work on a stream bound to a model being built is recorded, unless the
// stream's part already ended (its end task) or the build did. Caller holds
// the device books' lock.
template <class S>
void check_build_issue(const capture_books<S>& c, std::size_t lane, std::uint64_t stream_id, const char* api) {
  if (c.build == 2)
    ::keel::detail::throw_composed(
        errc::invalid_state, api,
        {"stream #", stream_id, " is bound to built model #", c.id,
         " whose build ended: a bound stream takes no work until it is unbound (or the model destroyed)"});
  if (c.lanes[lane].ended)
    ::keel::detail::throw_composed(errc::invalid_state, api,
                                   {"stream #", stream_id, " is bound to built model #", c.id,
                                    " and its end task was issued: it takes no more work"});
}

}  // namespace detail
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::checked
