// SPDX-License-Identifier: Apache-2.0
// CANN's capture, task-group, update and event rules, decided from the
// emulation's own books (detail/capture_rules.hpp says what each call checks
// and why; the statuses are those 25-01_aclError.md gives the rules).
#include "detail/capture_rules.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "detail/state.hpp"

namespace keel::acl_emulation::detail::cann_rules {
namespace {

// One capture, from aclmdlRICaptureBegin to its end or discard.
struct capture_record {
  std::uint64_t id = 0;
  const void* origin = nullptr;
  std::int32_t device = 0;
  int mode = ACL_MODEL_RI_CAPTURE_MODE_GLOBAL;
  std::thread::id thread;
  bool invalidated = false;  // a stream that joined it was destroyed
  bool over = false;         // ended or discarded: its records join nothing any more
  // The stream marking a task group (null: none), and how many tasks that
  // stream had issued in the capture when the group began.
  const void* group_stream = nullptr;
  std::uint64_t group_start = 0;
  std::vector<const void*> streams;  // the origin first, then the streams that joined
};

struct stream_record {
  std::shared_ptr<capture_record> capture;  // null: the stream is in no capture
  std::uint64_t issued = 0;                 // its tasks in that capture
  std::uint64_t joined = 0;                 // how many of them the capture has waited for
  const void* updating = nullptr;           // the task group it is updating (null: none)
  std::uint64_t update_tasks = 0;           // the tasks that update issued
};

// An event's last record: in which capture (none if made outside one), by
// which stream, after how many of its tasks.
struct event_record {
  std::weak_ptr<capture_record> capture;
  const void* stream = nullptr;
  std::uint64_t position = 0;
};

struct group_record {
  std::uint64_t tasks = 0;
  const void* updater = nullptr;  // the stream updating it (null: none)
};

struct rule_books {
  std::mutex m;
  std::uint64_t next_capture = 1;
  std::unordered_map<const void*, stream_record> streams;
  std::unordered_map<const void*, event_record> events;
  std::unordered_map<const void*, group_record> groups;
};

rule_books& rules() {
  static auto* b = new rule_books;  // never destroyed, as the emulation's other books (state.hpp)
  return *b;
}

std::string describe(const capture_record& c) {
  char origin[32];
  std::snprintf(origin, sizeof origin, "%p", c.origin);
  return "capture #" + std::to_string(c.id) + " (begun on stream " + origin + ")";
}

// The capture @p s belongs to, if it is still going on. Caller holds the lock.
capture_record* capture_of(rule_books& b, const void* s) {
  auto it = b.streams.find(s);
  if (it == b.streams.end() || !it->second.capture || it->second.capture->over) return nullptr;
  return it->second.capture.get();
}

// @p s leaves its capture. Caller holds the lock.
void leave(rule_books& b, const void* s) {
  auto it = b.streams.find(s);
  if (it == b.streams.end()) return;
  it->second.capture.reset();
  it->second.issued = it->second.joined = 0;
  if (it->second.updating == nullptr) b.streams.erase(it);
}

void end_capture(rule_books& b, const void* origin) {
  auto it = b.streams.find(origin);
  if (it == b.streams.end() || !it->second.capture) return;
  const std::shared_ptr<capture_record> c = it->second.capture;
  if (c->origin != origin) return;
  c->over = true;
  for (const void* s : c->streams) leave(b, s);
}

void end_update(rule_books& b, const void* s) {
  auto it = b.streams.find(s);
  if (it == b.streams.end() || it->second.updating == nullptr) return;
  auto g = b.groups.find(it->second.updating);
  if (g != b.groups.end() && g->second.updater == s) g->second.updater = nullptr;
  it->second.updating = nullptr;
  it->second.update_tasks = 0;
  if (!it->second.capture) b.streams.erase(it);
}

}  // namespace

void refuse(aclError code, const std::string& text) {
  throw_status(code, std::string("refused by the emulation's own CANN rule (") + status_symbol(code) + "): " + text);
}

void check_capture_begin(const void* stream) {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  if (const capture_record* c = capture_of(b, stream))
    refuse(ACL_ERROR_RT_STREAM_CAPTURED, "the stream is capturing already, in " + describe(*c));
  auto it = b.streams.find(stream);
  if (it != b.streams.end() && it->second.updating != nullptr)
    refuse(ACL_ERROR_STREAM_TASK_GROUP_STATUS,
           "the stream is updating a task group; one stream does not capture and update at once");
}

void note_capture_begin(const void* stream, std::int32_t device, int mode) {
  rule_books& b = rules();
  auto c = std::make_shared<capture_record>();
  c->origin = stream;
  c->device = device;
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  c->streams.push_back(stream);
  std::lock_guard<std::mutex> lock(b.m);
  c->id = b.next_capture++;
  stream_record& r = b.streams[stream];
  r.capture = std::move(c);
  r.issued = r.joined = 0;
}

aclError capture_end_status(const void* stream, std::string& why) {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  const capture_record* c = capture_of(b, stream);
  if (c == nullptr) {
    why = "the stream is not capturing";
    return ACL_ERROR_RT_STREAM_NOT_CAPTURED;
  }
  if (c->origin != stream) {
    why = "the stream joined " + describe(*c) + " but did not begin it; end it on the stream that began it";
    return ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED;
  }
  if (c->mode != ACL_MODEL_RI_CAPTURE_MODE_RELAXED && c->thread != std::this_thread::get_id()) {
    why = describe(*c) + " began on another thread in a strict mode; only a relaxed capture ends on another thread";
    return ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD;
  }
  if (c->invalidated) {
    why = describe(*c) + " was invalidated: a stream that joined it was destroyed";
    return ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED;
  }
  if (c->group_stream != nullptr) {
    why = "a task group is still open in " + describe(*c) +
          " (aclmdlRICaptureTaskGrpBegin without aclmdlRICaptureTaskGrpEnd)";
    return ACL_ERROR_STREAM_TASK_GROUP_STATUS;
  }
  for (const void* s : c->streams) {
    if (s == stream) continue;
    const stream_record& r = b.streams.at(s);
    if (r.joined < r.issued) {
      why = "a stream forked into " + describe(*c) + " issued " + std::to_string(r.issued) +
            " tasks and the capture waited for " + std::to_string(r.joined) +
            " of them: its last tasks are not joined back by an event record the capture waits on";
      return ACL_ERROR_RT_STREAM_UNJOINED;
    }
  }
  return ACL_SUCCESS;
}

void note_capture_over(const void* origin) noexcept {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  end_capture(b, origin);
}

bool is_capture_origin(const void* stream) noexcept {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  const capture_record* c = capture_of(b, stream);
  return c != nullptr && c->origin == stream;
}

void check_issue(const void* stream, bool operator_launch) {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  const capture_record* c = capture_of(b, stream);
  if (c != nullptr && c->group_stream != nullptr && c->group_stream != stream)
    refuse(ACL_ERROR_STREAM_TASK_GROUP_INTR,
           "another stream of " + describe(*c) +
               " is recording a task group; the capture's other streams take no work until it ends");
  if (operator_launch) return;
  if (c != nullptr && c->group_stream == stream)
    refuse(ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT,
           "the stream is recording a task group in " + describe(*c) + ", which holds operator launches only");
  auto it = b.streams.find(stream);
  if (it != b.streams.end() && it->second.updating != nullptr)
    refuse(ACL_ERROR_STREAM_TASK_GROUP_STATUS,
           "the stream is updating a task group, whose update issues operator launches only");
}

void note_task(const void* stream) noexcept {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  auto it = b.streams.find(stream);
  if (it == b.streams.end()) return;
  if (it->second.capture && !it->second.capture->over) ++it->second.issued;
  if (it->second.updating != nullptr) ++it->second.update_tasks;
}

void note_record(const void* event, const void* stream) noexcept {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  auto it = b.streams.find(stream);
  if (it == b.streams.end() || !it->second.capture || it->second.capture->over) {
    b.events.erase(event);  // a record outside capture: the event stands outside every capture
    return;
  }
  event_record& e = b.events[event];
  e.capture = it->second.capture;
  e.stream = stream;
  e.position = it->second.issued;
}

void check_wait(const void* stream, const void* event) {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  const capture_record* mine = capture_of(b, stream);
  auto e = b.events.find(event);
  if (mine == nullptr || e == b.events.end()) return;
  const std::shared_ptr<capture_record> theirs = e->second.capture.lock();
  if (theirs && !theirs->over && theirs.get() != mine)
    refuse(ACL_ERROR_STREAM_CAPTURE_CONFLICT,
           "the stream is in " + describe(*mine) + " and the event was recorded in " + describe(*theirs) +
               "; a capturing stream waits only on events of its own capture");
}

void note_wait(const void* stream, const void* event) noexcept {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  auto e = b.events.find(event);
  if (e == b.events.end()) return;
  const std::shared_ptr<capture_record> c = e->second.capture.lock();
  if (!c || c->over || c->invalidated) return;
  capture_record* mine = capture_of(b, stream);
  if (mine == c.get()) {
    // A join: the waiting stream now depends on the recording one up to the record.
    auto r = b.streams.find(e->second.stream);
    if (r != b.streams.end() && r->second.capture == c) r->second.joined = std::max(r->second.joined, e->second.position);
    return;
  }
  if (mine != nullptr) return;  // another capture's event: check_wait refused it
  // A fork: the stream joins the capture, with nothing issued in it yet.
  stream_record& r = b.streams[stream];
  r.capture = c;
  r.issued = r.joined = 0;
  c->streams.push_back(stream);
}

void note_event_destroyed(const void* event) noexcept {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  b.events.erase(event);
}

void note_stream_destroyed(const void* stream) noexcept {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  end_update(b, stream);
  auto it = b.streams.find(stream);
  if (it == b.streams.end() || !it->second.capture) return;
  const std::shared_ptr<capture_record> c = it->second.capture;
  if (c->origin == stream) {
    end_capture(b, stream);
    return;
  }
  c->invalidated = true;
  if (c->group_stream == stream) c->group_stream = nullptr;
  c->streams.erase(std::remove(c->streams.begin(), c->streams.end(), stream), c->streams.end());
  leave(b, stream);
}

void check_group_begin(const void* stream) {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  const capture_record* c = capture_of(b, stream);
  if (c == nullptr) refuse(ACL_ERROR_RT_STREAM_NOT_CAPTURED, "a task group is marked during capture; the stream is not capturing");
  if (c->group_stream != nullptr)
    refuse(ACL_ERROR_STREAM_TASK_GROUP_STATUS,
           describe(*c) + " has a task group open already; end it with aclmdlRICaptureTaskGrpEnd first");
}

void note_group_begin(const void* stream) noexcept {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  auto it = b.streams.find(stream);
  if (it == b.streams.end() || !it->second.capture) return;
  it->second.capture->group_stream = stream;
  it->second.capture->group_start = it->second.issued;
}

void check_group_end(const void* stream) {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  const capture_record* c = capture_of(b, stream);
  if (c == nullptr) refuse(ACL_ERROR_STREAM_TASK_GROUP_STATUS, "the stream is not capturing");
  if (c->group_stream != stream)
    refuse(ACL_ERROR_STREAM_TASK_GROUP_STATUS,
           "the stream has no task group open (aclmdlRICaptureTaskGrpEnd without aclmdlRICaptureTaskGrpBegin)");
}

void note_group_end(const void* stream, const void* group) {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  auto it = b.streams.find(stream);
  if (it == b.streams.end() || !it->second.capture) return;
  capture_record& c = *it->second.capture;
  b.groups[group].tasks = it->second.issued - c.group_start;
  c.group_stream = nullptr;
}

void note_group_destroyed(const void* group) noexcept {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  auto g = b.groups.find(group);
  if (g == b.groups.end()) return;
  if (g->second.updater != nullptr) {
    auto s = b.streams.find(g->second.updater);
    if (s != b.streams.end() && s->second.updating == group) s->second.updating = nullptr;
  }
  b.groups.erase(g);
}

void check_update_begin(const void* stream, const void* group) {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  if (const capture_record* c = capture_of(b, stream))
    refuse(ACL_ERROR_STREAM_TASK_GROUP_STATUS,
           "the stream is in " + describe(*c) + "; an update is issued on a stream that is not capturing");
  auto it = b.streams.find(stream);
  if (it != b.streams.end() && it->second.updating != nullptr)
    refuse(ACL_ERROR_STREAM_TASK_GROUP_STATUS,
           "the stream is updating a task group already; end that update with aclmdlRICaptureTaskUpdateEnd first");
  auto g = b.groups.find(group);
  if (g != b.groups.end() && g->second.updater != nullptr)
    refuse(ACL_ERROR_STREAM_TASK_GROUP_STATUS,
           "another stream is updating the task group; one update of a group at a time");
}

void note_update_begin(const void* stream, const void* group) {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  stream_record& r = b.streams[stream];
  r.updating = group;
  r.update_tasks = 0;
  b.groups[group].updater = stream;
}

void check_update_end(const void* stream) {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  auto it = b.streams.find(stream);
  if (it == b.streams.end() || it->second.updating == nullptr)
    refuse(ACL_ERROR_STREAM_TASK_GROUP_STATUS,
           "the stream is not updating a task group (aclmdlRICaptureTaskUpdateEnd without aclmdlRICaptureTaskUpdateBegin)");
  const std::uint64_t expected = b.groups[it->second.updating].tasks;
  if (it->second.update_tasks != expected)
    refuse(ACL_ERROR_RT_MODEL_UPDATE_FAILED,
           "the task group holds " + std::to_string(expected) + " tasks and the update issued " +
               std::to_string(it->second.update_tasks) + "; an update issues as many tasks as its group holds");
}

void note_update_over(const void* stream) noexcept {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  end_update(b, stream);
}

namespace {
// The mode rule of one capture for an unsafe call of a thread in @p own_mode.
void refuse_if_unsafe(const capture_record& c, int own_mode, const char* what) {
  if (own_mode == ACL_MODEL_RI_CAPTURE_MODE_RELAXED) return;
  const bool mine = c.thread == std::this_thread::get_id();
  const bool refused =
      (c.mode == ACL_MODEL_RI_CAPTURE_MODE_GLOBAL && (mine || own_mode == ACL_MODEL_RI_CAPTURE_MODE_GLOBAL)) ||
      (c.mode == ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL && mine);
  if (refused)
    refuse(ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT,
           std::string(what) + " is unsafe during capture: " + describe(c) +
               (c.mode == ACL_MODEL_RI_CAPTURE_MODE_GLOBAL
                    ? " is in global mode, which refuses it from every thread not in relaxed mode"
                    : " is in thread-local mode, which refuses it from the capturing thread"));
}
}  // namespace

void check_unsafe(std::int32_t device, int own_mode, const char* what) {
  if (own_mode == ACL_MODEL_RI_CAPTURE_MODE_RELAXED) return;
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  for (const auto& entry : b.streams) {
    const capture_record* c = entry.second.capture.get();
    if (c != nullptr && !c->over && c->origin == entry.first && c->device == device) refuse_if_unsafe(*c, own_mode, what);
  }
}

void check_unsafe_stream(const void* stream, int own_mode) {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  if (const capture_record* c = capture_of(b, stream)) refuse_if_unsafe(*c, own_mode, "synchronizing a capturing stream");
}

void check_unsafe_event(const void* event, int own_mode, const char* what) {
  rule_books& b = rules();
  std::lock_guard<std::mutex> lock(b.m);
  auto e = b.events.find(event);
  if (e == b.events.end()) return;
  const std::shared_ptr<capture_record> c = e->second.capture.lock();
  if (c && !c->over && !c->invalidated) refuse_if_unsafe(*c, own_mode, what);
}

}  // namespace keel::acl_emulation::detail::cann_rules
