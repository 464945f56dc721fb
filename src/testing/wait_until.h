// WaitUntil: the one place tests wait in real time for something another party makes true.
//
// Tests of pure code use fake clocks (core/clock.h) and never wait. Tests of servers, child
// processes and worker threads cannot: the other side runs on the kernel's clock (a socket's
// buffers, a process's exit, a thread's schedule), so they poll the observable result with a
// bound instead of sleeping a fixed time and hoping it sufficed. A timeout is a test failure,
// never a pass: callers assert on the returned value.
#pragma once

#include <chrono>
#include <thread>
#include <utility>

namespace gpuscale::testing {

// Polls `done` every `step` until it tests true (returns true) or `timeout` passes (returns
// false). `done` is called at least once, and once more at the deadline, so a condition that
// holds by then is never reported as a timeout. Anything that tests as a bool will do (an
// optional exit status, a pointer).
template <typename Predicate>
bool WaitUntil(Predicate&& done, std::chrono::milliseconds timeout = std::chrono::seconds(10),
               std::chrono::milliseconds step = std::chrono::milliseconds(2)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!static_cast<bool>(done())) {
    if (std::chrono::steady_clock::now() >= deadline) return static_cast<bool>(done());
    std::this_thread::sleep_for(step);
  }
  return true;
}

}  // namespace gpuscale::testing
