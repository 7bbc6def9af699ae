// SPDX-License-Identifier: Apache-2.0
// Runtime benchmarks: the host backend's stream hand-off, model replay, group
// update and cross-stream events, each beside the baseline the issue names.
#include <benchmark/benchmark.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "keel/runtime.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace {

constexpr int tiny_tasks = 1000;

// What a task writes lives on a cache line of its own, as a kernel's device
// memory does, for keel and for the baselines alike. On the launching
// thread's stack it shared a line with that thread's locals, and each
// task's write pulled the line away from the thread issuing the next task:
// a cost of where the benchmark kept its counter, not of the hand-off.
template <class T>
struct alignas(64) own_line {
  T value{};
};

// The first baseline of the issue (informational now: its cost follows the
// kernel's futex path, see spsc_ring): std::mutex + condition_variable +
// std::function queue, drained by one thread, notify per push.
class cv_queue {
 public:
  cv_queue() : worker_([this] { run(); }) {}
  ~cv_queue() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_one();
    worker_.join();
  }
  void push(std::function<void()> f) {
    {
      std::lock_guard<std::mutex> lock(m_);
      q_.push_back(std::move(f));
      ++pushed_;
    }
    cv_.notify_one();
  }
  void drain() {
    std::unique_lock<std::mutex> lock(m_);
    done_cv_.wait(lock, [&] { return done_ == pushed_; });
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !q_.empty(); });
      if (q_.empty()) return;
      auto f = std::move(q_.front());
      q_.pop_front();
      lock.unlock();
      f();
      lock.lock();
      if (++done_ == pushed_) done_cv_.notify_all();
    }
  }
  std::mutex m_;
  std::condition_variable cv_, done_cv_;
  std::deque<std::function<void()>> q_;
  std::uint64_t pushed_ = 0, done_ = 0;
  bool stop_ = false;
  std::thread worker_;
};

// The baseline a performance engineer writes by hand for one producer and
// one consumer: a bounded ring of plain tasks (a function pointer and its
// argument: no std::function, no allocation), one cache line per slot
// holding the task and its sequence number, the only synchronisation
// (Vyukov's bounded-queue scheme: the consumer's one miss on a slot brings
// it the flag and the task together), and a consumer that spins (yielding now and then)
// instead of sleeping. Its cost does not move with the kernel's futex path, as the
// mutex + condition variable queue's does. (A ring with shared head and tail
// indices, each side caching the other's, is slower on tiny tasks: the
// consumer, always caught up on tiny tasks, misses on the index line and
// then on the slot line.)
class spsc_ring {
 public:
  using task_fn = void (*)(void*);

  spsc_ring() {
    for (std::size_t i = 0; i < capacity; ++i) slots_[i].sequence.store(i, std::memory_order_relaxed);
    worker_ = std::thread([this] { run(); });
  }
  ~spsc_ring() {
    stop_.store(true, std::memory_order_release);
    worker_.join();
  }
  spsc_ring(const spsc_ring&) = delete;
  spsc_ring& operator=(const spsc_ring&) = delete;

  void push(task_fn fn, void* arg) {
    slot& s = slots_[head_ % capacity];
    unsigned spins = 0;
    while (s.sequence.load(std::memory_order_acquire) != head_) relax(spins);  // full: the consumer is a lap behind
    s.fn = fn;
    s.arg = arg;
    s.sequence.store(head_ + 1, std::memory_order_release);
    ++head_;
  }
  void drain() {
    unsigned spins = 0;
    while (done_.load(std::memory_order_acquire) != head_) relax(spins);
  }

 private:
  static constexpr std::size_t capacity = 1024;
  struct alignas(64) slot {
    std::atomic<std::uint64_t> sequence{0};  // == position: empty for it; == position + 1: holds its task
    task_fn fn = nullptr;
    void* arg = nullptr;
  };
  // One step of a spin: a pause, and every 64 steps a yield, so that on a
  // machine with more busy threads than cores a descheduled peer gets the
  // core back instead of the spinner burning its whole time slice.
  static void relax(unsigned& spins) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
    if (++spins % 64 == 0) std::this_thread::yield();
  }
  void run() {
    std::uint64_t tail = 0;
    for (;;) {
      slot& s = slots_[tail % capacity];
      unsigned spins = 0;
      while (s.sequence.load(std::memory_order_acquire) != tail + 1) {
        if (stop_.load(std::memory_order_acquire)) return;
        relax(spins);
      }
      s.fn(s.arg);
      s.sequence.store(tail + capacity, std::memory_order_release);  // empty for the producer's next lap
      done_.store(++tail, std::memory_order_release);
    }
  }
  slot slots_[capacity];
  alignas(64) std::uint64_t head_ = 0;  // the producer's alone
  alignas(64) std::atomic<std::uint64_t> done_{0};
  alignas(64) std::atomic<bool> stop_{false};
  std::thread worker_;
};

