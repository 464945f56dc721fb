#include "orch/slurm_job_script.h"

#include <fmt/format.h>

#include "orch/argv_template.h"

namespace gpuscale::orch {
namespace {

// Stands for {gpus} between expansion and quoting; a control character no config contains.
constexpr std::string_view kGpusMark = "\x1f" "gpus" "\x1f";

// One argument as shell text: quoted pieces around "${SLURM_JOB_GPUS}" where {gpus} was.
std::string ShellWord(std::string_view arg, std::string& display) {
  std::string word;
  for (size_t pos = 0;;) {
    const size_t mark = arg.find(kGpusMark, pos);
    const std::string_view piece = arg.substr(pos, mark == std::string_view::npos ? arg.npos
                                                                                   : mark - pos);
    if (!piece.empty() || (mark == std::string_view::npos && word.empty())) {
      word += ShellQuote(piece);
    }
    display += piece;
    if (mark == std::string_view::npos) break;
    word += "\"${SLURM_JOB_GPUS:-}\"";
    display += "$SLURM_JOB_GPUS";
    pos = mark + kGpusMark.size();
  }
  return word;
}

}  // namespace

std::string ShellQuote(std::string_view value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

Result<SlurmJobScript> BuildSlurmJobScript(
    const std::vector<std::string>& argv_template, int port, const std::string& replica,
    const std::vector<std::pair<std::string, std::string>>& env) {
  GS_ASSIGN_OR_RETURN(std::vector<std::string> argv,
                      ExpandArgv(argv_template, ArgvVars{std::to_string(port),
                                                         std::string(kGpusMark), replica}));
  SlurmJobScript script;
  script.text = "#!/bin/sh\n# gpuscale replica (generated; every argument is quoted)\n";
  script.text += fmt::format(
      "echo \"---- $(date -u +%Y-%m-%dT%H:%M:%SZ) gpuscale: replica \"{}\" job $SLURM_JOB_ID "
      "on $(hostname) port {} SLURM_JOB_GPUS=${{SLURM_JOB_GPUS:-}}\"\n",
      ShellQuote(replica), port);
  for (const auto& [name, value] : env) {
    script.text += fmt::format("export {}={}\n", name, ShellQuote(value));
  }
  script.text += "exec";
  for (const std::string& arg : argv) {
    std::string display;
    script.text += " " + ShellWord(arg, display);
    script.argv.push_back(std::move(display));
  }
  script.text += "\n";
  return script;
}

}  // namespace gpuscale::orch
