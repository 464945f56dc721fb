// Runs a program as an argv vector (posix_spawnp: no shell, so no quoting or injection
// concerns), captures its stdout and stderr, and kills it when it overruns a timeout. Used
// by the nvidia-smi backend; the tool is looked up on the caller's PATH.
//
// The child runs in its own process group, and on timeout the whole group is killed, so a
// wrapper script's children do not outlive the call.
//
// Thread-safety: RunProcess is reentrant (no shared state besides the process table).
#pragma once

#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace gpuscale::gpu {

struct ProcessOutput {
  int exit_code = 0;        // exit status; 128 + signal when killed by a signal
  std::string stdout_text;  // at most kMaxProcessOutputBytes
  std::string stderr_text;
};

inline constexpr size_t kMaxProcessOutputBytes = 4 << 20;

// REQUIRES: argv non-empty. Errors: kUnavailable when argv[0] cannot be started (not found,
// not executable) or ran past `timeout` (it is killed); kInternal for pipe/poll failures.
// A non-zero exit is not an error here: the caller decides what it means.
Result<ProcessOutput> RunProcess(const std::vector<std::string>& argv, Seconds timeout);

}  // namespace gpuscale::gpu