void increment(void* counter) { ++*static_cast<std::uint64_t*>(counter); }

void BM_spsc_ring_baseline_tiny(benchmark::State& state) {
  spsc_ring ring;
  auto counter_line = std::make_unique<own_line<std::uint64_t>>();
  std::uint64_t& counter = counter_line->value;
  for (auto _ : state) {
    for (int i = 0; i < tiny_tasks; ++i) ring.push(&increment, &counter);
    ring.drain();
  }
  benchmark::DoNotOptimize(counter);
  state.SetItemsProcessed(state.iterations() * tiny_tasks);
  state.counters["ns_per_task"] = benchmark::Counter(static_cast<double>(state.iterations() * tiny_tasks),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_spsc_ring_baseline_tiny)->UseRealTime();

void BM_queue_baseline_tiny(benchmark::State& state) {
  cv_queue q;
  auto counter_line = std::make_unique<own_line<std::uint64_t>>();
  std::uint64_t& counter = counter_line->value;
  for (auto _ : state) {
    for (int i = 0; i < tiny_tasks; ++i) q.push([&counter] { ++counter; });
    q.drain();
  }
  benchmark::DoNotOptimize(counter);
  state.SetItemsProcessed(state.iterations() * tiny_tasks);
  state.counters["ns_per_task"] = benchmark::Counter(static_cast<double>(state.iterations() * tiny_tasks),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_queue_baseline_tiny)->UseRealTime();

void BM_queue_baseline_roundtrip(benchmark::State& state) {
  cv_queue q;
  auto counter_line = std::make_unique<own_line<std::uint64_t>>();
  std::uint64_t& counter = counter_line->value;
  for (auto _ : state) {
    q.push([&counter] { ++counter; });
    q.drain();
  }
  benchmark::DoNotOptimize(counter);
}
BENCHMARK(BM_queue_baseline_roundtrip)->UseRealTime();

void BM_stream_eager_tiny(benchmark::State& state) {
  keel::host::stream s{keel::host::default_device()};
  auto counter_line = std::make_unique<own_line<std::uint64_t>>();
  std::uint64_t& counter = counter_line->value;
  for (auto _ : state) {
    for (int i = 0; i < tiny_tasks; ++i) s.launch_host([&counter] { ++counter; });
    s.synchronize();
  }
  benchmark::DoNotOptimize(counter);
  state.SetItemsProcessed(state.iterations() * tiny_tasks);
  state.counters["ns_per_task"] = benchmark::Counter(static_cast<double>(state.iterations() * tiny_tasks),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_stream_eager_tiny)->UseRealTime();

// BM_stream_eager_tiny's task (8 bytes: a pointer) with its slot's next word
// left unwritten (host::detail::widens_small_task specialised false below):
// the pair shows what that store buys.
struct unwidened_increment {
  std::uint64_t* counter;
  void operator()() const noexcept { ++*counter; }
};

}  // namespace

KEEL_BEGIN_NAMESPACE namespace host::detail {
template <>
struct widens_small_task<unwidened_increment> : std::false_type {};
} KEEL_END_NAMESPACE

namespace {

void BM_unwidened_eager_tiny(benchmark::State& state) {
  keel::host::stream s{keel::host::default_device()};
  auto counter_line = std::make_unique<own_line<std::uint64_t>>();
  std::uint64_t& counter = counter_line->value;
  for (auto _ : state) {
    for (int i = 0; i < tiny_tasks; ++i) s.launch_host(unwidened_increment{&counter});
    s.synchronize();
  }
  benchmark::DoNotOptimize(counter);
  state.SetItemsProcessed(state.iterations() * tiny_tasks);
  state.counters["ns_per_task"] = benchmark::Counter(static_cast<double>(state.iterations() * tiny_tasks),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_unwidened_eager_tiny)->UseRealTime();

// BM_stream_eager_tiny on a stream whose worker does not write each slot
// back after running it (host::detail::workers_write_slots_back, read when
// the worker starts): the pair shows what that store buys.
void BM_eager_tiny_no_write_back(benchmark::State& state) {
  keel::host::detail::workers_write_slots_back.store(false);
  keel::host::stream s{keel::host::default_device()};
  keel::host::detail::workers_write_slots_back.store(true);
  auto counter_line = std::make_unique<own_line<std::uint64_t>>();
  std::uint64_t& counter = counter_line->value;
  for (auto _ : state) {
    for (int i = 0; i < tiny_tasks; ++i) s.launch_host([&counter] { ++counter; });
    s.synchronize();
  }
  benchmark::DoNotOptimize(counter);
  state.SetItemsProcessed(state.iterations() * tiny_tasks);
  state.counters["ns_per_task"] = benchmark::Counter(static_cast<double>(state.iterations() * tiny_tasks),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_eager_tiny_no_write_back)->UseRealTime();

void BM_stream_roundtrip(benchmark::State& state) {
  keel::host::stream s{keel::host::default_device()};
  auto counter_line = std::make_unique<own_line<std::uint64_t>>();
  std::uint64_t& counter = counter_line->value;
  for (auto _ : state) {
    s.launch_host([&counter] { ++counter; });
    s.synchronize();
  }
  benchmark::DoNotOptimize(counter);
}
BENCHMARK(BM_stream_roundtrip)->UseRealTime();

void BM_function_loop_tiny(benchmark::State& state) {
  auto counter_line = std::make_unique<own_line<std::uint64_t>>();
  std::uint64_t& counter = counter_line->value;
  std::vector<std::function<void()>> fns;
  for (int i = 0; i < tiny_tasks; ++i) fns.emplace_back([&counter] { ++counter; });
  for (auto _ : state) {
    for (auto& f : fns) f();
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(counter);
  state.SetItemsProcessed(state.iterations() * tiny_tasks);
  state.counters["ns_per_task"] = benchmark::Counter(static_cast<double>(state.iterations() * tiny_tasks),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_function_loop_tiny)->UseRealTime();

void BM_model_replay_tiny(benchmark::State& state) {
  keel::host::stream s{keel::host::default_device()};
  auto counter_line = std::make_unique<own_line<std::uint64_t>>();
  std::uint64_t& counter = counter_line->value;
  keel::host::model m;
  {
    keel::host::capture_scope capture{s};
    for (int i = 0; i < tiny_tasks; ++i) s.launch_host([&counter] { ++counter; });
    m = capture.end();
  }
  for (auto _ : state) {
    m.execute(s);
    s.synchronize();
  }
  benchmark::DoNotOptimize(counter);
  state.SetItemsProcessed(state.iterations() * tiny_tasks);
  state.counters["ns_per_task"] = benchmark::Counter(static_cast<double>(state.iterations() * tiny_tasks),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_model_replay_tiny)->UseRealTime();

void scale_kernel(keel::host::launch_context&, float* x, float alpha) { *x *= alpha; }
constexpr int batch = 100;

// `batch` eager kernel launches and one synchronize per iteration;
// launch(stream, x) issues one, so the two launch paths below differ in that
// call alone.
template <class Launch>
void eager_launches(benchmark::State& state, Launch launch) {
  keel::host::stream s{keel::host::default_device()};
  auto x_line = std::make_unique<own_line<float>>();
  float& x = x_line->value;
  x = 1;
  for (auto _ : state) {
    for (int i = 0; i < batch; ++i) launch(s, &x);
    s.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * batch);
  state.counters["ns_per_op"] = benchmark::Counter(static_cast<double>(state.iterations() * batch),
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// One eager kernel launch (the yardstick for a group update).
void BM_stream_eager_launch(benchmark::State& state) {
  eager_launches(state, [](keel::host::stream& s, float* x) {
    s.launch(keel::kernel_kind{"scale"}, &scale_kernel, x, 1.0f);
  });
}
BENCHMARK(BM_stream_eager_launch)->UseRealTime();

// The same launch through the host backend's native call, below the checked
// layer (no capture, update or handle check): what keel's own launch would
// cost without its rules, the baseline of their price on the eager path.
void BM_native_eager_launch(benchmark::State& state) {
  using kernel = keel::detail::bound_kernel<void (*)(keel::host::launch_context&, float*, float), float*, float>;
  eager_launches(state, [](keel::host::stream& s, float* x) {
    keel::host::detail::stream_calls::launch_kernel(s.native_handle(), keel::kernel_kind{"scale"},
                                                    kernel{&scale_kernel, {x, 1.0f}});
  });
}
BENCHMARK(BM_native_eager_launch)->UseRealTime();

// Replace a one-task group on an update stream (begin, launch, end: checked
// and committed in stream order). The update stream is idle between updates,
// so each swap takes effect in end() (see backend::update_end).
void BM_group_update(benchmark::State& state) {
  auto& dev = keel::host::default_device();
  keel::host::stream s{dev};
  keel::host::stream u{dev};
  auto x_line = std::make_unique<own_line<float>>();
  float& x = x_line->value;
  x = 1;
  keel::host::model m;
  keel::host::task_group g;
  {
    keel::host::capture_scope capture{s};
    keel::host::task_group_scope mark{s};
    s.launch(keel::kernel_kind{"scale"}, &scale_kernel, &x, 1.0f);
    g = mark.end();
    m = capture.end();
  }
  for (auto _ : state) {
    for (int i = 0; i < batch; ++i) {
      keel::host::update_scope update{u, g};
      u.launch(keel::kernel_kind{"scale"}, &scale_kernel, &x, 1.0f);
      update.end();
    }
    u.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * batch);
  state.counters["ns_per_op"] = benchmark::Counter(static_cast<double>(state.iterations() * batch),
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_group_update)->UseRealTime();

// Record on one stream, wait on another, per pair (the waiting stream runs
// a tiny task after each wait).
void BM_event_cross_stream(benchmark::State& state) {
  auto& dev = keel::host::default_device();
  keel::host::stream a{dev};
  keel::host::stream b{dev};
  keel::host::event e{dev};
  auto counter_line = std::make_unique<own_line<std::uint64_t>>();
  std::uint64_t& counter = counter_line->value;
  for (auto _ : state) {
    for (int i = 0; i < batch; ++i) {
      a.launch_host([&counter] { ++counter; });
      e.record(a);
      b.wait(e);
    }
    b.synchronize();
  }
  benchmark::DoNotOptimize(counter);
  state.SetItemsProcessed(state.iterations() * batch);
  state.counters["ns_per_op"] = benchmark::Counter(static_cast<double>(state.iterations() * batch),
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_event_cross_stream)->UseRealTime();

}  // namespace

KEEL_BENCH_COMPARE("BM_stream_eager_tiny", "BM_spsc_ring_baseline_tiny", ">= 0.8 of a spinning SPSC ring's throughput");
KEEL_BENCH_COMPARE("BM_stream_eager_tiny", "BM_unwidened_eager_tiny",
                   "(report: what writing a small task's second word buys; above 1 while it helps)");
KEEL_BENCH_COMPARE("BM_stream_eager_tiny", "BM_eager_tiny_no_write_back",
                   "(report: what the worker's write-back of each slot buys; above 1 while it helps)");
KEEL_BENCH_COMPARE("BM_stream_eager_tiny", "BM_queue_baseline_tiny", "(informational: mutex + condvar + std::function)");
KEEL_BENCH_COMPARE("BM_stream_roundtrip", "BM_queue_baseline_roundtrip", "round trip (informational)");
KEEL_BENCH_COMPARE("BM_stream_eager_launch", "BM_native_eager_launch",
                   ">= 0.8 (the checked layer adds at most a quarter to an eager launch)");
KEEL_BENCH_COMPARE("BM_model_replay_tiny", "BM_stream_eager_tiny", ">= 10x faster per task than eager");
KEEL_BENCH_COMPARE("BM_model_replay_tiny", "BM_function_loop_tiny", ">= 0.33 (within 3x of the loop)");
// Per iteration: both run `batch` operations and one synchronize, so the ratio is per operation.
KEEL_BENCH_COMPARE("BM_group_update", "BM_stream_eager_launch", ">= 1 (no more than one eager launch)");
KEEL_BENCH_COMPARE("BM_event_cross_stream", "BM_queue_baseline_roundtrip", "informational");
