// RaiseOpenFiles: lets a test that holds hundreds of sockets open raise this process's
// open-files soft limit (never above the hard limit, never lowering it) and learn what it
// got, so that it can size itself to the machine. Processes the test starts afterwards (a
// daemon) inherit the raised limit. Header-only.
#pragma once

#include <sys/resource.h>

#include <algorithm>

namespace gpuscale::testing {

// Raises the soft limit toward `wanted`; returns the soft limit now in force.
inline rlim_t RaiseOpenFiles(rlim_t wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < wanted) {
    limit.rlim_cur = std::min(wanted, limit.rlim_max);
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur;
}

}  // namespace gpuscale::testing
