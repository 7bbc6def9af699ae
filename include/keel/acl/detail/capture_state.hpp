// SPDX-License-Identifier: Apache-2.0
// The ACL backend's model record: the aclmdlRI and what its captured work
// uses (memory owners, host callables), which live as long as the model.
#pragma once

#include <memory>
#include <vector>

#include "keel/acl/types.hpp"
#include "keel/runtime/checked/books.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {

class device;

namespace detail {

/// @cond
struct model_box {
  model_handle native = nullptr;
  device* dev = nullptr;
  std::vector<std::shared_ptr<void>> keep;  // what the captured copies use (host callables included)
  bool host_calls = false;  // it replays host callables: its executing stream needs a reporting thread
  checked::model_books books;  // the checked layer's
  std::vector<void (*)(void*)> destroy_callbacks;  // registered through keel (the checked layer's lock guards it)
};
/// @endcond

}  // namespace detail
} KEEL_END_NAMESPACE  // namespace keel::acl
