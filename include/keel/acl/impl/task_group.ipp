// SPDX-License-Identifier: Apache-2.0
// Out-of-line functions of keel/acl/task_group.hpp (task_group_calls): included by the
// header (inline) unless KEEL_SEPARATE_COMPILATION is defined, and compiled
// once into keel_acl_runtime (src/keel_acl_separate.cpp) for the builds that
// define it. The one-line and template members stay in the header.
#pragma once

#include "keel/acl/task_group.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
KEEL_DECL void task_group_calls::group_begin(stream_handle s) {
  s->dev->check(entered(*s->dev).aclmdlRICaptureTaskGrpBegin(s->native), "aclmdlRICaptureTaskGrpBegin");
  std::lock_guard<std::mutex> lock(s->m);
  s->group_open = true;
}

KEEL_DECL auto task_group_calls::group_end(stream_handle s) -> group_handle {
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

KEEL_DECL void task_group_calls::destroy_group(group_handle g) noexcept {
  if (g->adopted) return;  // released: the record stays with the device
  g->dev->groups_.remove(g->native, g);
  group_box::drop(g);
}

KEEL_DECL auto task_group_calls::from_native(device_type& dev, acl::task_group_handle native, adoption how,
                                  handle_tag<group_handle>, const char* api) -> group_handle {
  return dev.groups_.find_or_make(
      native, how, api, "task group",
      [&]() -> std::unique_ptr<group_box> {
        throw_error(keel::errc::invalid_parameter, api,
                    "keel did not mark this aclrtTaskGrp (or it was forgotten): keel has no books for it");
      },
      [](const group_box&) {});
}

KEEL_DECL auto task_group_calls::release_native(group_handle g) noexcept -> acl::task_group_handle {
  g->dev->groups_.give_to_device(g);
  return g->native;
}

KEEL_DECL auto task_group_calls::try_claim(group_handle g) noexcept -> bool {
  bool expected = false;
  if (!g->claimed.compare_exchange_strong(expected, true, std::memory_order_acquire)) return false;
  g->refs.fetch_add(1, std::memory_order_relaxed);
  return true;
}

KEEL_DECL void task_group_calls::end_claim(group_handle g) noexcept {
  g->claimed.store(false, std::memory_order_release);
  group_box::drop(g);
}

KEEL_DECL void task_group_calls::update_commit(stream_handle s, group_handle g) {
  struct finish {
    group_handle g;
    ~finish() {
      g->staged.clear();
      g->staged_arguments.clear();
      task_group_calls::end_claim(g);
    }
  } done{g};
  // The descriptions the group reports once ACL applied the update (made
  // first: nothing can fail between the update's end and their swap).
  auto described = std::make_shared<group_arguments>();
  described->swap(g->staged_arguments);
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
  std::shared_ptr<const group_arguments> replaced = std::move(described);
  {
    std::lock_guard<std::mutex> lock(g->arguments_m);
    g->arguments.swap(replaced);
  }  // the replaced descriptions go after the lock
}

KEEL_DECL auto task_group_calls::committed_arguments(device_type& dev, acl::task_group_handle native)
    -> std::shared_ptr<const group_arguments> {
  std::shared_ptr<const group_arguments> out;
  dev.groups_.visit(native, [&](group_box& g) {
    std::lock_guard<std::mutex> lock(g.arguments_m);
    out = g.arguments;
  });
  return out;
}
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
