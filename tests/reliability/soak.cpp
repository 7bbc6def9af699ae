// SPDX-License-Identifier: Apache-2.0
// The soak: runtime and plugin stress workloads for a given time, then a
// report of what ran and a check that no task was lost, duplicated or
// reordered. tools/soak <minutes> builds and runs it; CTest runs 5 seconds.
//
// Runtime: each worker thread owns a stream and issues numbered tasks to it,
// captures models whose task group it updates (sequentially, on its own
// stream, and concurrently through an external event from a second stream),
// executes them, waits on the other workers' events, provokes task failures
// and allocation failures (a device memory limit), and accounts for every
// task. Plugins: threads take and drop leases on the pass plugins and run
// their passes, while failing acquisitions (an initialisation that throws, a
// file that is not a library) are provoked.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "keel/plugin.hpp"
#include "keel/host/memory_pool.hpp"
#include "keel/runtime.hpp"
#include "pass_api.hpp"

namespace host = keel::host;
using clock_type = std::chrono::steady_clock;

namespace {

struct counters {
  std::atomic<std::uint64_t> tasks_issued{0}, tasks_run{0}, replays{0}, updates{0}, concurrent_updates{0};
  std::atomic<std::uint64_t> lost{0}, duplicated{0}, reordered{0}, stale_group{0};
  std::atomic<std::uint64_t> failures_provoked{0}, failures_seen{0}, oom_provoked{0}, oom_seen{0};
  std::atomic<std::uint64_t> leases{0}, releases{0}, pass_runs{0}, load_errors_provoked{0}, load_errors_seen{0};
  std::atomic<std::uint64_t> pool_allocations{0}, pool_bad_bytes{0};
  std::atomic<std::uint64_t> unexpected{0};
};
counters stats;

// Per-stream bookkeeping, touched only by tasks of that stream (in order).
struct lane {
  std::uint64_t next_seq = 0;    // eager tasks: the next number expected
  std::uint64_t ran = 0;         // every task that ran on this stream
  int group_version = 0;         // what the last replayed group carried
};

void eager_task(lane* l, std::uint64_t seq) {
  if (seq < l->next_seq) ++stats.duplicated;
  else if (seq > l->next_seq) ++(seq == l->next_seq + 1 ? stats.reordered : stats.lost);
  l->next_seq = seq + 1;
  ++l->ran;
  ++stats.tasks_run;
}

struct group_kernel {
  void operator()(host::launch_context&, lane* l, int version, const int* expected) const {
    if (version != *expected) ++stats.stale_group;
    l->group_version = version;
    ++l->ran;
    ++stats.tasks_run;
  }
};

// The pool every runtime worker allocates from, on its own stream; small,
// so the provoked out-of-memory cases keep their meaning.
host::memory_pool* shared_pool = nullptr;

void check_fill(unsigned char* p, std::size_t n, unsigned char v) {
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != v) ++stats.pool_bad_bytes;
}

