// MemoryTrim: hands the memory glibc's malloc keeps after frees back to the kernel, once a
// minute. At fleet scale a tick frees megabytes on several threads (scrape buffers on the
// collector's workers, the 1.7 MB `GET /v1/services` bodies on API threads), and malloc keeps
// them in per-thread arenas, so RSS rose in ~8 MB steps over the 1-hour run while the live
// heap (heaptrack) stayed flat. malloc_trim(0) returns the free pages of every arena
// (madvise), which costs a few milliseconds; once a minute keeps RSS near the live heap
// without touching the tick's allocation pattern. A no-op where the C library is not glibc.
//
// Thread-safety: thread-compatible (the control loop's thread).
#pragma once

#include "core/clock.h"

namespace gpuscale::daemon {

class MemoryTrim {
 public:
  static constexpr Seconds kInterval{60};

  // Trims when due at `now`: at the first call, then every kInterval. Returns whether it ran.
  bool Run(Seconds now);

 private:
  Seconds next_{-1};  // <0: at the first call
};

}  // namespace gpuscale::daemon
