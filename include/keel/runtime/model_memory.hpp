// SPDX-License-Identifier: Apache-2.0
// What a model holds beyond its native handle: the memory a capture took
// from a pool (keel/runtime/memory_pool.hpp). It lives in the model's books
// (a checked backend's model record), where the owner and every view reach
// it, so the pool's sharing rule holds whichever of them executes the model.
#pragma once

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail {

// The model tells it where it executes (a pool shared between models checks
// that they never run concurrently), and destroying it returns the memory in
// the order of the stream that executed the model last. Keyed by the stream
// handle, so the checked layer calls it without knowing the public backend.
//
// before_execute checks and claims the execution (a pool's check and the
// issue are one step for other threads: a concurrent execution on another
// stream is refused until the claim ends); exactly one of after_execute
// (the work was issued) or execute_failed (it was not) ends the claim.
template <class StreamHandle>
struct model_memory {
  virtual ~model_memory() = default;
  virtual void before_execute(StreamHandle s) = 0;
  virtual void after_execute(StreamHandle s) noexcept = 0;
  virtual void execute_failed(StreamHandle s) noexcept = 0;
};

}  // namespace detail
/// @endcond

KEEL_END_NAMESPACE  // namespace keel
