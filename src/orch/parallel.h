// ParallelFor: runs work(0) ... work(n - 1) on up to `max_threads` threads and returns when
// all are done. For blocking network calls that must not add up (probes of many replicas,
// probes of many services); `work` must be safe to run concurrently for distinct indexes.
// One index runs on the calling thread, without starting any.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace gpuscale::orch {

template <typename Work>
void ParallelFor(size_t n, size_t max_threads, const Work& work) {
  if (n == 0) return;
  if (n == 1 || max_threads <= 1) {
    for (size_t i = 0; i < n; ++i) work(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  const size_t count = std::min(n, max_threads);
  threads.reserve(count);
  for (size_t t = 0; t < count; ++t) {
    threads.emplace_back([&] {
      for (size_t i = next++; i < n; i = next++) work(i);
    });
  }
  for (std::thread& thread : threads) thread.join();
}

}  // namespace gpuscale::orch
