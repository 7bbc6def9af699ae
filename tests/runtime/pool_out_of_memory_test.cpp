// SPDX-License-Identifier: Apache-2.0
// A memory pool's releases allocate nothing: every release path is noexcept,
// so an allocation failing there would end the process. This executable
// replaces the global operator new with one that can be told to fail, and
// releases blocks of one size class (each back into its class's free list)
// while every allocation fails, in a child process: a release that
// allocated would std::terminate it.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "keel/host/host.hpp"
#include "keel/host/memory_pool.hpp"

namespace {
std::atomic<bool> allocations_fail{false};
}  // namespace

// GCC 12 takes malloc and free inside the replacements for a mismatch at
// every inlined new and delete.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t bytes) {
  if (allocations_fail.load(std::memory_order_relaxed)) throw std::bad_alloc();
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
// Every form that pairs with the replaced delete is replaced too: a nothrow
// new left to the sanitizer's allocator would be freed here (a mismatch).
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept {
  if (allocations_fail.load(std::memory_order_relaxed)) return nullptr;
  return std::malloc(bytes == 0 ? 1 : bytes);
}
void* operator new[](std::size_t bytes) { return ::operator new(bytes); }
void* operator new[](std::size_t bytes, const std::nothrow_t& tag) noexcept { return ::operator new(bytes, tag); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

TEST_CASE("memory pool: releasing blocks allocates nothing (every allocation failing meanwhile)",
          "[runtime][memory_pool]") {
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    keel::host::device dev;
    keel::host::stream s{dev};
    keel::host::memory_pool pool{dev, {"out of memory"}};
    {
      // Eight blocks of one class in use at once, so that their free list
      // must hold eight when they come back.
      std::vector<keel::host::pool_buffer> held;
      held.reserve(8);
      for (int i = 0; i < 8; ++i) held.push_back(pool.allocate(s, 4096));
      allocations_fail.store(true);
      while (!held.empty()) held.pop_back();  // each release puts its block back
      allocations_fail.store(false);
    }
    s.synchronize();
    _exit(pool.statistics().used == 0 ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  INFO("the child " << (WIFSIGNALED(status) ? "was killed by signal " : "exited with ")
                    << (WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status)));
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
