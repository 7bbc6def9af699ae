// SPDX-License-Identifier: Apache-2.0
// One broken capture, group, update or event rule, made through keel's ACL
// backend on the emulation, and who refused it. Built twice over: once with
// keel's checked layer as it is (keel refuses first, with its own error), and
// once per rule with a copy of the checked layer that lacks that one rule
// (tests/witness/CMakeLists.txt): keel's ACL native layer then calls ACL, and
// the emulation's own check of the rule must refuse it with CANN's status.
//
// Usage: keel_acl_witness <rule> keel|emulation. Exit 0: the rule was refused
// by the one named.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "keel/acl/backend.hpp"
#include "keel/acl/ops.hpp"

#ifndef KEEL_ACL_EMULATION_DIR
#error "KEEL_ACL_EMULATION_DIR: the directory of the emulation's libascendcl.so"
#endif

namespace {

keel::acl::device& acl_device() {
  static keel::acl::device dev{keel::acl::device_options{0, KEEL_ACL_EMULATION_DIR}};
  return dev;
}

keel::ops::tensor floats_view(void* data, std::int64_t n) { return keel::ops::tensor(data, keel::ops::dtype::float32, {n}); }

// Each breaks its rule and nothing else; the status is CANN's for it.
struct scenario {
  const char* rule;
  int status;
  void (*run)();
};

void unjoined_fork() {
  auto& dev = acl_device();
  keel::acl::stream s{dev}, side{dev};
  keel::acl::event fork{dev};
  keel::acl::capture_scope capture{s};
  fork.record(s);
  side.wait(fork);
  side.launch_host([] {});  // work on the fork that the capture never waits for
  (void)capture.end();
}

void group_open_at_end() {
  auto& dev = acl_device();
  keel::acl::stream s{dev};
  keel::acl::capture_scope capture{s};
  keel::acl::task_group_scope mark{s};
  (void)capture.end();
}

void update_count() {
  auto& dev = acl_device();
  keel::acl::stream s{dev}, u{dev};
  keel::acl::device_buffer x(s, 8 * sizeof(float));
  s.synchronize();
  auto add = keel::acl::prepare_add(dev, floats_view(x.data(), 8), floats_view(x.data(), 8), keel::ops::scalar(1.0f),
                                    floats_view(x.data(), 8));
  keel::acl::task_group g;
  keel::acl::model m;
  {
    keel::acl::capture_scope capture{s};
    keel::acl::task_group_scope mark{s};
    keel::acl::run_on(s, add);
    g = mark.end();
    m = capture.end();
  }
  keel::acl::update_scope update{u, g};
  keel::acl::run_on(u, add);
  keel::acl::run_on(u, add);  // the group holds one task
  update.end();
}

void wait_on_other_capture() {
  auto& dev = acl_device();
  keel::acl::stream a{dev}, b{dev};
  keel::acl::event e{dev};
  keel::acl::capture_scope first{a};
  keel::acl::capture_scope second{b};
  e.record(a);
  b.wait(e);
}

void capture_invalidated() {
  auto& dev = acl_device();
  keel::acl::stream s{dev};
  keel::acl::event fork{dev};
  keel::acl::capture_scope capture{s};
  fork.record(s);
  {
    keel::acl::stream side{dev};
    side.wait(fork);  // joins the capture, then leaves it destroyed
  }
  (void)capture.end();
}

void work_beside_group() {
  auto& dev = acl_device();
  keel::acl::stream s{dev}, side{dev};
  keel::acl::event fork{dev};
  keel::acl::device_buffer x(s, 8 * sizeof(float));
  s.synchronize();
  auto add = keel::acl::prepare_add(dev, floats_view(x.data(), 8), floats_view(x.data(), 8), keel::ops::scalar(1.0f),
                                    floats_view(x.data(), 8));
  keel::acl::capture_scope capture{s};
  fork.record(s);
  side.wait(fork);
  keel::acl::task_group_scope mark{s};
  keel::acl::run_on(side, add);  // another stream of the capture, while s records the group
}

void host_task_in_group() {
  auto& dev = acl_device();
  keel::acl::stream s{dev};
  keel::acl::capture_scope capture{s};
  keel::acl::task_group_scope mark{s};
  s.launch_host([] {});  // a group holds operator launches only
}

void capture_begun_twice() {
  auto& dev = acl_device();
  keel::acl::stream s{dev};
  keel::acl::capture_scope first{s};
  keel::acl::capture_scope second{s};
}

const scenario scenarios[] = {
    {"unjoined_fork", 107025, unjoined_fork},                  // ACL_ERROR_RT_STREAM_UNJOINED
    {"group_open_at_end", 107033, group_open_at_end},          // ACL_ERROR_STREAM_TASK_GROUP_STATUS
    {"update_count", 107040, update_count},                    // ACL_ERROR_RT_MODEL_UPDATE_FAILED
    {"wait_on_other_capture", 107032, wait_on_other_capture},  // ACL_ERROR_STREAM_CAPTURE_CONFLICT
    {"capture_invalidated", 507903, capture_invalidated},      // ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED
    {"capture_begun_twice", 107027, capture_begun_twice},      // ACL_ERROR_RT_STREAM_CAPTURED
    {"work_beside_group", 107034, work_beside_group},          // ACL_ERROR_STREAM_TASK_GROUP_INTR
    {"host_task_in_group", 107030, host_task_in_group},        // ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT
};

// The outcome is decided before any scope unwinds: the mutated checked
// layer's books no longer match the runtime once the runtime refused what
// they accepted, and what their teardown does then is the mutation's effect,
// not the witness's. The process ends without it.
[[noreturn]] void finish(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "PASS" : "FAIL", what.c_str());
  std::fflush(stdout);
  std::_Exit(ok ? 0 : 1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[2], "keel") != 0 && std::strcmp(argv[2], "emulation") != 0)) {
    std::fprintf(stderr, "usage: %s <rule> keel|emulation\n", argv[0]);
    return 2;
  }
  const bool by_emulation = std::strcmp(argv[2], "emulation") == 0;
  for (const scenario& sc : scenarios) {
    if (std::strcmp(sc.rule, argv[1]) != 0) continue;
    try {
      sc.run();
    } catch (const keel::error& e) {
      const std::string said = std::string(e.what()) + " [" + e.rule() + "]";
      const bool from_keel = e.code().category() == keel::keel_category();
      const bool from_emulation = e.code() == keel::acl::make_status_code(sc.status) &&
                                  said.find("refused by the emulation's own CANN rule") != std::string::npos;
      finish(by_emulation ? from_emulation : from_keel,
             std::string(sc.rule) + " refused by " + (from_keel ? "keel" : from_emulation ? "the emulation" : "?") +
                 ": " + said);
    }
    finish(false, std::string(sc.rule) + " was accepted");
  }
  std::fprintf(stderr, "unknown rule %s\n", argv[1]);
  return 2;
}
