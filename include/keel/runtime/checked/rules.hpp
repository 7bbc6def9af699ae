// SPDX-License-Identifier: Apache-2.0
// What the checked layer's calls share: the native backend's optional
// capabilities, the update lock's two kinds of entry, how a stream and a
// capture are described in errors, and the rule for calls unsafe during
// capture. Every message keel gives for a broken capture, group or update
// rule is built in keel/runtime/checked/, whatever the backend.
#pragma once

#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "keel/core/error.hpp"
#include "keel/runtime/backend/detection.hpp"
#include "keel/runtime/checked/books.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace checked {

/// @cond
namespace detail {

// ---- the native backend's optional capabilities --------------------------

template <class N>
using kernel_body_runs_at_issue_member = decltype(N::kernel_body_runs_at_issue);
// ACL runs a kernel's body when it is issued (the body enqueues ACL work);
// the host backend stores it. A body that runs at issue runs outside the
// device books' lock, so it may call keel itself.
template <class N>
constexpr bool kernel_body_runs_at_issue() {
  if constexpr (keel::detail::is_detected_v<kernel_body_runs_at_issue_member, N>)
    return static_cast<bool>(N::kernel_body_runs_at_issue);
  else
    return false;
}

template <class N>
using thread_capture_mode_call = decltype(N::thread_capture_mode(std::declval<typename N::device_type&>()));
// The calling thread's own capture mode (ACL's aclmdlRICaptureThreadExchangeMode):
// a thread in relaxed mode may make calls unsafe during another thread's capture.
template <class N>
capture_mode thread_mode(typename N::device_type& d) noexcept {
  if constexpr (keel::detail::is_detected_v<thread_capture_mode_call, N>)
    return N::thread_capture_mode(d);
  else
    return capture_mode::global;
}

template <class N>
using native_capture_status_call = decltype(N::native_capture_status(std::declval<typename N::stream_handle>()));
template <class N>
using is_adopted_call = decltype(N::is_adopted(std::declval<typename N::stream_handle>()));

// A native backend whose staged tasks carry their kernel kinds (the host's
// replacement tasks do) says so with staged_count(g) and staged_kind(g, i):
// the checked layer then reads them instead of keeping a list of its own.
template <class N>
using staged_kind_call = decltype(N::staged_kind(std::declval<typename N::group_handle>(), std::size_t{}),
                                  N::staged_count(std::declval<typename N::group_handle>()));
template <class N>
constexpr bool native_staged_kinds() {
  return keel::detail::is_detected_v<staged_kind_call, N>;
}

// ---- the update lock: an owner's lock-free entry where the lock has one ---

template <class L>
using enter_call = decltype(std::declval<L&>().enter());
template <class L>
using set_owner_call = decltype(std::declval<L&>().set_owner());

template <class L>
class update_section {
 public:
  explicit update_section(L& l) noexcept : lock_(l), owned_(try_enter(l)) {
    if (!owned_) lock_.lock();
  }
  ~update_section() {
    if constexpr (keel::detail::is_detected_v<enter_call, L>) {
      if (owned_) {
        lock_.leave();
        return;
      }
    }
    lock_.unlock();
  }
  update_section(const update_section&) = delete;
  update_section& operator=(const update_section&) = delete;

 private:
  static bool try_enter(L& l) noexcept {
    if constexpr (keel::detail::is_detected_v<enter_call, L>)
      return l.enter();
    else
      return false;
  }
  L& lock_;
  bool owned_;
};

template <class L>
void set_owner(L& l) noexcept {
  if constexpr (keel::detail::is_detected_v<set_owner_call, L>) l.set_owner();
}

// ---- what a task is, for the rules ----------------------------------------

enum class task_kind : unsigned char { host, kernel, copy, memset, event, group, model };

inline const char* kind_name(task_kind k) noexcept {
  switch (k) {
    case task_kind::host: return "a host callable";
    case task_kind::kernel: return "a kernel";
    case task_kind::copy: return "a copy";
    case task_kind::memset: return "a memset";
    case task_kind::event: return "an event operation";
    case task_kind::group: return "a task group";
    case task_kind::model: return "a model execution";
  }
  return "a task";
}

// ---- descriptions -----------------------------------------------------------

inline std::string describe_stream(std::uint64_t id) { return "stream #" + std::to_string(id); }

template <class S>
std::string describe_capture(const capture_books<S>& c, std::uint64_t stream_id) {
  return describe_stream(stream_id) + " is capturing (capture #" + std::to_string(c.id) + ", mode " +
         std::string(to_string(c.mode)) + ", task group open: " + (c.group_open ? "yes" : "no") + ")";
}

// The mode rule for a call unsafe during capture (a synchronize, a blocking
// copy, a query of an event recorded inside the capture): a global capture
// refuses it from every thread, a thread-local one from the capturing
// thread; a thread that set its own mode to relaxed (ACL's
// aclmdlRICaptureThreadExchangeMode) may make it, and one in thread-local
// mode ignores other threads' captures. Caller holds the device books' lock.
template <class S>
void check_unsafe(const capture_books<S>& c, capture_mode own_mode, const char* api, const std::string& what) {
  if (own_mode == capture_mode::relaxed) return;
  const bool mine = c.thread == std::this_thread::get_id();
  const bool refused =
      (c.mode == capture_mode::global && (mine || own_mode == capture_mode::global)) ||
      (c.mode == capture_mode::thread_local_ && mine);
  if (refused)
    ::keel::detail::throw_composed(
        errc::capture_violation, api,
        {what, " is unsafe during capture: ", describe_capture(c, c.origin_id),
         (c.mode == capture_mode::global ? "; global mode refuses it from every thread"
                                         : "; thread-local mode refuses it from the capturing thread")});
}

// A kind compares by name; the same literal (the usual case) by address first.
inline bool same_kind(kernel_kind a, kernel_kind b) noexcept {
  return (a.name().data() == b.name().data() && a.name().size() == b.name().size()) || a == b;
}

[[noreturn]] inline void refuse_in_update(std::uint64_t stream_id, task_kind k, std::uint64_t group, const char* api) {
  ::keel::detail::throw_composed(errc::update_violation, api,
                                 {"only operator launches may replace a task group's tasks, not ", kind_name(k),
                                  " (stream #", stream_id, " is updating group #", group, ")"});
}

}  // namespace detail
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::checked
