// Time as a parameter (docs/architecture.md): the pure core never reads the clock itself; it
// is handed `Seconds now` or a `Clock&`. Live code uses SystemClock (seconds since the Unix
// epoch); tests and the simulator use ManualClock (starts wherever you set it, usually 0).
//
// Thread-safety: SystemClock is stateless. ManualClock is safe to read and advance from
// several threads (an atomic), which monitor/allocator tests rely on.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

namespace gpuscale {

// Durations and time points are seconds as double: sub-microsecond resolution for the
// simulator's virtual time and ~100 ns at today's Unix time, enough for a control plane.
using Seconds = std::chrono::duration<double>;

class Clock {
 public:
  virtual ~Clock() = default;
  // Seconds since this clock's epoch.
  virtual Seconds Now() const = 0;
};

class SystemClock final : public Clock {
 public:
  Seconds Now() const override;
  static SystemClock& Instance();
};

class ManualClock final : public Clock {
 public:
  explicit ManualClock(Seconds start = Seconds{0}) : now_(start.count()) {}
  Seconds Now() const override { return Seconds{now_.load()}; }
  void Set(Seconds t) { now_.store(t.count()); }
  void Advance(Seconds d) {
    double cur = now_.load();
    while (!now_.compare_exchange_weak(cur, cur + d.count())) {
    }
  }

 private:
  std::atomic<double> now_;
};

// RFC 3339 UTC text ("2026-11-22T22:00:24.123Z") of a Unix-epoch time.
std::string FormatRfc3339(Seconds unix_time);

}  // namespace gpuscale
