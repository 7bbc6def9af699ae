// SPDX-License-Identifier: Apache-2.0
// The books the checked layer keeps for conditional tasks
// (keel/runtime/checked/conditional.hpp): which model a condition belongs
// to, and a conditional body's parent capture. A native backend embeds them
// in its condition and body records; only keel/runtime/checked/ reads them.
#pragma once

#include <cstdint>
#include <memory>

#include "keel/runtime/checked/books.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace checked {

/** @brief A condition's books: the capture whose model owns it. Embedded in a native condition record. */
struct condition_books {
  /// @cond
  std::uint64_t owner = 0;
  /// @endcond
};

/** @brief A conditional body's books: its parent's capture, and whether a capture into it was begun. */
template <class Stream>
struct body_books {
  /// @cond
  std::weak_ptr<capture_books<Stream>> parent;
  std::uint64_t parent_id = 0;
  bool taken = false;  // a capture into it began
  /// @endcond
};

} KEEL_END_NAMESPACE  // namespace keel::checked
