// SPDX-License-Identifier: Apache-2.0
// Out-of-line functions of keel/acl/capture.hpp (capture_calls): included by the
// header (inline) unless KEEL_SEPARATE_COMPILATION is defined, and compiled
// once into keel_acl_runtime (src/keel_acl_separate.cpp) for the builds that
// define it. The one-line and template members stay in the header.
#pragma once

#include "keel/acl/capture.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
KEEL_DECL auto capture_calls::thread_mode() noexcept -> keel::capture_mode& {
  thread_local keel::capture_mode mode = keel::capture_mode::global;
  return mode;
}

KEEL_DECL void capture_calls::capture_begin(stream_handle s, keel::capture_mode mode) {
  if (s->capture_into != nullptr)
    s->dev->check(entered(*s->dev).aclmdlRICaptureToModelRIBegin(s->native, s->capture_into->native, native_mode(mode)),
                  "aclmdlRICaptureToModelRIBegin");
  else
    s->dev->check(entered(*s->dev).aclmdlRICaptureBegin(s->native, native_mode(mode)), "aclmdlRICaptureBegin");
  std::lock_guard<std::mutex> lock(s->m);
  s->keeper = s;
  s->capture_host_calls = false;
  s->capture_bodies.clear();
  s->capture_records.restart();
  s->capture_streams.assign(1, s->native);
  s->capture_untyped.clear();
  s->capture_conditionals.clear();
  s->capture_untyped_lost = false;
}

KEEL_DECL void capture_calls::capture_join(stream_handle s, stream_handle origin, event_handle e) {
  s->dev->check(entered(*s->dev).aclrtStreamWaitEvent(s->native, e->native), "aclrtStreamWaitEvent");
  {
    std::lock_guard<std::mutex> lock(origin->m);
    auto& joined = origin->capture_streams;
    if (std::find(joined.begin(), joined.end(), s->native) == joined.end()) joined.push_back(s->native);
  }
  std::lock_guard<std::mutex> lock(s->m);
  s->keeper = origin;
}

KEEL_DECL void capture_calls::capture_leave(stream_handle s) noexcept {
  std::lock_guard<std::mutex> lock(s->m);
  s->keeper = nullptr;
}

KEEL_DECL auto capture_calls::capture_end(stream_handle s) -> model_handle {
  device& dev = *s->dev;
  auto box = std::make_unique<model_box>();
  acl::model_handle native = nullptr;
  const status st = entered(dev).aclmdlRICaptureEnd(s->native, &native);
  if (st != 0) detail::throw_status(st, "aclmdlRICaptureEnd", recent_message(entered(dev).aclGetRecentErrMsg));
  if (model_box* body = std::exchange(s->capture_into, nullptr)) {
    std::lock_guard<std::mutex> lock(s->m);
    body->keep.insert(body->keep.end(), std::make_move_iterator(s->keep.begin()), std::make_move_iterator(s->keep.end()));
    s->keep.clear();
    body->host_calls = std::exchange(s->capture_host_calls, false);
    body->bodies.insert(body->bodies.end(), s->capture_bodies.begin(), s->capture_bodies.end());
    s->capture_bodies.clear();
    s->keeper = nullptr;
    std::lock_guard<std::mutex> launches(body->launch_m);
    s->capture_records.hand_over(body->launches, body->launch_arguments);
    body->launch_streams.swap(s->capture_streams);
    s->capture_streams.clear();
    body->untyped.swap(s->capture_untyped);
    body->conditionals.swap(s->capture_conditionals);
    body->untyped_lost = std::exchange(s->capture_untyped_lost, false);
    s->capture_untyped.clear();
    s->capture_conditionals.clear();
    return body;
  }
  box->native = native;
  box->dev = &dev;
  try {
    dev.models_.add(native, box.get());
  } catch (...) {
    entered(dev).aclmdlRIDestroy(native);
    throw;
  }
  std::lock_guard<std::mutex> lock(s->m);
  box->keep.swap(s->keep);  // the captured copies' owners (host callables too) live as long as the model
  box->host_calls = std::exchange(s->capture_host_calls, false);
  box->bodies.swap(s->capture_bodies);
  s->capture_bodies.clear();
  s->keeper = nullptr;
  s->capture_records.hand_over(box->launches, box->launch_arguments);
  box->launch_streams.swap(s->capture_streams);
  box->untyped.swap(s->capture_untyped);
  box->conditionals.swap(s->capture_conditionals);
  box->untyped_lost = std::exchange(s->capture_untyped_lost, false);
  return box.release();
}

KEEL_DECL void capture_calls::capture_discard(stream_handle s) noexcept {
  const api& a = entered(*s->dev);
  bool group_open = false;
  const bool body = std::exchange(s->capture_into, nullptr) != nullptr;  // its parent destroys a body
  {
    std::lock_guard<std::mutex> lock(s->m);
    group_open = std::exchange(s->group_open, false);
    s->keeper = nullptr;
    s->capture_host_calls = false;
    s->capture_bodies.clear();
    s->capture_records.discard();
    s->capture_streams.clear();
    s->capture_untyped.clear();
    s->capture_conditionals.clear();
  }
  if (!native_capturing(s)) return;  // ACL ended it already
  if (group_open && a.aclmdlRICaptureTaskGrpEnd.get() != nullptr) {
    task_group_handle g = nullptr;
    a.aclmdlRICaptureTaskGrpEnd.get()(s->native, &g);
  }
  acl::model_handle native = nullptr;
  if (a.aclmdlRICaptureEnd.get() != nullptr && a.aclmdlRICaptureEnd.get()(s->native, &native) == 0 &&
      native != nullptr && !body && a.aclmdlRIDestroy.get() != nullptr)
    a.aclmdlRIDestroy.get()(native);
}

