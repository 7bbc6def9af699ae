// SPDX-License-Identifier: Apache-2.0
// Out-of-line functions of keel/acl/conditional.hpp (conditional_calls): included by the
// header (inline) unless KEEL_SEPARATE_COMPILATION is defined, and compiled
// once into keel_acl_runtime (src/keel_acl_separate.cpp) for the builds that
// define it. The one-line and template members stay in the header.
#pragma once

#include "keel/acl/conditional.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
KEEL_DECL auto conditional_calls::condition_create(stream_handle s, std::uint32_t default_value, bool assign) -> condition_handle {
  device& dev = *s->dev;
  const api& a = entered(dev);
  acl::model_handle model = nullptr;
  acl::capture_status st = acl::capture_status::none;
  dev.check(a.aclmdlRICaptureGetInfo(s->native, &st, &model), "aclmdlRICaptureGetInfo");
  auto box = std::make_shared<condition_box>();
  const stream_handle keeper = keeper_of(s);
  {
    std::lock_guard<std::mutex> lock(keeper->m);
    room_for(keeper->keep, 1);
  }
  dev.check(a.aclmdlRICondHandleCreate(model, default_value,
                                       assign ? cond_handle_flag::assign_default : cond_handle_flag::none,
                                       &box->native),
            "aclmdlRICondHandleCreate");
  dev.check(a.aclmdlRICondHandleGetCondPtr(box->native, &box->value), "aclmdlRICondHandleGetCondPtr");
  condition_box* raw = box.get();
  std::lock_guard<std::mutex> lock(keeper->m);
  keeper->keep.push_back(std::move(box));  // reserved above
  return raw;
}

KEEL_DECL void conditional_calls::captured_conditional(stream_handle s, condition_handle c, conditional_kind kind, std::size_t n,
                                   model_handle* out) {
  device& dev = *s->dev;
  std::vector<std::shared_ptr<model_box>> bodies;
  bodies.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto body = std::make_shared<model_box>();
    body->dev = &dev;
    body->body = std::make_unique<checked::body_books<stream_box*>>();
    bodies.push_back(std::move(body));
  }
  std::vector<acl::model_handle> natives(n, nullptr);
  const stream_handle keeper = keeper_of(s);
  {
    std::lock_guard<std::mutex> lock(keeper->m);
    room_for(keeper->keep, n);
    room_for(keeper->capture_bodies, n);
  }
  const cond_task_params params{c->native, static_cast<cond_task_type>(kind), static_cast<std::uint32_t>(n),
                                natives.data()};
  {
    std::lock_guard<std::mutex> lock(keeper->m);
    room_for(keeper->capture_conditionals, 1);
  }
  dev.check(entered(dev).aclmdlRIAddCondTask(params, s->native, 0), "aclmdlRIAddCondTask");
  std::lock_guard<std::mutex> lock(keeper->m);
  // Its task's rank among the stream's untyped ones, and its bodies: the next n the model made (reserved above).
  keeper->capture_conditionals.push_back(
      conditional_task{s->native, count_untyped_locked(keeper, s->native), to_string(kind), n});
  for (std::size_t i = 0; i < n; ++i) {
    bodies[i]->native = natives[i];
    out[i] = bodies[i].get();
    keeper->capture_bodies.push_back(bodies[i].get());  // reserved above: the parent asks them about host callables
    keeper->keep.push_back(std::move(bodies[i]));  // the parent owns its bodies (reserved above)
  }
}
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
