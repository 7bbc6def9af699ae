// SPDX-License-Identifier: Apache-2.0
// Models built from bound streams: aclmdlRIBuildBegin, aclmdlRIBindStream,
// aclmdlRIEndTask, aclmdlRIBuildEnd, aclmdlRIUnbindStream
// (15_model_running_instance_management.md) and the tasks that activate and
// switch between bound streams, aclrtActiveStream and aclrtSwitchStream
// (06_stream_management.md), over the host backend's built models
// (keel/host/built_model.hpp), whose checked layer reports each rule; the
// statuses are the general mapping (code_for): a parameter CANN refuses is
// ACL_ERROR_INVALID_PARAM (100000), a call in the wrong state of the build
// ACL_ERROR_RT_PARAM_INVALID (107000), a capturing stream bound
// ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT (107030).
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "detail/state.hpp"

namespace keel::acl_emulation::detail {
namespace {

// A live model run instance made by aclmdlRIBuildBegin.
model_box* built_of(aclmdlRI m, const char* function) {
  if (m == nullptr) throw_rule(errc::null_parameter, function, "modelRI is null");
  std::lock_guard<std::mutex> lock(book().m);
  auto* box = static_cast<model_box*>(m);
  if (!book().models.count(box)) throw_rule(errc::invalid_handle, function, "modelRI is not a live model run instance");
  if (!box->built) throw_rule(errc::invalid_parameter, function, "modelRI was not begun with aclmdlRIBuildBegin");
  return box;
}

keel::compare_condition condition_of(const aclrtCondition& c, const char* function) {
  const int v = raw(c);
  if (v < ACL_RT_EQUAL || v > ACL_RT_LESS_OR_EQUAL)
    throw_rule(errc::invalid_parameter, function, "unknown aclrtCondition " + std::to_string(v));
  return static_cast<keel::compare_condition>(v);
}
keel::compare_type type_of(const aclrtCompareDataType& t, const char* function) {
  const int v = raw(t);
  if (v != ACL_RT_SWITCH_INT32 && v != ACL_RT_SWITCH_INT64)
    throw_rule(errc::invalid_parameter, function, "unknown aclrtCompareDataType " + std::to_string(v));
  return static_cast<keel::compare_type>(v);
}

}  // namespace
}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

aclError aclmdlRIBuildBegin(aclmdlRI* modelRI, std::uint32_t flag) {
  static constexpr const char* api = "aclmdlRIBuildBegin";
  return guarded(api, call::capture_begin, [&] {
    require(modelRI, api, "modelRI");
    if (flag != 0) throw_rule(errc::invalid_parameter, api, "flag is reserved and must be 0");
    auto box = std::make_unique<model_box>();
    box->built = true;
    box->building = true;
    {
      std::lock_guard<std::mutex> lock(book().m);
      book().models.reserve(book().models.size() + 1);
    }
    box->model = hb::build_begin(dev());
    std::lock_guard<std::mutex> lock(book().m);
    book().models.insert(box.get());
    *modelRI = box.release();
  });
}

aclError aclmdlRIBindStream(aclmdlRI modelRI, aclrtStream stream, std::uint32_t flag) {
  static constexpr const char* api = "aclmdlRIBindStream";
  return guarded(api, call::other, [&] {
    model_box* box = built_of(modelRI, api);
    hb::stream_handle s = stream_of(stream, api);
    if (flag != ACL_MODEL_STREAM_FLAG_HEAD && flag != ACL_MODEL_STREAM_FLAG_DEFAULT)
      throw_rule(errc::invalid_parameter, api, "flag must be ACL_MODEL_STREAM_FLAG_HEAD or ACL_MODEL_STREAM_FLAG_DEFAULT");
    hb::bind_stream(box->model, s, flag == ACL_MODEL_STREAM_FLAG_HEAD ? keel::bound_stream::head
                                                                       : keel::bound_stream::activated);
  });
}

aclError aclmdlRIEndTask(aclmdlRI modelRI, aclrtStream stream) {
  static constexpr const char* api = "aclmdlRIEndTask";
  return guarded(api, call::other,
                 [&] { hb::end_task(built_of(modelRI, api)->model, stream_of(stream, api)); });
}

aclError aclmdlRIBuildEnd(aclmdlRI modelRI, void* reserve) {
  static constexpr const char* api = "aclmdlRIBuildEnd";
  return guarded(api, call::other, [&] {
    if (reserve != nullptr) throw_rule(errc::invalid_parameter, api, "reserve must be NULL");
    model_box* box = built_of(modelRI, api);
    hb::build_end(box->model);
    std::lock_guard<std::mutex> lock(book().m);
    box->building = false;
  });
}

aclError aclmdlRIUnbindStream(aclmdlRI modelRI, aclrtStream stream) {
  static constexpr const char* api = "aclmdlRIUnbindStream";
  return guarded(api, call::other,
                 [&] { hb::unbind_stream(built_of(modelRI, api)->model, stream_of(stream, api)); });
}

aclError aclrtActiveStream(aclrtStream activeStream, aclrtStream stream) {
  static constexpr const char* api = "aclrtActiveStream";
  return guarded(api, call::other,
                 [&] { hb::activate_stream(stream_of(stream, api), stream_of(activeStream, api)); });
}

aclError aclrtSwitchStream(void* leftValue, aclrtCondition cond, void* rightValue, aclrtCompareDataType dataType,
                           aclrtStream trueStream, aclrtStream falseStream, aclrtStream stream) {
  static constexpr const char* api = "aclrtSwitchStream";
  return guarded(api, call::other, [&] {
    if (falseStream != nullptr) throw_rule(errc::invalid_parameter, api, "falseStream is reserved and must be NULL");
    const keel::compare_condition c = condition_of(cond, api);
    const keel::compare_type t = type_of(dataType, api);
    hb::switch_stream(stream_of(stream, api), leftValue, c, rightValue, t, stream_of(trueStream, api));
  });
}

}  // extern "C"