KEEL_DECL void capture_calls::destroy_model(model_handle m) noexcept {
  if (m->adopted) return;  // released: its new owner destroys it; the record stays with the device
  m->dev->models_.remove(m->native, m);
  const api& a = entered(*m->dev);
  const auto destroy = a.aclmdlRIDestroy.get();
  const status st = destroy != nullptr ? destroy(m->native) : 0;
  if (st != 0) report_error(make_status_code(st), "aclmdlRIDestroy", "the model could not be destroyed");
  // The models its tasks took typed arguments' parameters from, then the
  // stream those were captured on.
  m->argument_sources.clear();
  if (m->scratch != nullptr && a.aclrtDestroyStream.get() != nullptr) a.aclrtDestroyStream.get()(m->scratch);
  delete m;
}

KEEL_DECL auto capture_calls::from_native(device_type& dev, acl::model_handle native, adoption how, handle_tag<model_handle>,
                                  const char* api) -> model_handle {
  // A conditional body has no record of its own here (its parent's keep
  // list owns it): a handle keel does not know is looked for among the
  // bodies of the models it knows, to name the rule.
  bool unknown = false;
  try {
    return dev.models_.find_or_make(
        native, how, api, "model",
        [&]() -> std::unique_ptr<model_box> {
          unknown = true;
          throw_error(keel::errc::invalid_parameter, api,
                      "keel did not capture this aclmdlRI (or it was forgotten): keel has no books for it");
        },
        [](const model_box&) {});
  } catch (const keel::error&) {
    if (!unknown || !dev.models_.any_of([native](const model_box& m) { return m.holds_body(native); })) throw;
  }
  if (how == adoption::own)
    throw_error(keel::errc::invalid_handle, api,
                "the aclmdlRI is a conditional body: its parent model owns and destroys it, so a body is never "
                "adopted (view it with the model_ref add_conditional returned)");
  throw_error(keel::errc::invalid_parameter, api,
              "the aclmdlRI is a conditional body: keel views it through the model_ref add_conditional returned, "
              "not from its handle");
}

KEEL_DECL auto capture_calls::release_native(model_handle m) noexcept -> acl::model_handle {
  m->dev->models_.give_to_device(m);
  return m->native;
}

KEEL_DECL void capture_calls::execute(model_handle m, stream_handle s) {
  device& dev = *s->dev;
  const api& a = entered(dev);
  // Its conditional bodies' host callables too: a body's callback runs on
  // the executing stream's reporting thread like the parent's own.
  if (m->replays_host_calls()) (void)host_callbacks_of(s);
  const stream_handle keeper = keeper_of(s);
  const acl::model_handle native = m->native;
  {
    // The replay uses the model's memory until the stream passes it (or,
    // captured, as long as the outer model lives). Kept before the work is
    // issued: a host callable of the model may destroy it (and its record)
    // while this call still runs, so nothing of the record is read after.
    // A refused issue leaves them kept until the stream's next synchronize.
    std::lock_guard<std::mutex> lock(keeper->m);
    keeper->keep.insert(keeper->keep.end(), m->keep.begin(), m->keep.end());
  }
  dev.check(a.aclmdlRIExecuteAsync(native, s->native), "aclmdlRIExecuteAsync");
  mark(s->acl_work);
}

KEEL_DECL void capture_calls::captured_copy_async(stream_handle s, void* dst, const void* src, std::size_t bytes, copy_kind kind,
                                  std::shared_ptr<void> keep_dst, std::shared_ptr<void> keep_src) {
  copy_async(s, dst, src, bytes, kind, std::move(keep_dst), std::move(keep_src));
  if (bytes != 0) count_untyped(s);  // an empty copy issues no task
}

KEEL_DECL void capture_calls::captured_record_external(event_handle e, stream_handle s) {
  s->dev->check(entered(*s->dev).aclrtRecordEventWithFlag(e->native, s->native, record_flags::external),
                "aclrtRecordEventWithFlag");
}

KEEL_DECL void capture_calls::captured_wait_external(stream_handle s, event_handle e) {  // timeout 0: the only one CANN takes
  s->dev->check(entered(*s->dev).aclrtStreamWaitEventWithFlag(s->native, e->native, 0, wait_flags::external),
                "aclrtStreamWaitEventWithFlag");
}

KEEL_DECL void capture_calls::captured_execute(model_handle m, stream_handle s) {
  const bool host_calls = m->replays_host_calls();  // read before the issue, as execute() reads the record
  execute(m, s);
  count_untyped(s);
  if (host_calls) {  // the outer model replays them too
    const stream_handle origin = keeper_of(s);
    std::lock_guard<std::mutex> lock(origin->m);
    origin->capture_host_calls = true;
  }
}
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
