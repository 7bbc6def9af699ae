// SPDX-License-Identifier: Apache-2.0
// Models and capture (aclmdlRI*): capture begin and end with CANN's statuses
// for each way a capture cannot end, the calling thread's capture mode,
// capture info, task groups and their update, execution and destruction. A
// model run instance is a model_box: the host backend's model and the task
// groups captured into it.
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "detail/capture_rules.hpp"
#include "detail/state.hpp"

namespace keel::acl_emulation::detail {
namespace {

// A live model whose capture (or build, unless @p building_too) has ended.
model_box* model_of(aclmdlRI m, const char* function, bool building_too = false) {
  if (m == nullptr) throw_rule(errc::null_parameter, function, "modelRI is null");
  std::lock_guard<std::mutex> lock(book().m);
  auto* box = static_cast<model_box*>(m);
  if (!book().models.count(box)) throw_rule(errc::invalid_handle, function, "modelRI is not a live model run instance");
  if (box->model == nullptr) throw_rule(errc::invalid_state, function, "the model's capture has not ended");
  if (box->building && !building_too) throw_rule(errc::invalid_state, function, "the model's build has not ended");
  return box;
}

keel::capture_mode mode_of(const aclmdlRICaptureMode& mode_arg, const char* function) {
  const int mode = raw(mode_arg);
  switch (mode) {
    case ACL_MODEL_RI_CAPTURE_MODE_GLOBAL: return keel::capture_mode::global;
    case ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL: return keel::capture_mode::thread_local_;
    case ACL_MODEL_RI_CAPTURE_MODE_RELAXED: return keel::capture_mode::relaxed;
  }
  throw_rule(errc::invalid_parameter, function, "unknown capture mode " + std::to_string(mode));
}

model_box* take_capture(hb::stream_handle s) {
  std::lock_guard<std::mutex> lock(book().m);
  auto it = book().capturing.find(s);
  if (it == book().capturing.end()) return nullptr;
  model_box* box = it->second;
  book().capturing.erase(it);
  return box;
}
// The records of a model's conditional bodies (the host backend's model owns the bodies themselves).
void drop_bodies(model_box* box) noexcept {
  for (model_box* b : box->bodies) {
    drop_bodies(b);
    for (auto g : b->groups) {
      book().groups.erase(g);
      cann_rules::note_group_destroyed(g);
    }
    book().models.erase(b);
    delete b;
  }
  box->bodies.clear();
}
void drop_box(model_box* box) noexcept {
  {
    std::lock_guard<std::mutex> lock(book().m);
    book().models.erase(box);
    for (auto g : box->groups) book().groups.erase(g);
    drop_bodies(box);
  }
  for (auto g : box->groups) {
    cann_rules::note_group_destroyed(g);
    hb::destroy_group(g);
  }
  if (box->model != nullptr) hb::destroy_model(box->model);
  delete box;
}

}  // namespace
}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

aclError aclmdlRICaptureBegin(aclrtStream stream, aclmdlRICaptureMode mode) {
  static constexpr const char* api = "aclmdlRICaptureBegin";
  return guarded(api, call::capture_begin, [&] {
    hb::stream_handle s = stream_of(stream, api);
    const keel::capture_mode m = mode_of(mode, api);
    cann_rules::check_capture_begin(stream);
    auto box = std::make_unique<model_box>();
    {
      std::lock_guard<std::mutex> lock(book().m);
      book().capturing.reserve(book().capturing.size() + 1);
      book().models.reserve(book().models.size() + 1);
    }
    hb::capture_begin(s, m);
    cann_rules::note_capture_begin(stream, stream_device(s), raw(mode));
    std::lock_guard<std::mutex> lock(book().m);
    book().capturing.emplace(s, box.get());
    book().models.insert(box.release());
  });
}