void runtime_worker(host::device& dev, int id, clock_type::time_point until, std::vector<host::event>& events) {
  std::mt19937 rng(static_cast<unsigned>(id) * 7919u + 1);
  host::stream s{dev}, side{dev};
  lane l;
  std::uint64_t seq = 0, issued = 0;
  const keel::kernel_kind kind{"soak_group"};
  // expected[0]: the version a replay must see (written only between
  // synchronized points, read by tasks after them).
  auto expected = std::make_unique<int>(0);
  host::concurrent_update fenced{dev};
  host::event replayed{dev};  // recorded on s after each execution
  host::task_group group;
  host::model model;
  {
    // While a stream marks a task group, no other capturing stream of the
    // device may issue work (a device-wide rule, as on the device): the
    // workers capture their models one at a time.
    static std::mutex one_marking_at_a_time;
    std::lock_guard<std::mutex> marking(one_marking_at_a_time);
    host::capture_scope capture{s, keel::capture_mode::thread_local_};
    fenced.fence(s);
    host::task_group_scope mark{s};
    s.launch(kind, group_kernel{}, &l, 0, expected.get());
    s.launch(kind, group_kernel{}, &l, 0, expected.get());
    group = mark.end();
    model = capture.end();
  }
  int version = 0;
  try {
    while (clock_type::now() < until) {
      const int what = static_cast<int>(rng() % 100);
      if (what < 60) {
        const int n = 1 + static_cast<int>(rng() % 64);
        for (int i = 0; i < n; ++i) s.launch_host([&l, q = seq++] { eager_task(&l, q); });
        issued += static_cast<std::uint64_t>(n);
      } else if (what < 75) {
        // An external event is signalled, not counted: the release for this
        // execution must come after the previous execution reset the event,
        // so the update stream first waits for that execution.
        side.wait(replayed);
        fenced.release(side);
        model.execute(s);
        replayed.record(s);
        issued += 2;
        ++stats.replays;
      } else if (what < 82) {
        // Sequential update on the stream itself: the next replay sees it.
        s.synchronize();
        *expected = ++version;
        {
          host::update_scope update{s, group};
          s.launch(kind, group_kernel{}, &l, version, expected.get());
          s.launch(kind, group_kernel{}, &l, version, expected.get());
          update.end();
        }
        ++stats.updates;
      } else if (what < 87) {
        // Concurrent update: the replay waits at the fence until the update
        // stream recorded the event after issuing the replacement.
        s.synchronize();
        *expected = ++version;
        side.wait(replayed);  // the execution before this one has passed the fence
        model.execute(s);
        fenced.update(side, group, [&](host::stream_ref u) {
          u.launch(kind, group_kernel{}, &l, version, expected.get());
          u.launch(kind, group_kernel{}, &l, version, expected.get());
        });
        replayed.record(s);
        issued += 2;
        ++stats.replays;
        ++stats.concurrent_updates;
      } else if (what < 92) {
        // Cross-stream order through the other workers' events.
        auto& e = events[static_cast<std::size_t>(id)];
        e.record(s);
        s.wait(events[(static_cast<std::size_t>(id) + 1) % events.size()]);
      } else if (what < 95) {
        s.synchronize();
        ++stats.failures_provoked;
        s.launch_host([] { throw std::runtime_error("soak: provoked failure"); });
        try {
          s.synchronize();
        } catch (const keel::error& e) {
          if (e.code() == keel::errc::task_failed) ++stats.failures_seen;
        }
      } else if (what < 98) {
        ++stats.oom_provoked;
        try {
          host::device_buffer big{s, dev.memory_limit() + 1};
        } catch (const keel::error& e) {
          if (e.code() == keel::errc::out_of_memory) ++stats.oom_seen;
        }
        host::device_buffer small{s, 64};  // still fine
      } else if (what < 99) {
        // Pool memory reused in stream order: each allocation is filled by
        // the stream and checked by it before its release; nobody else may
        // see the bytes change in between.
        const std::size_t bytes = 64 + rng() % 4000;
        const auto v = static_cast<unsigned char>(rng());
        auto a = shared_pool->allocate(s, bytes);
        auto* p = a.data_as<unsigned char>();
        s.launch_host([p, bytes, v] { std::fill(p, p + bytes, v); });
        s.launch_host([p, bytes, v] { check_fill(p, bytes, v); });
        ++stats.pool_allocations;
      } else {
        s.synchronize();
      }
    }
    s.synchronize();
    side.synchronize();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "soak: runtime worker %d: unexpected %s\n", id, e.what());
    ++stats.unexpected;
    side.wait(replayed);
    fenced.release(side);  // let a waiting execution finish before the streams close
    s.synchronize();
    return;
  }
  stats.tasks_issued += issued;
  if (l.ran != issued) ++(l.ran < issued ? stats.lost : stats.duplicated);
  if (l.next_seq != seq) ++stats.lost;
}

