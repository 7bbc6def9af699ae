// SPDX-License-Identifier: Apache-2.0
// A model run instance's identity, lifetime and tasks (aclmdlRI*,
// 15_model_running_instance_management.md): aclmdlRIGetId from capture begin
// on, the name, destroy callbacks, abort, and the model's streams and tasks
// as handles the query calls take, built once from the host model's
// introspection at the first aclmdlRIGetStreams. Kernel tasks name their
// kernel through aclrtGetFunctionName on their funcHandle; their argument
// block is the emulation's record of the launch's arguments
// (keel::kernel_argument, one per argument). The debug prints write
// keel's dump of the model (keel/runtime/model_dump.hpp).
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "detail/state.hpp"
#include "keel/runtime/model_dump.hpp"

namespace keel::acl_emulation::detail {

struct query_stream;
struct query_task {
  query_stream* stream = nullptr;
  std::size_t index = 0;  // its place in the model's task list (hb::model_tasks)
  keel::task_info info;
  aclrtEvent event = nullptr;   // the record, wait or reset's aclrtEvent (null once the event is gone)
  aclrtTaskGrp group = nullptr;
};
struct query_stream {
  model_box* box = nullptr;
  std::uint64_t id = 0;
  std::vector<query_task> tasks;  // never resized once built: the task handles are their addresses
};
// A change aclmdlRITaskSetParams or aclmdlRITaskDisable staged, for aclmdlRIUpdate.
struct pending_change {
  keel::task_info task;               // the task changed
  model_box* source = nullptr;        // SetParams: the model whose task's parameters it takes
  keel::task_info source_task;
};
struct model_query {
  std::vector<keel::model_stream> streams;
  std::vector<keel::task_info> tasks;
  std::vector<std::unique_ptr<query_stream>> handles;
  std::vector<pending_change> pending;  // guarded by book().m
};

std::uint32_t model_box::next_model_id() noexcept {
  static std::atomic<std::uint32_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

namespace {

// The query handles of live models (guarded by book().m): a handle is valid
// until its model is destroyed (the host model's destroy callback forgets it).
std::unordered_set<const void*>& live_query_handles() {
  static auto* handles = new std::unordered_set<const void*>;
  return *handles;
}

// Kernel names as funcHandles: interned for the life of the process.
std::mutex& names_m() {
  static auto* m = new std::mutex;
  return *m;
}
std::set<std::string>& names() {
  static auto* n = new std::set<std::string>;
  return *n;
}
aclrtFuncHandle function_handle(std::string_view name) {
  std::lock_guard<std::mutex> lock(names_m());
  return const_cast<std::string*>(&*names().emplace(name).first);
}

model_box* live_box(aclmdlRI m, const char* function, bool ended) {
  if (m == nullptr) throw_rule(errc::null_parameter, function, "modelRI is null");
  auto* box = static_cast<model_box*>(m);
  std::lock_guard<std::mutex> lock(book().m);
  if (!book().models.count(box)) throw_rule(errc::invalid_handle, function, "modelRI is not a live model run instance");
  if (ended && box->model == nullptr) throw_rule(errc::invalid_state, function, "the model's capture has not ended");
  return box;
}

void forget_query(void* user) {
  auto* box = static_cast<model_box*>(user);
  std::lock_guard<std::mutex> lock(book().m);
  if (!box->query) return;
  for (auto& s : box->query->handles) {
    live_query_handles().erase(s.get());
    for (auto& t : s->tasks) live_query_handles().erase(&t);
  }
}

// The model's streams and tasks as handles, built once (the tasks' kinds and
// order never change after capture; a group's kernels report no arguments).
model_query& query_of(model_box* box) {
  {
    std::lock_guard<std::mutex> lock(book().m);
    if (box->query) return *box->query;
  }
  auto q = std::make_shared<model_query>();
  q->streams = hb::model_streams(box->model);
  q->tasks = hb::model_tasks(box->model);
  std::size_t i = 0;
  std::lock_guard<std::mutex> lock(book().m);
  if (box->query) return *box->query;
  for (const keel::model_stream& s : q->streams) {
    auto h = std::make_unique<query_stream>();
    h->box = box;
    h->id = s.id;
    h->tasks.resize(s.task_count);
    for (query_task& t : h->tasks) {
      t.stream = h.get();
      t.index = i;
      t.info = q->tasks[i++];
      for (void* e : book().events)
        if (t.info.event != 0 && static_cast<hb::event_handle>(e)->id == t.info.event) t.event = e;
      for (hb::group_handle g : box->groups)
        if (t.info.group != 0 && keel::host::detail::native::books(g).id == t.info.group) t.group = g;
    }
    q->handles.push_back(std::move(h));
  }
  live_query_handles().reserve(live_query_handles().size() + q->handles.size() + q->tasks.size());
  for (auto& s : q->handles) {
    live_query_handles().insert(s.get());
    for (auto& t : s->tasks) live_query_handles().insert(&t);
  }
  box->query = q;
  hb::add_destroy_callback(box->model, &forget_query, box);
  return *box->query;
}

const query_task& task_of(aclmdlRITask task, const char* function) {
  if (task == nullptr) throw_rule(errc::null_parameter, function, "task is null");
  std::lock_guard<std::mutex> lock(book().m);
  if (!live_query_handles().count(task))
    throw_rule(errc::invalid_handle, function, "task is not a task of a live model (aclmdlRIGetTasksByStream)");
  return *static_cast<const query_task*>(task);
}

aclmdlRITaskType acl_type(keel::task_type t) noexcept {
  switch (t) {
    case keel::task_type::kernel: return ACL_MODEL_RI_TASK_KERNEL;
    case keel::task_type::event_record: return ACL_MODEL_RI_TASK_EVENT_RECORD;
    case keel::task_type::event_wait: return ACL_MODEL_RI_TASK_EVENT_WAIT;
    case keel::task_type::event_reset: return ACL_MODEL_RI_TASK_EVENT_RESET;
    default: return ACL_MODEL_RI_TASK_DEFAULT;  // copies, host functions, nested models: CANN has no type for them
  }
}

// The task a kernel argument block belongs to (what aclmdlRITaskGetParams
// gave out): the emulation's argument block is its record of a launch.
// Under book().m.
const query_task* task_of_arguments(const void* args) {
  if (args == nullptr) return nullptr;
  for (model_box* box : book().models) {
    if (!box->query) continue;
    for (const auto& st : box->query->handles)
      for (const query_task& t : st->tasks)
        if (t.info.type == keel::task_type::kernel && t.info.kernel.arguments == args) return &t;
  }
  return nullptr;
}

// After aclmdlRIUpdate: the query handles report the model's tasks as they are now.
void refresh_query(model_box* box) {
  const std::vector<keel::task_info> tasks = hb::model_tasks(box->model);
  std::lock_guard<std::mutex> lock(book().m);
  for (auto& st : box->query->handles)
    for (query_task& t : st->tasks) t.info = tasks[t.index];
}

// The model as keel's dumps read it, with aclmdlRIGetId's id.
struct dump_view {
  model_box* box;
  std::uint64_t id() const { return box->id; }
  std::string name() const { return hb::model_name(box->model); }
  std::vector<keel::model_stream> streams() const { return hb::model_streams(box->model); }
  std::vector<keel::task_info> tasks() const { return hb::model_tasks(box->model); }
};

// The creation flag of an event the emulation made, as far as it keeps it
// (ACL_EVENT_EXTERNAL, ACL_EVENT_TIME_LINE, else 0); 0 once the event is gone.
std::uint32_t event_flag_of(aclrtEvent event) noexcept {
  if (event == nullptr) return 0;
  switch (hb::flags_of(static_cast<hb::event_handle>(event))) {
    case keel::event_flags::external: return ACL_EVENT_EXTERNAL;
    case keel::event_flags::timing: return ACL_EVENT_TIME_LINE;
    default: return 0;
  }
}

}  // namespace
}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

aclError aclmdlRIGetId(aclmdlRI modelRI, std::uint32_t* modelRIId) {
  static constexpr const char* api = "aclmdlRIGetId";
  return guarded(api, call::other, [&] {
    require(modelRIId, api, "modelRIId");
    *modelRIId = live_box(modelRI, api, false)->id;
  });
}

aclError aclmdlRISetName(aclmdlRI modelRI, const char* name) {
  static constexpr const char* api = "aclmdlRISetName";
  return guarded(api, call::other, [&] {
    require(name, api, "name");
    hb::set_model_name(live_box(modelRI, api, true)->model, name);
  });
}

// Copies at most maxLen - 1 bytes and a NUL; an empty string before aclmdlRISetName.
aclError aclmdlRIGetName(aclmdlRI modelRI, std::uint32_t maxLen, char* name) {
  static constexpr const char* api = "aclmdlRIGetName";
  return guarded(api, call::other, [&] {
    require(name, api, "name");
    if (maxLen == 0) throw_rule(errc::invalid_parameter, api, "maxLen is 0: no room for the name's NUL");
    const std::string n = hb::model_name(live_box(modelRI, api, true)->model);
    const std::size_t k = n.size() < maxLen - 1 ? n.size() : maxLen - 1;
    std::memcpy(name, n.data(), k);
    name[k] = '\0';
  });
}

aclError aclmdlRIDestroyRegisterCallback(aclmdlRI modelRI, aclrtCallback func, void* userData) {
  static constexpr const char* api = "aclmdlRIDestroyRegisterCallback";
  return guarded(api, call::other, [&] {
    if (func == nullptr) throw_rule(errc::null_parameter, api, "func is null");
    hb::add_destroy_callback(live_box(modelRI, api, true)->model, func, userData);
  });
}

aclError aclmdlRIDestroyUnregisterCallback(aclmdlRI modelRI, aclrtCallback func) {
  static constexpr const char* api = "aclmdlRIDestroyUnregisterCallback";
  return guarded(api, call::other, [&] { hb::remove_destroy_callback(live_box(modelRI, api, true)->model, func, nullptr); });
}

aclError aclmdlRIAbort(aclmdlRI modelRI) {
  static constexpr const char* api = "aclmdlRIAbort";
  return guarded(api, call::other, [&] { hb::abort_model(live_box(modelRI, api, true)->model); });
}

aclError aclmdlRIGetStreams(aclmdlRI modelRI, aclrtStream* streams, std::uint32_t* numStreams) {
  static constexpr const char* api = "aclmdlRIGetStreams";
  return guarded(api, call::other, [&] {
    require(numStreams, api, "numStreams");
    model_query& q = query_of(live_box(modelRI, api, true));
    if (streams != nullptr) {
      if (*numStreams < q.handles.size())
        throw_rule(errc::invalid_parameter, api,
                   "numStreams " + std::to_string(*numStreams) + " is smaller than the model's " +
                       std::to_string(q.handles.size()) + " streams");
      for (std::size_t i = 0; i < q.handles.size(); ++i) streams[i] = q.handles[i].get();
    }
    *numStreams = static_cast<std::uint32_t>(q.handles.size());
  });
}

aclError aclmdlRIGetTasksByStream(aclrtStream stream, aclmdlRITask* tasks, std::uint32_t* numTasks) {
  static constexpr const char* api = "aclmdlRIGetTasksByStream";
  return guarded(api, call::other, [&] {
    require(numTasks, api, "numTasks");
    if (stream == nullptr) throw_rule(errc::null_parameter, api, "stream is null");
    std::lock_guard<std::mutex> lock(book().m);
    if (!live_query_handles().count(stream))
      throw_rule(errc::invalid_handle, api, "stream is not a stream of a live model (aclmdlRIGetStreams)");
    auto& s = *static_cast<query_stream*>(stream);
    if (tasks != nullptr) {
      if (*numTasks < s.tasks.size())
        throw_rule(errc::invalid_parameter, api,
                   "numTasks " + std::to_string(*numTasks) + " is smaller than the stream's " +
                       std::to_string(s.tasks.size()) + " tasks");
      for (std::size_t i = 0; i < s.tasks.size(); ++i) tasks[i] = &s.tasks[i];
    }
    *numTasks = static_cast<std::uint32_t>(s.tasks.size());
  });
}

aclError aclmdlRITaskGetType(aclmdlRITask task, aclmdlRITaskType* type) {
  static constexpr const char* api = "aclmdlRITaskGetType";
  return guarded(api, call::other, [&] {
    require(type, api, "type");
    *type = acl_type(task_of(task, api).info.type);
  });
}

aclError aclmdlRITaskGetSeqId(aclmdlRITask task, std::uint32_t* id) {
  static constexpr const char* api = "aclmdlRITaskGetSeqId";
  return guarded(api, call::other, [&] {
    require(id, api, "id");
    *id = task_of(task, api).info.sequence;
  });
}

aclError aclmdlRITaskGetParams(aclmdlRITask task, aclmdlRITaskParams* params) {
  static constexpr const char* api = "aclmdlRITaskGetParams";
  return guarded(api, call::other, [&] {
    require(params, api, "params");
    const query_task& t = task_of(task, api);
    aclmdlRITaskParams p;
    std::memset(&p, 0, sizeof p);
    p.type = acl_type(t.info.type);
    p.taskGrp = t.group;
    switch (t.info.type) {
      case keel::task_type::kernel:
        p.kernelTaskParams.funcHandle = function_handle(t.info.kernel.kind.name());
        p.kernelTaskParams.args = const_cast<keel::kernel_argument*>(t.info.kernel.arguments);
        p.kernelTaskParams.isHostArgs = 0;
        p.kernelTaskParams.argsSize = t.info.kernel.argument_count * sizeof(keel::kernel_argument);
        p.kernelTaskParams.numBlocks = 1;
        break;
      // An event task reports its event, the flag the event was created
      // with (eventFlag, as aclrtCreateEventExWithFlag takes it) and, for an
      // external record or wait, the external operation's flag.
      case keel::task_type::event_record:
        p.eventRecordTaskParams.event = t.event;
        p.eventRecordTaskParams.eventFlag = event_flag_of(t.event);
        p.eventRecordTaskParams.recordFlag = t.info.external_event ? ACL_EVENT_RECORD_EXTERNAL : 0U;
        break;
      case keel::task_type::event_wait:
        p.eventWaitTaskParams.event = t.event;
        p.eventWaitTaskParams.eventFlag = event_flag_of(t.event);
        p.eventWaitTaskParams.waitFlag = t.info.external_event ? ACL_EVENT_WAIT_EXTERNAL : 0U;
        break;
      case keel::task_type::event_reset:
        p.eventResetTaskParams.event = t.event;
        p.eventResetTaskParams.eventFlag = event_flag_of(t.event);
        break;
      default: break;
    }
    *params = p;
  });
}

// The emulation launches no kernel with attributes: each reads as CANN's
// default (0). The three CANN documents as not queryable are refused.
aclError aclmdlRIKernelTaskGetAttribute(aclmdlRITask task, aclrtLaunchKernelAttrId attrId,
                                        aclrtLaunchKernelAttrValue* attrValue) {
  static constexpr const char* api = "aclmdlRIKernelTaskGetAttribute";
  return guarded(api, call::other, [&] {
    require(attrValue, api, "attrValue");
    const query_task& t = task_of(task, api);
    if (t.info.type != keel::task_type::kernel)
      throw_rule(errc::invalid_parameter, api, "the task is not a kernel task (aclmdlRITaskGetType)");
    const int id = raw(attrId);
    if (id == ACL_RT_LAUNCH_KERNEL_ATTR_ENGINE_TYPE || id == ACL_RT_LAUNCH_KERNEL_ATTR_BLOCKDIM_OFFSET ||
        id == ACL_RT_LAUNCH_KERNEL_ATTR_BLOCK_TASK_PREFETCH)
      throw_rule(errc::invalid_parameter, api, "attribute " + std::to_string(id) + " cannot be queried");
    if (id < ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE || id > ACL_RT_LAUNCH_KERNEL_ATTR_ENABLE_PROFILING)
      throw_rule(errc::invalid_parameter, api, "unknown attribute " + std::to_string(id));
    std::memset(attrValue, 0, sizeof *attrValue);
  });
}

// Stages new parameters for a task, applied by aclmdlRIUpdate. The
// emulation's kernel argument block is its record of a launch: a kernel task
// takes the parameters aclmdlRITaskGetParams gave for a kernel task of the
// same function (of this model or another live one) and then runs that
// launch. Event tasks keep their event; other tasks take no parameters.
aclError aclmdlRITaskSetParams(aclmdlRITask task, aclmdlRITaskParams* params) {
  static constexpr const char* api = "aclmdlRITaskSetParams";
  return guarded(api, call::other, [&] {
    require(params, api, "params");
    const query_task& t = task_of(task, api);
    if (params->type != acl_type(t.info.type))
      throw_rule(errc::invalid_parameter, api,
                 "params->type is " + std::to_string(raw(params->type)) + " and the task's type is " +
                     std::to_string(raw(acl_type(t.info.type))) + " (aclmdlRITaskGetType)");
    if (t.info.type == keel::task_type::event_record || t.info.type == keel::task_type::event_wait ||
        t.info.type == keel::task_type::event_reset) {
      const aclrtEvent e = t.info.type == keel::task_type::event_record ? params->eventRecordTaskParams.event
                           : t.info.type == keel::task_type::event_wait ? params->eventWaitTaskParams.event
                                                                         : params->eventResetTaskParams.event;
      if (e != t.event) throw_rule(errc::invalid_parameter, api, "an event task keeps its event in the emulation");
      return;
    }
    if (t.info.type != keel::task_type::kernel)
      throw_rule(errc::invalid_parameter, api, "the emulation sets the parameters of kernel and event tasks only");
    const aclmdlRIKernelTaskParams& k = params->kernelTaskParams;
    if (k.funcHandle != function_handle(t.info.kernel.kind.name()))
      throw_rule(errc::invalid_parameter, api, "a kernel task keeps its function (funcHandle) in the emulation");
    std::lock_guard<std::mutex> lock(book().m);
    const query_task* from = task_of_arguments(k.args);
    if (from == nullptr)
      throw_rule(errc::invalid_parameter, api,
                 "args is not an argument block aclmdlRITaskGetParams gave for a kernel task of a live model");
    if (k.argsSize != from->info.kernel.argument_count * sizeof(keel::kernel_argument))
      throw_rule(errc::invalid_parameter, api,
                 "argsSize " + std::to_string(k.argsSize) + " is not the size of the argument block (" +
                     std::to_string(from->info.kernel.argument_count * sizeof(keel::kernel_argument)) + ")");
    if (!(from->info.kernel.kind == t.info.kernel.kind))
      throw_rule(errc::invalid_parameter, api, "the argument block is another function's");
    auto& pending = t.stream->box->query->pending;
    pending.reserve(pending.size() + 1);
    pending.push_back(pending_change{t.info, from->stream->box, from->info});
  });
}

// Stages disabling a kernel task (it no longer runs once aclmdlRIUpdate applied it).
aclError aclmdlRITaskDisable(aclmdlRITask task) {
  static constexpr const char* api = "aclmdlRITaskDisable";
  return guarded(api, call::other, [&] {
    const query_task& t = task_of(task, api);
    if (t.info.type != keel::task_type::kernel)
      throw_rule(errc::invalid_parameter, api, "the emulation disables kernel tasks only");
    std::lock_guard<std::mutex> lock(book().m);
    auto& pending = t.stream->box->query->pending;
    pending.reserve(pending.size() + 1);
    pending.push_back(pending_change{t.info, nullptr, keel::task_info{}});
  });
}

// Applies what aclmdlRITaskSetParams and aclmdlRITaskDisable staged, at
// once: executions started later run the new tasks, a running one keeps
// its own. Nothing changes when a change cannot be applied (a source model
// destroyed meanwhile): the staged changes are dropped either way.
aclError aclmdlRIUpdate(aclmdlRI modelRI) {
  static constexpr const char* api = "aclmdlRIUpdate";
  return guarded(api, call::other, [&] {
    model_box* box = live_box(modelRI, api, true);
    std::vector<pending_change> pending;
    {
      std::lock_guard<std::mutex> lock(book().m);
      if (!box->query) return;  // no task handle was ever given out: nothing staged
      pending.swap(box->query->pending);
      for (const pending_change& p : pending)
        if (p.source != nullptr && !book().models.count(p.source))
          throw_rule(errc::invalid_state, api, "a task took the parameters of a model destroyed since");
    }
    if (pending.empty()) return;
    hb::task_update_begin(box->model);
    try {
      for (const pending_change& p : pending) {
        if (p.source == nullptr) {
          hb::task_update_disable(box->model, p.task);
        } else {
          hb::task_update_set_from(box->model, p.task, p.source->model, p.source_task);
        }
      }
    } catch (...) {
      hb::task_update_abort(box->model);
      throw;
    }
    hb::task_update_commit_now(box->model);
    refresh_query(box);
  });
}

aclError aclrtGetFunctionName(aclrtFuncHandle funcHandle, std::uint32_t maxLen, char* name) {
  static constexpr const char* api = "aclrtGetFunctionName";
  return guarded(api, call::other, [&] {
    require(name, api, "name");
    if (funcHandle == nullptr) throw_rule(errc::null_parameter, api, "funcHandle is null");
    if (maxLen == 0) throw_rule(errc::invalid_parameter, api, "maxLen is 0");
    std::lock_guard<std::mutex> lock(names_m());
    const std::string* found = nullptr;
    for (const std::string& n : names())
      if (&n == funcHandle) found = &n;
    if (found == nullptr) throw_rule(errc::invalid_handle, api, "funcHandle is not a function of a model task");
    const std::size_t k = found->size() < maxLen - 1 ? found->size() : maxLen - 1;
    std::memcpy(name, found->data(), k);
    name[k] = '\0';
  });
}

// One line per task: the device, the model, the stream and the task.
aclError aclmdlRIDebugPrint(aclmdlRI modelRI) {
  static constexpr const char* api = "aclmdlRIDebugPrint";
  return guarded(api, call::other, [&] {
    model_box* box = live_box(modelRI, api, true);
    const dump_view view{box};
    const auto streams = view.streams();
    std::printf("model %u: %zu stream(s)\n", box->id, streams.size());
    std::size_t task_id = 0;
    for (const keel::task_info& t : view.tasks())
      std::printf("device 0 model %u stream %llu task %zu seq %u type %s\n", box->id,
                  static_cast<unsigned long long>(streams[t.stream].id), task_id++, t.sequence,
                  std::string(keel::to_string(t.type)).c_str());
    std::fflush(stdout);
  });
}

// The model as JSON in the file at path (it must be writable); flags is
// ACL_MDLRI_DEBUG_JSON_PRINT_SUMMARY or _VERBOSE (keel's dump has the
// kernels' arguments either way).
aclError aclmdlRIDebugJsonPrint(aclmdlRI modelRI, const char* path, std::uint32_t flags) {
  static constexpr const char* api = "aclmdlRIDebugJsonPrint";
  return guarded(api, call::other, [&] {
    require(path, api, "path");
    if (flags != ACL_MDLRI_DEBUG_JSON_PRINT_SUMMARY && flags != ACL_MDLRI_DEBUG_JSON_PRINT_VERBOSE)
      throw_rule(errc::invalid_parameter, api, "unknown flags " + std::to_string(flags));
    const std::string json = keel::to_json(dump_view{live_box(modelRI, api, true)});
    std::FILE* f = std::fopen(path, "w");
    if (f == nullptr) throw_rule(errc::invalid_parameter, api, std::string("cannot write ") + path);
    const bool written = std::fwrite(json.data(), 1, json.size(), f) == json.size();
    if (std::fclose(f) != 0 || !written) throw_rule(errc::invalid_parameter, api, std::string("cannot write ") + path);
  });
}

}  // extern "C"
