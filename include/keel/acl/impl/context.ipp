// SPDX-License-Identifier: Apache-2.0
// Out-of-line functions of keel/acl/context.hpp (context_calls): included by the
// header (inline) unless KEEL_SEPARATE_COMPILATION is defined, and compiled
// once into keel_acl_runtime (src/keel_acl_separate.cpp) for the builds that
// define it. The one-line and template members stay in the header.
#pragma once

#include "keel/acl/context.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
KEEL_DECL auto context_calls::create_native_context(device_type& dev) -> context_handle {
  const api& a = entered(dev);
  acl::context_handle before = nullptr;
  const bool had = a.aclrtGetCurrentContext(&before) == 0 && before != nullptr;
  auto box = std::make_unique<context_box>();
  box->dev = &dev;
  dev.check(a.aclrtCreateContext(&box->native, dev.id()), "aclrtCreateContext");
  if (had) {
    const status st = a.aclrtSetCurrentContext(before);
    if (st != 0) {
      (void)a.aclrtDestroyContext(box->native);
      dev.check(st, "aclrtSetCurrentContext");
    }
  } else {
    dev.current_on_this_thread() = 0;  // the next call binds the device again (aclrtSetDevice)
  }
  std::lock_guard<std::mutex> lock(registry().m);
  registry().boxes[box->native] = box.get();
  return box.release();
}

KEEL_DECL void context_calls::destroy_native_context(context_handle c) noexcept {
  {
    std::lock_guard<std::mutex> lock(registry().m);
    registry().boxes.erase(c->native);
  }
  if (last_seen().native == c->native) last_seen() = {};
  const auto destroy = entered(*c->dev).aclrtDestroyContext.get();
  const status st = destroy != nullptr ? destroy(c->native) : 0;
  if (st != 0) report_error(make_status_code(st), "aclrtDestroyContext", "the context could not be destroyed");
  delete c;
}

KEEL_DECL auto context_calls::from_native(device_type& dev, acl::context_handle native, adoption how,
                                    handle_tag<context_handle>, const char* api) -> context_handle {
  // ACL destroys the default context itself (aclrtResetDevice) and refuses
  // aclrtDestroyContext on it: an owner could only fail when it ends.
  if (how == adoption::own && native != nullptr && native == dev.default_context())
    ::keel::detail::throw_composed(::keel::errc::invalid_parameter, api,
                                   {"the ACL context is device ", dev.id(),
                                    "'s default context (aclrtSetDevice binds it, aclrtResetDevice ends it): "
                                    "keel cannot own it; view it with context_ref(dev, native)"});
  std::lock_guard<std::mutex> lock(registry().m);
  auto& r = registry();
  auto it = r.boxes.find(native);
  if (it != r.boxes.end()) {
    context_box* box = it->second;
    if (box->dev != &dev) return box;  // the caller refuses a context of another device
    if (how == adoption::own) {
      if (!box->adopted)
        throw_error(::keel::errc::invalid_parameter, api,
                    "a keel context owns this ACL handle already (release() it first)");
      take_adopted(box);
    }
    return box;
  }
  auto box = std::make_unique<context_box>();
  box->native = native;
  box->dev = &dev;
  box->adopted = how == adoption::view;
  if (box->adopted) r.adopted.reserve(r.adopted.size() + 1);  // may throw: nothing taken yet
  r.boxes.emplace(native, box.get());                         // may throw: nothing taken yet
  if (!box->adopted) return box.release();
  r.adopted.push_back(std::move(box));
  return r.adopted.back().get();
}

KEEL_DECL auto context_calls::release_native(context_handle c) noexcept -> acl::context_handle {
  std::lock_guard<std::mutex> lock(registry().m);
  try {
    registry().adopted.emplace_back(c);
    c->adopted = true;
  } catch (...) {
    // Out of memory: the record is kept by nobody but stays valid (it is never destroyed).
    c->adopted = true;
  }
  return c->native;
}

KEEL_DECL auto context_calls::native_current_context(device_type& dev) -> context_handle {
  const api& a = entered(dev);
  acl::context_handle native = nullptr;
  if (a.aclrtGetCurrentContext(&native) != 0 || native == nullptr) return nullptr;
  seen& last = last_seen();
  if (last.native == native && last.box != nullptr) return last.box;
  std::lock_guard<std::mutex> lock(registry().m);
  context_box*& slot = registry().boxes[native];
  if (slot == nullptr) {
    auto box = std::make_unique<context_box>();
    box->native = native;
    box->dev = &dev;
    box->adopted = true;
    registry().adopted.push_back(std::move(box));
    slot = registry().adopted.back().get();
  }
  last = seen{native, slot};
  return slot;
}

KEEL_DECL void context_calls::make_context_current(context_handle c) {
  device& dev = *c->dev;
  dev.check(entered(dev).aclrtSetCurrentContext(c->native), "aclrtSetCurrentContext");
  dev.current_on_this_thread() = dev.serial_;  // a context of the device is current: no aclrtSetDevice needed
  last_seen() = seen{c->native, c};
}

KEEL_DECL void context_calls::clear_current_context(device_type&) noexcept {
  device::current_on_this_thread() = 0;
  last_seen() = {};
}

KEEL_DECL auto context_calls::registry() noexcept -> books_of_contexts& {
  static books_of_contexts* const r = new books_of_contexts;  // outlives every static that may use it at exit
  return *r;
}

KEEL_DECL void context_calls::take_adopted(context_box* box) noexcept {
  auto& kept = registry().adopted;
  for (auto& p : kept)
    if (p.get() == box) {
      (void)p.release();
      p = std::move(kept.back());
      kept.pop_back();
      break;
    }
  box->adopted = false;
}

KEEL_DECL auto context_calls::last_seen() noexcept -> seen& {
  thread_local seen s;
  return s;
}
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