void plugin_worker(int id, clock_type::time_point until, const std::string& not_a_library) {
  auto& loader = keel::library_loader::global();
  std::mt19937 rng(static_cast<unsigned>(id) * 104729u + 3);
  // One pass plugin for every thread: two plugins that register the same
  // names cannot be loaded at once (a documented clash).
  const std::string path = KEEL_TEST_PASSES_PATH;
  while (clock_type::now() < until) {
    const int what = static_cast<int>(rng() % 100);
    if (what < 90) {
      keel::library_lease lease = loader.acquire(path);
      ++stats.leases;
      for (int i = 0; i < 8; ++i) {
        keel_test::graph g;
        g.value = 1;
        keel_test::passes().run("fold_constants", g);
        keel_test::passes().run("eliminate_dead_code", g);
        if (g.value != 3) ++stats.unexpected;
        ++stats.pass_runs;
      }
      lease.release();
      ++stats.releases;
    } else {
      ++stats.load_errors_provoked;
      // Several threads at once: a failed first load erases the library's
      // record while others wait on it (the use-after-free this soak found).
      try {
        (void)loader.acquire(what < 95 ? not_a_library : std::string(KEEL_TEST_INIT_FAILS_PATH));
      } catch (const keel::error& e) {
        if (e.code() == keel::errc::library_load_failed) ++stats.load_errors_seen;
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 5;
  int n_runtime = 3, n_plugin = 2;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--no-plugins") n_plugin = 0;
    if (std::string(argv[i]) == "--no-runtime") n_runtime = 0;
    if (i + 1 >= argc) break;
    if (std::string(argv[i]) == "--minutes") seconds = 60 * std::strtod(argv[i + 1], nullptr);
    if (std::string(argv[i]) == "--seconds") seconds = std::strtod(argv[i + 1], nullptr);
  }
  const auto start = clock_type::now();
  const auto until = start + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
  keel_test::events().init_throws = true;  // the init_fails plugin throws: a provoked load error
  const std::string not_a_library =
      (std::filesystem::temp_directory_path() / ("keel_soak_" + std::to_string(::getpid()) + ".so")).string();
  std::ofstream(not_a_library) << "not a library\n";
  {
    host::device dev{host::device_options{2, 64, 16, 1 << 20}};
    keel::pool_options pool_options("soak");
    pool_options.max_size = 256 << 10;
    host::memory_pool pool{dev, pool_options};
    shared_pool = &pool;
    std::vector<host::event> events;
    for (int i = 0; i < n_runtime; ++i) events.emplace_back(dev);
    std::vector<std::thread> threads;
    for (int i = 0; i < n_runtime; ++i) threads.emplace_back(runtime_worker, std::ref(dev), i, until, std::ref(events));
    for (int i = 0; i < n_plugin; ++i) threads.emplace_back(plugin_worker, i, until, not_a_library);
    for (auto& t : threads) t.join();
    const keel::pool_statistics ps = pool.statistics();
    std::printf("  pool: %llu allocations (%llu counted), %llu hits, high-water %zu bytes reserved; %zu in use at the end\n",
                (unsigned long long)ps.allocations, (unsigned long long)stats.pool_allocations,
                (unsigned long long)ps.hits, ps.reserved_high, ps.used);
    if (ps.used != 0 || ps.allocations != stats.pool_allocations) ++stats.unexpected;
    shared_pool = nullptr;
  }
  std::filesystem::remove(not_a_library);
  const double took = std::chrono::duration<double>(clock_type::now() - start).count();
  std::printf("keel soak: %.1f s\n", took);
  std::printf("  runtime: %llu tasks issued, %llu run; %llu model replays, %llu group updates (%llu concurrent)\n",
              (unsigned long long)stats.tasks_issued, (unsigned long long)stats.tasks_run,
              (unsigned long long)stats.replays, (unsigned long long)stats.updates,
              (unsigned long long)stats.concurrent_updates);
  std::printf("  runtime errors: %llu task failures provoked, %llu seen; %llu allocation failures provoked, %llu seen\n",
              (unsigned long long)stats.failures_provoked, (unsigned long long)stats.failures_seen,
              (unsigned long long)stats.oom_provoked, (unsigned long long)stats.oom_seen);
  std::printf("  plugins: %llu leases, %llu releases, %llu pass runs; %llu load errors provoked, %llu seen\n",
              (unsigned long long)stats.leases, (unsigned long long)stats.releases, (unsigned long long)stats.pass_runs,
              (unsigned long long)stats.load_errors_provoked, (unsigned long long)stats.load_errors_seen);
  std::printf("  pool bytes changed under their owner: %llu\n", (unsigned long long)stats.pool_bad_bytes);
  std::printf("  lost %llu, duplicated %llu, reordered %llu, stale group versions %llu, unexpected %llu\n",
              (unsigned long long)stats.lost, (unsigned long long)stats.duplicated,
              (unsigned long long)stats.reordered, (unsigned long long)stats.stale_group,
              (unsigned long long)stats.unexpected);
  const bool ok = stats.pool_bad_bytes == 0 && stats.lost == 0 && stats.duplicated == 0 && stats.reordered == 0 && stats.stale_group == 0 &&
                  stats.unexpected == 0 && stats.failures_seen == stats.failures_provoked &&
                  stats.oom_seen == stats.oom_provoked && stats.load_errors_seen == stats.load_errors_provoked &&
                  stats.tasks_run == stats.tasks_issued && stats.leases == stats.releases;
  std::printf("keel soak: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
