// SPDX-License-Identifier: Apache-2.0
// The ACL backend's task-group record: the aclrtTaskGrp, the update claim,
// and the launches an update staged. ACL applies an update as it is issued
// and cannot cancel it, so keel stages the launches and issues them to ACL
// only when the checked layer has accepted the update (update_commit): an
// abandoned or refused update never reaches ACL, and the group is unchanged.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "keel/acl/types.hpp"
#include "keel/runtime/backend/detection.hpp"
#include "keel/runtime/checked/books.hpp"
#include "keel/runtime/model_tasks.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {

class device;
class launch_context;

namespace detail {

/// @cond
// A staged launch body: called with the update stream's context at commit.
struct staged_launch {
  virtual ~staged_launch() = default;
  virtual void run(launch_context& ctx) = 0;
};
template <class F>
struct staged_launch_of final : staged_launch {
  explicit staged_launch_of(F&& fn) : f(std::move(fn)) {}
  explicit staged_launch_of(const F& fn) : f(fn) {}
  void run(launch_context& ctx) override { f(ctx); }
  F f;
};

// A staged launch body's arguments as its launch describes them: a bound
// kernel's own (keel::stream::launch's bound_kernel::args), or those of the
// kernel a held_kernel shares (the checked layer keeps kernels that way,
// keel/runtime/checked/task_uses.hpp). Empty for a body of neither kind.
template <class K>
using bound_arguments = decltype(std::declval<K&>().args);
template <class K>
using shared_kernel = decltype(*std::declval<K&>().kernel);
template <class K>
std::vector<kernel_argument> describe_staged(const K& body) {
  std::vector<kernel_argument> described;
  if constexpr (keel::detail::is_detected_v<bound_arguments, K>) {
    described.resize(std::tuple_size_v<std::decay_t<decltype(body.args)>>);
    keel::detail::describe_values(body.args, described.data());
  } else if constexpr (keel::detail::is_detected_v<shared_kernel, K>) {
    if (body.kernel) described = describe_staged(*body.kernel);
  }
  return described;
}

// A group's tasks' arguments as their launches described them, one list per
// task in the group's order: what introspection reports once an update
// replaced the captured tasks.
using group_arguments = std::vector<std::vector<kernel_argument>>;

struct group_box {
  task_group_handle native = nullptr;
  device* dev = nullptr;
  // Whether the device owns the record (its keel owner released it).
  // Changed under the registry's lock.
  std::atomic<bool> adopted{false};
  // The handle and a claim each hold the record, so a group whose handle is
  // destroyed during its update stays valid until the claim ends.
  std::atomic<int> refs{1};
  std::atomic<bool> claimed{false};
  std::vector<std::unique_ptr<staged_launch>> staged;  // the claim holder's
  group_arguments staged_arguments;                    // their descriptions (the claim holder's)
  checked::group_books books;                          // the checked layer's
  // The arguments of the tasks the last committed update gave the group
  // (null: none committed, the captured tasks run); swapped under arguments_m.
  std::mutex arguments_m;
  std::shared_ptr<const group_arguments> arguments;

  static void drop(group_box* g) noexcept {
    if (g->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete g;
  }
};
/// @endcond

}  // namespace detail
} KEEL_END_NAMESPACE  // namespace keel::acl
