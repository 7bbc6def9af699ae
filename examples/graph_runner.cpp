// SPDX-License-Identifier: Apache-2.0
// The pattern the Ascend LLM runners use, on keel: one captured model per
// batch size (8, 4, 2, 1), all captured into ONE shared memory pool, so the
// temporaries each capture releases are reused by the next capture (the
// models never run concurrently: they take turns on one stream). Each step
// picks a batch size, replays its model and, concurrently, updates the
// model's scale operator through its fenced model (keel::host::fenced_model:
// the execution waits at the fence for apply(), and a second signal before
// an execution took the first is refused, never a hang); the pool's
// statistics show the sharing. The runners are plain values in a vector.
#include <cstdio>
#include <iterator>
#include <vector>

#include "keel/host/host.hpp"
#include "keel/host/memory_pool.hpp"

namespace {

constexpr keel::kernel_kind scale_kind{"scale"};
constexpr keel::kernel_kind add_kind{"add"};
constexpr keel::kernel_kind finish_kind{"finish"};
constexpr std::size_t width = 1024;  // floats per batch row
constexpr std::size_t max_batch = 8;

void scale(keel::host::launch_context&, float* dst, const float* src, std::size_t n, float alpha) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = alpha * src[i];
}
void add(keel::host::launch_context&, float* dst, const float* a, const float* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = a[i] + b[i];
}
void finish(keel::host::launch_context&, float* dst, const float* src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = src[i] + 1.0f;
}

// One batch size's model: its inputs and outputs live outside the capture
// (the runner fills and reads them); the temporaries are the model's. The
// fenced model owns the model, the scale group and its fence.
struct runner {
  explicit runner(keel::host::device& dev) : fenced(dev) {}
  std::size_t batch = 0;
  keel::host::pool_buffer x, out;
  float* h = nullptr;  // the scaled input, a temporary the model owns
  keel::host::fenced_model fenced;
};

void print_statistics(const char* when, const keel::host::memory_pool& pool) {
  const keel::pool_statistics st = pool.statistics();
  std::printf("%s: reserved %zu bytes (high %zu), used %zu bytes (high %zu), %llu allocations, %llu hits, %llu backend "
              "allocations\n",
              when, st.reserved, st.reserved_high, st.used, st.used_high,
              static_cast<unsigned long long>(st.allocations), static_cast<unsigned long long>(st.hits),
              static_cast<unsigned long long>(st.backend_allocations));
}

}  // namespace

int main() {
  keel::host::device dev;
  keel::host::stream main_stream{dev}, update_stream{dev};
  keel::host::memory_pool pool{dev, {"graph pool"}};

  std::vector<runner> runners;
  for (int i = 0; i < 4; ++i) runners.emplace_back(dev);
  std::size_t batch = max_batch;
  for (runner& r : runners) {
    r.batch = batch;
    const std::size_t n = batch * width;
    r.x = pool.allocate(main_stream, n * sizeof(float));
    r.out = pool.allocate(main_stream, n * sizeof(float));
    // Pool memory is stream-ordered: the host touches it once the stream
    // has passed what the allocation may wait for (another stream's release).
    r.x.wait_for_host();
    for (std::size_t i = 0; i < n; ++i) r.x.data_as<float>()[i] = 1.0f;
    {
      keel::host::capture_scope capture{main_stream, pool};
      // The temporaries: the model owns them; released here, inside the
      // capture, they are free for the next capture into the same pool.
      auto scratch = pool.allocate(main_stream, max_batch * width * sizeof(float));
      auto h = pool.allocate(main_stream, n * sizeof(float));
      r.h = h.data_as<float>();
      // Fence 0: the execution waits for apply(), then runs the scale group.
      r.fenced.fenced_update(main_stream, 0, [&](keel::host::stream_ref c) {
        c.launch(scale_kind, &scale, r.h, r.x.data_as<const float>(), n, 1.0f);
      });
      main_stream.launch(add_kind, &add, scratch.data_as<float>(), r.h, r.x.data_as<const float>(), n);
      main_stream.launch(finish_kind, &finish, r.out.data_as<float>(), scratch.data_as<const float>(), n);
      scratch.reset();
      h.reset();
      r.fenced.adopt(capture.end());
    }
    batch /= 2;
  }
  std::printf("captured %zu models (batch 8, 4, 2, 1) into pool '%s'\n", runners.size(), pool.name().c_str());
  print_statistics("after capture", pool);

  const std::size_t order[] = {3, 2, 1, 0, 0, 1, 2, 3};  // batch 1, 2, 4, 8, 8, 4, 2, 1
  for (std::size_t step = 0; step < std::size(order); ++step) {
    runner& r = runners[order[step]];
    const float alpha = 1.0f + 0.5f * static_cast<float>(step);
    const std::size_t n = r.batch * width;
    r.fenced.execute(main_stream);  // waits at the fence for the update below
    r.fenced.stage(0, 0, [h = r.h, x = r.x.data_as<const float>(), n, alpha](keel::host::stream_ref u) {
      u.launch(scale_kind, &scale, h, x, n, alpha);
    });
    // On the update stream, after the model's previous execution ended: no
    // synchronize is needed for the fence (this one is for reading out).
    r.fenced.apply(update_stream);
    main_stream.synchronize();
    const float* out = r.out.data_as<const float>();
    std::printf("step %zu: batch %zu, alpha %.1f: out[0] = %.1f, out[%zu] = %.1f\n", step, r.batch,
                static_cast<double>(alpha), static_cast<double>(out[0]), n - 1, static_cast<double>(out[n - 1]));
  }
  print_statistics("after the steps", pool);

  std::size_t temporaries = 0;
  for (const runner& r : runners) temporaries += keel::pool_size_class(max_batch * width * sizeof(float)) +
                                                 keel::pool_size_class(r.batch * width * sizeof(float));
  std::size_t io = 0;
  for (const runner& r : runners) io += 2 * keel::pool_size_class(r.batch * width * sizeof(float));
  std::printf("the models' temporaries: %zu bytes if each had its own; the pool holds %zu bytes for them\n",
              temporaries, pool.statistics().reserved - io);

  runners.clear();  // the fenced models (and their models) and the buffers
  main_stream.synchronize();
  print_statistics("after the models went", pool);
  pool.trim_to(0);
  print_statistics("after trim_to(0)", pool);
  return 0;
}
