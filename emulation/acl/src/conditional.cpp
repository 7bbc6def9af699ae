// SPDX-License-Identifier: Apache-2.0
// Conditional tasks (15_model_running_instance_management.md):
// aclmdlRICondHandleCreate, aclmdlRICondHandleGetCondPtr, aclmdlRIAddCondTask
// and aclmdlRICaptureToModelRIBegin, over the host backend's conditions and
// bodies (keel/host/conditional.hpp), whose checked layer reports each rule.
// Statuses: the general mapping (code_for): a parameter CANN refuses (a
// condition of another model, a branch count the type does not take, an
// unknown type or flag) ACL_ERROR_INVALID_PARAM (100000); a stream that is
// not capturing ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT (107030); a body
// captured twice or after its parent's capture ended ACL_ERROR_RT_PARAM_INVALID (107000).
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "detail/capture_rules.hpp"
#include "detail/state.hpp"

namespace keel::acl_emulation::detail {
namespace {

model_box* live_box(aclmdlRI m, const char* function) {
  if (m == nullptr) throw_rule(errc::null_parameter, function, "modelRI is null");
  auto* box = static_cast<model_box*>(m);
  if (!book().models.count(box)) throw_rule(errc::invalid_handle, function, "modelRI is not a live model run instance");
  return box;
}

keel::capture_mode capture_mode_of(const aclmdlRICaptureMode& mode_arg, const char* function) {
  const int mode = raw(mode_arg);
  switch (mode) {
    case ACL_MODEL_RI_CAPTURE_MODE_GLOBAL: return keel::capture_mode::global;
    case ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL: return keel::capture_mode::thread_local_;
    case ACL_MODEL_RI_CAPTURE_MODE_RELAXED: return keel::capture_mode::relaxed;
  }
  throw_rule(errc::invalid_parameter, function, "unknown capture mode " + std::to_string(mode));
}

}  // namespace
}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

aclError aclmdlRICondHandleCreate(aclmdlRI modelRI, std::uint32_t defaultLaunchValue, aclmdlRICondHandleFlag flag,
                                  aclmdlRICondHandle* handle) {
  static constexpr const char* api = "aclmdlRICondHandleCreate";
  return guarded(api, call::other, [&] {
    require(handle, api, "handle");
    const int f = raw(flag);
    if (f != 0 && f != ACL_MODEL_RI_COND_HANDLE_ASSIGN_DEFAULT)
      throw_rule(errc::invalid_parameter, api, "flag must be 0 or ACL_MODEL_RI_COND_HANDLE_ASSIGN_DEFAULT");
    hb::stream_handle origin = nullptr;
    {
      std::lock_guard<std::mutex> lock(book().m);
      model_box* box = live_box(modelRI, api);
      for (auto& entry : book().capturing)
        if (entry.second == box) origin = entry.first;
    }
    if (origin == nullptr)
      throw_rule(errc::capture_violation, api, "a condition is made for a model whose capture is in progress");
    *handle = hb::make_condition(origin, defaultLaunchValue, f == ACL_MODEL_RI_COND_HANDLE_ASSIGN_DEFAULT);
  });
}

aclError aclmdlRICondHandleGetCondPtr(aclmdlRICondHandle handle, std::uint64_t** ptr) {
  static constexpr const char* api = "aclmdlRICondHandleGetCondPtr";
  return guarded(api, call::other, [&] {
    if (handle == nullptr) throw_rule(errc::null_parameter, api, "handle is null");
    require(ptr, api, "ptr");
    *ptr = hb::condition_value(static_cast<hb::condition_handle>(handle));
  });
}

aclError aclmdlRIAddCondTask(aclmdlRICondTaskParams params, aclrtStream stream, std::uint32_t flags) {
  static constexpr const char* api = "aclmdlRIAddCondTask";
  return guarded(api, call::other, [&] {
    hb::stream_handle s = stream_of(stream, api);
    if (flags != 0) throw_rule(errc::invalid_parameter, api, "flags is reserved and must be 0");
    if (params.handle == nullptr) throw_rule(errc::null_parameter, api, "params.handle is null");
    if (params.modelRIArray == nullptr) throw_rule(errc::null_parameter, api, "params.modelRIArray is null");
    const int type = raw(params.type);
    if (type < ACL_MODEL_RI_COND_TYPE_IF || type > ACL_MODEL_RI_COND_TYPE_SWITCH)
      throw_rule(errc::invalid_parameter, api, "unknown aclmdlRICondTaskType " + std::to_string(type));
    // The bodies' records first, so nothing can fail once the task is issued.
    std::vector<std::unique_ptr<model_box>> boxes;
    for (std::uint32_t i = 0; i < params.size; ++i) {
      boxes.push_back(std::make_unique<model_box>());
      boxes.back()->body = true;
    }
    model_box* parent = nullptr;
    {
      std::lock_guard<std::mutex> lock(book().m);
      const std::uint64_t capture = hb::capture_status(s).capture_id;
      for (auto& entry : book().capturing)
        if (hb::capture_status(entry.first).capture_id == capture && capture != 0) parent = entry.second;
      book().models.reserve(book().models.size() + params.size);
      if (parent != nullptr) parent->bodies.reserve(parent->bodies.size() + params.size);
    }
    std::vector<hb::model_handle> bodies(params.size);
    cann_rules::check_issue(stream);
    hb::add_conditional(s, static_cast<hb::condition_handle>(params.handle), static_cast<keel::conditional_kind>(type),
                        params.size, bodies.data());
    cann_rules::note_task(stream);
    std::lock_guard<std::mutex> lock(book().m);
    for (std::uint32_t i = 0; i < params.size; ++i) {
      boxes[i]->model = bodies[i];
      params.modelRIArray[i] = boxes[i].get();
      book().models.insert(boxes[i].get());  // reserved above
      if (parent != nullptr) parent->bodies.push_back(boxes[i].get());
      boxes[i].release();
    }
  });
}

aclError aclmdlRICaptureToModelRIBegin(aclrtStream stream, aclmdlRI modelRI, aclmdlRICaptureMode mode) {
  static constexpr const char* api = "aclmdlRICaptureToModelRIBegin";
  return guarded(api, call::capture_begin, [&] {
    hb::stream_handle s = stream_of(stream, api);
    const keel::capture_mode m = capture_mode_of(mode, api);
    model_box* box = nullptr;
    {
      std::lock_guard<std::mutex> lock(book().m);
      box = live_box(modelRI, api);
      if (!box->body) throw_rule(errc::invalid_parameter, api, "modelRI is not a body aclmdlRIAddCondTask made");
      book().capturing.reserve(book().capturing.size() + 1);
    }
    cann_rules::check_capture_begin(stream);
    hb::capture_into_begin(s, box->model, m);
    cann_rules::note_capture_begin(stream, stream_device(s), raw(mode));
    std::lock_guard<std::mutex> lock(book().m);
    book().capturing.emplace(s, box);
  });
}

}  // extern "C"
