// The batch script of a Slurm replica: exports the service's environment and execs the
// replica's argv, every argument single-quoted so that no user text is interpreted by the
// shell (spaces, quotes, '$', ';' reach the program unchanged). The one exception is the
// {gpus} placeholder, which becomes "${SLURM_JOB_GPUS}" (the GPU indices Slurm picked for the
// job, known only on the node).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace gpuscale::orch {

struct SlurmJobScript {
  std::string text;               // "#!/bin/sh\n..."
  std::vector<std::string> argv;  // for display and records; {gpus} as "$SLURM_JOB_GPUS"
};

// `value` as one single-quoted POSIX shell word ("it's" -> 'it'\''s').
std::string ShellQuote(std::string_view value);

// REQUIRES: env names are shell identifiers (the config checks). Errors: those of
// ExpandArgv (argv_template.h).
Result<SlurmJobScript> BuildSlurmJobScript(
    const std::vector<std::string>& argv_template, int port, const std::string& replica,
    const std::vector<std::pair<std::string, std::string>>& env);

}  // namespace gpuscale::orch
