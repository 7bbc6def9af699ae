// SPDX-License-Identifier: Apache-2.0
// The one-call forms' phase two: the executor run at once on the calling
// thread with a workspace from the heap.
#pragma once

#include <memory>

#include "keel/ops/executor.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops::detail {

inline void run_now(executor ex) {
  std::unique_ptr<unsigned char[]> ws(ex.workspace_size() ? new unsigned char[ex.workspace_size()] : nullptr);
  ex.run(ws.get(), ex.workspace_size());
}

} KEEL_END_NAMESPACE  // namespace keel::ops::detail