// Sets the calling thread's capture mode to *mode and returns the previous one
// in *mode (15_model_running_instance_management.md); check_unsafe_call applies it.
aclError aclmdlRICaptureThreadExchangeMode(aclmdlRICaptureMode* mode) {
  static constexpr const char* api = "aclmdlRICaptureThreadExchangeMode";
  return guarded(api, call::other, [&] {
    require(mode, api, "mode");
    mode_of(*mode, api);  // refuses an unknown mode
    thread_state& t = this_thread_state();
    const int previous = t.capture_mode;
    t.capture_mode = raw(*mode);
    const aclmdlRICaptureMode old = static_cast<aclmdlRICaptureMode>(previous);
    std::memcpy(mode, &old, sizeof old);
  });
}

aclError aclmdlRICaptureGetInfo(aclrtStream stream, aclmdlRICaptureStatus* status, aclmdlRI* modelRI) {
  static constexpr const char* api = "aclmdlRICaptureGetInfo";
  return guarded(api, call::other, [&] {
    require(status, api, "status");
    hb::stream_handle s = stream_of(stream, api);
    const keel::capture_info info = hb::capture_status(s);
    *status = info.state == keel::capture_state::active        ? ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE
              : info.state == keel::capture_state::invalidated ? ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED
                                                               : ACL_MODEL_RI_CAPTURE_STATUS_NONE;
    if (modelRI != nullptr) {
      // The capture's model, for its origin stream and for a stream that
      // joined it by waiting on an event recorded in it.
      std::lock_guard<std::mutex> lock(book().m);
      model_box* found = nullptr;
      if (info.state != keel::capture_state::none) {
        auto it = book().capturing.find(s);
        if (it != book().capturing.end()) {
          found = it->second;
        } else {
          for (auto& entry : book().capturing)
            if (hb::capture_status(entry.first).capture_id == info.capture_id) found = entry.second;
        }
      }
      *modelRI = found;
    }
  });
}

// A capture that cannot end is discarded (its stream leaves capture mode), as
// CANN ends it: CaptureSession::StreamEndCapture (hicann/runtime) clears the
// capture model after every failed check on the origin stream. The checks
// are the emulation's own (cann_rules::capture_end_status): an invalidated
// capture ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED (507903), a task group
// still open ACL_ERROR_STREAM_TASK_GROUP_STATUS (107033), a forked stream not
// joined back ACL_ERROR_RT_STREAM_UNJOINED (107025; the cross-stream capture
// guide). The caller gets the error and no model. On a stream that joined
// the capture but did not begin it, the end is
// ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED (107036) and the capture goes on.
aclError aclmdlRICaptureEnd(aclrtStream stream, aclmdlRI* modelRI) {
  static constexpr const char* api = "aclmdlRICaptureEnd";
  return guarded(api, call::capture_end, [&] {
    require(modelRI, api, "modelRI");
    hb::stream_handle s = stream_of(stream, api);
    const auto discard = [&] {
      if (hb::capture_status(s).group_open) hb::group_abort(s);  // an open group closes with the capture
      hb::capture_discard(s);
      if (model_box* box = take_capture(s); box != nullptr && !box->body) drop_box(box);
      cann_rules::note_capture_over(stream);
    };
    std::string why;
    const aclError refused = cann_rules::capture_end_status(stream, why);
    if (refused != ACL_SUCCESS) {
      if (refused != ACL_ERROR_RT_STREAM_NOT_CAPTURED && refused != ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED &&
          refused != ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD)
        discard();
      cann_rules::refuse(refused, why);
    }
    hb::model_handle m = nullptr;
    try {
      m = hb::capture_end(s);
    } catch (...) {
      discard();
      throw;
    }
    cann_rules::note_capture_over(stream);
    model_box* box = take_capture(s);
    if (box == nullptr) {  // captured on a stream this library did not see begin: cannot happen, but never leak
      hb::destroy_model(m);
      throw_rule(errc::invalid_state, api, "no capture record for the stream");
    }
    box->model = m;
    *modelRI = box;
  });
}

aclError aclmdlRICaptureTaskGrpBegin(aclrtStream stream) {
  static constexpr const char* api = "aclmdlRICaptureTaskGrpBegin";
  return guarded(api, call::group, [&] {
    hb::stream_handle s = stream_of(stream, api);
    cann_rules::check_group_begin(stream);
    hb::group_begin(s);
    cann_rules::note_group_begin(stream);
  });
}

