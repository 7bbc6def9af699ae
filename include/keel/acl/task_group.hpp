// SPDX-License-Identifier: Apache-2.0
// The ACL backend's native task-group calls: aclmdlRICaptureTaskGrpBegin /
// End during capture, and updates over aclmdlRICaptureTaskUpdateBegin / End.
// ACL applies an update as its tasks are issued and cannot cancel one, so
// the launches of an update are staged and issued to ACL only at commit,
// after the checked layer accepted them: an abandoned or refused update
// never reaches ACL, and the group stays as it was.
#pragma once

#include <memory>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "keel/acl/detail/handles.hpp"
#include "keel/acl/stream.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
struct task_group_calls : native_types {
  KEEL_DECL static void group_begin(stream_handle s);

  KEEL_DECL static group_handle group_end(stream_handle s);

  // ACL's group belongs to its model; keel's record goes with its last holder.
  KEEL_DECL static void destroy_group(group_handle g) noexcept;

  /** The aclrtTaskGrp under keel's record. */
  static acl::task_group_handle to_native(group_handle g) noexcept { return g->native; }
  /** keel's record of @p native: only a group keel marked has one; any other is refused. */
  KEEL_DECL static group_handle from_native(device_type& dev, acl::task_group_handle native, adoption how,
                                  handle_tag<group_handle>, const char* api);
  /** The owner gives the group up: the record goes to the device, until forget_group. */
  KEEL_DECL static acl::task_group_handle release_native(group_handle g) noexcept;

  KEEL_DECL static bool try_claim(group_handle g) noexcept;
  KEEL_DECL static void end_claim(group_handle g) noexcept;

  template <class F>
  static void update_launch_kernel(stream_handle, group_handle g, kernel_kind, F&& f) {
    // The checked layer hands over a kernel that owns what it borrowed (it
    // runs at update end) and keeps it for the group's task once committed.
    auto staged = std::make_unique<staged_launch_of<std::decay_t<F>>>(std::forward<F>(f));
    std::vector<kernel_argument> described = describe_staged(staged->f);  // what introspection reports once committed
    g->staged_arguments.reserve(g->staged.size() + 1);
    g->staged.push_back(std::move(staged));
    g->staged_arguments.push_back(std::move(described));  // reserved: cannot throw
  }
  static void update_discard(stream_handle, group_handle g) noexcept {
    g->staged.clear();
    g->staged_arguments.clear();
  }
  // The arguments of the tasks the last committed update gave the group
  // @p native (null: none committed, or keel has no record of the group).
  KEEL_DECL static std::shared_ptr<const group_arguments> committed_arguments(device_type& dev,
                                                                              acl::task_group_handle native);

  // The checked layer accepted the update: its launches go to ACL between
  // aclmdlRICaptureTaskUpdateBegin and End, in the order they were issued.
  // Ends the claim, also when ACL refuses or a body throws.
  KEEL_DECL static void update_commit(stream_handle s, group_handle g);
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail

#if !defined(KEEL_SEPARATE_COMPILATION)
#include "keel/acl/impl/task_group.ipp"
#endif
