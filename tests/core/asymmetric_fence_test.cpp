// SPDX-License-Identifier: Apache-2.0
// keel/core/asymmetric_fence.hpp: the cold side's membarrier() refused after
// the process registered (here by a seccomp filter installed afterwards, in
// a child process) falls back to the system-wide command and returns: the
// process goes on instead of ending.
#include <catch2/catch.hpp>

#include "keel/core/asymmetric_fence.hpp"

#if defined(__linux__) && !defined(KEEL_DETAIL_TSAN)
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>

using keel::detail::asymmetric_fence;

namespace {

// Refuses membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, ...) with EPERM and
// allows every other call (membarrier's other commands included).
bool refuse_expedited_membarrier() {
  sock_filter program[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_membarrier, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog filter{static_cast<unsigned short>(sizeof program / sizeof program[0]), program};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &filter) == 0;
}

}  // namespace

TEST_CASE("asymmetric fence: a refused membarrier after registration falls back instead of ending the process",
          "[core][fence]") {
  if (!asymmetric_fence::available()) {
    WARN("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) is not available here: nothing to refuse");
    return;
  }
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The child's own registration (a forked address space starts without one).
    if (!asymmetric_fence::register_process()) _exit(3);
    if (!refuse_expedited_membarrier()) _exit(4);  // no seccomp here: nothing this test can show
    asymmetric_fence::heavy();
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 4) {
    WARN("seccomp filters cannot be installed here");
    return;
  }
  INFO("the child " << (WIFSIGNALED(status) ? "was killed by a signal" : "exited") << " with "
                    << (WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status)));
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
#endif