aclError aclmdlRICaptureTaskGrpEnd(aclrtStream stream, aclrtTaskGrp* handle) {
  static constexpr const char* api = "aclmdlRICaptureTaskGrpEnd";
  return guarded(api, call::group, [&] {
    require(handle, api, "handle");
    hb::stream_handle s = stream_of(stream, api);
    cann_rules::check_group_end(stream);
    // The group belongs to the model being captured: find its record first,
    // so a failure after group_end cannot lose the group.
    std::unique_lock<std::mutex> lock(book().m);
    model_box* box = nullptr;
    for (auto& entry : book().capturing) {
      if (hb::capture_status(entry.first).capture_id == hb::capture_status(s).capture_id) box = entry.second;
    }
    if (box == nullptr) throw_rule(errc::invalid_state, api, "the stream is not capturing");
    box->groups.reserve(box->groups.size() + 1);
    book().groups.reserve(book().groups.size() + 1);
    lock.unlock();
    hb::group_handle g = hb::group_end(s);
    cann_rules::note_group_end(stream, g);
    lock.lock();
    box->groups.push_back(g);
    book().groups.insert(g);
    *handle = g;
  });
}

aclError aclmdlRICaptureTaskUpdateBegin(aclrtStream stream, aclrtTaskGrp handle) {
  static constexpr const char* api = "aclmdlRICaptureTaskUpdateBegin";
  return guarded(api, call::group, [&] {
    hb::stream_handle s = stream_of(stream, api);
    if (handle == nullptr) throw_rule(errc::null_parameter, api, "handle is null");
    {
      std::lock_guard<std::mutex> lock(book().m);
      if (!book().groups.count(handle))
        throw_rule(errc::invalid_handle, api, "handle is not a task group of a live model");
    }
    cann_rules::check_update_begin(stream, handle);
    hb::update_begin(s, static_cast<hb::group_handle>(handle));
    cann_rules::note_update_begin(stream, handle);
  });
}

// An update that breaks a rule is abandoned: the group keeps its old tasks.
aclError aclmdlRICaptureTaskUpdateEnd(aclrtStream stream) {
  static constexpr const char* api = "aclmdlRICaptureTaskUpdateEnd";
  return guarded(api, call::update_end, [&] {
    hb::stream_handle s = stream_of(stream, api);
    try {
      cann_rules::check_update_end(stream);
      hb::update_end(s);
    } catch (...) {
      hb::update_abort(s);
      cann_rules::note_update_over(stream);
      throw;
    }
    cann_rules::note_update_over(stream);
  });
}

aclError aclmdlRIExecuteAsync(aclmdlRI modelRI, aclrtStream stream) {
  return guarded("aclmdlRIExecuteAsync", call::other, [&] {
    model_box* box = model_of(modelRI, "aclmdlRIExecuteAsync");
    hb::stream_handle s = stream_of(stream, "aclmdlRIExecuteAsync");
    cann_rules::check_issue(stream);
    hb::execute(box->model, s);
    cann_rules::note_task(stream);
  });
}

aclError aclmdlRIExecute(aclmdlRI modelRI, std::int32_t timeout) {
  static constexpr const char* api = "aclmdlRIExecute";
  return guarded(api, call::other, [&] {
    model_box* box = model_of(modelRI, api);
    keel::host::stream s{dev()};
    hb::execute(box->model, s.native_handle());
    std::chrono::microseconds budget{};
    if (bounded(timeout, api, budget)) {
      s.synchronize(budget);
    } else {
      s.synchronize();
    }
  });
}

aclError aclmdlRIDestroy(aclmdlRI modelRI) {
  return guarded("aclmdlRIDestroy", call::other, [&] {
    model_box* box = model_of(modelRI, "aclmdlRIDestroy", true);
    if (box->body)
      throw_rule(errc::invalid_parameter, "aclmdlRIDestroy", "a conditional body goes with its parent model");
    drop_box(box);
  });
}

}  // extern "C"
