#include "daemon/memory_trim.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace gpuscale::daemon {

bool MemoryTrim::Run(Seconds now) {
  // A clock stepped back past the last run restarts the schedule instead of pausing it.
  const bool stepped_back = now < next_ - kInterval;
  if (next_.count() >= 0 && now < next_ && !stepped_back) return false;
  next_ = now + kInterval;
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  return true;
}

}  // namespace gpuscale::daemon
