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
#include <utility>

#include "keel/acl/detail/handles.hpp"
#include "keel/acl/stream.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
struct task_group_calls : native_types {
  static void group_begin(stream_handle s) {
    s->dev->check(entered(*s->dev).aclmdlRICaptureTaskGrpBegin(s->native), "aclmdlRICaptureTaskGrpBegin");
    std::lock_guard<std::mutex> lock(s->m);
    s->group_open = true;
  }

  static group_handle group_end(stream_handle s) {
    auto box = std::make_unique<group_box>();
    s->dev->check(entered(*s->dev).aclmdlRICaptureTaskGrpEnd(s->native, &box->native), "aclmdlRICaptureTaskGrpEnd");
    box->dev = s->dev;
    {
      std::lock_guard<std::mutex> lock(s->m);
      s->group_open = false;
    }
    s->dev->groups_.add(box->native, box.get());  // std::bad_alloc: ACL's group lives on in its model
    return box.release();
  }

  // ACL's group belongs to its model; keel's record goes with its last holder.
  static void destroy_group(group_handle g) noexcept {
    if (g->adopted) return;  // released: the record stays with the device
    g->dev->groups_.remove(g->native, g);
    group_box::drop(g);
  }

  /** The aclrtTaskGrp under keel's record. */
  static acl::task_group_handle to_native(group_handle g) noexcept { return g->native; }
  /** keel's record of @p native: only a group keel marked has one; any other is refused. */
  static group_handle from_native(device_type& dev, acl::task_group_handle native, adoption how,
                                  handle_tag<group_handle>, const char* api) {
    return dev.groups_.find_or_make(
        native, how, api, "task group",
        [&]() -> std::unique_ptr<group_box> {
          throw_error(keel::errc::invalid_parameter, api,
                      "keel did not mark this aclrtTaskGrp (or it was forgotten): keel has no books for it");
        },
        [](const group_box&) {});
  }
  /** The owner gives the group up: the record goes to the device, until forget_group. */
  static acl::task_group_handle release_native(group_handle g) noexcept {
    g->dev->groups_.give_to_device(g);
    return g->native;
  }

  static bool try_claim(group_handle g) noexcept {
    bool expected = false;
    if (!g->claimed.compare_exchange_strong(expected, true, std::memory_order_acquire)) return false;
    g->refs.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  static void end_claim(group_handle g) noexcept {
    g->claimed.store(false, std::memory_order_release);
    group_box::drop(g);
  }

  template <class F>
  static void update_launch_kernel(stream_handle, group_handle g, kernel_kind, F&& f) {
    auto staged = std::make_unique<staged_launch_of<std::decay_t<F>>>(std::forward<F>(f));
    keep_arguments_for_later(staged->f);  // it runs at update end: borrowed arguments (plan_argument) take ownership
    g->staged.push_back(std::move(staged));
  }
  static void update_discard(stream_handle, group_handle g) noexcept { g->staged.clear(); }

  // The checked layer accepted the update: its launches go to ACL between
  // aclmdlRICaptureTaskUpdateBegin and End, in the order they were issued.
  // Ends the claim, also when ACL refuses or a body throws.
  static void update_commit(stream_handle s, group_handle g) {
    struct finish {
      group_handle g;
      ~finish() {
        g->staged.clear();
        task_group_calls::end_claim(g);
      }
    } done{g};
    device& dev = *s->dev;
    const api& a = entered(dev);
    dev.check(a.aclmdlRICaptureTaskUpdateBegin(s->native, g->native), "aclmdlRICaptureTaskUpdateBegin");
    try {
      launch_context ctx(dev, s->native);
      for (const auto& launch : g->staged) launch->run(ctx);
    } catch (...) {
      // ACL applies what it was given so far only if it matches the group,
      // which a partial update does not: ending it makes ACL refuse it.
      if (const auto end = a.aclmdlRICaptureTaskUpdateEnd.get()) (void)end(s->native);
      throw;
    }
    dev.check(a.aclmdlRICaptureTaskUpdateEnd(s->native), "aclmdlRICaptureTaskUpdateEnd");
  }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
