// Helpers for the integration tests that run the gpuscale CLI (tests/*_cli_test.cc and the
// daemon tests): the CLI in-process through cli::RunCli, a program as a real process with its
// stdout and stderr captured, scratch directories under /tmp and the files in them.
// Header-only free functions without shared state: each call owns what it creates (the caller
// removes a scratch directory, e.g. in TearDown), and any test thread may call them.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"

extern char** environ;

namespace gpuscale::cli_test {

inline constexpr char kBinary[] = GPUSCALE_BINARY_DIR "/gpuscale";

// What a CLI run left: its exit code (-1 when a signal ended it) and its two streams.
struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// The whole file; "" when it cannot be read.
inline std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Creates a fresh directory /tmp/<prefix>XXXXXX; "" when it cannot (callers ASSERT on that).
inline std::string MakeTempDir(const std::string& prefix) {
  std::string pattern = "/tmp/" + prefix + "XXXXXX";
  return mkdtemp(pattern.data()) != nullptr ? pattern : "";
}

// Writes `text` to `dir`/`name` (replacing it) and returns that path.
inline std::filesystem::path WriteFile(const std::filesystem::path& dir, const std::string& name,
                                       const std::string& text) {
  std::ofstream(dir / name) << text;
  return dir / name;
}

// Runs the whole CLI in this process with `args` (without the program name).
inline RunResult RunInProcess(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  RunResult result;
  result.exit_code = cli::RunCli(args, out, err);
  result.out = out.str();
  result.err = err.str();
  return result;
}

// This process's environment ("KEY=VALUE" entries) with the keys of `overrides` set to
// their values (added when absent).
inline std::vector<std::string> EnvironmentWith(
    const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (!overrides.contains(entry.substr(0, entry.find('=')))) env.push_back(entry);
  }
  for (const auto& [key, value] : overrides) env.push_back(key + "=" + value);
  return env;
}

// Runs `program` (a path: no PATH lookup) with `args` and waits for it. Its stdout and stderr
// go through the files `stdout` and `stderr` in `scratch_dir` (overwritten). `env` replaces
// the environment when given, else the child inherits ours. Adds a test failure (and
// returns exit_code -1) when the program cannot be started.
inline RunResult RunProgram(const std::string& program, const std::vector<std::string>& args,
                            const std::filesystem::path& scratch_dir,
                            const std::optional<std::vector<std::string>>& env = std::nullopt) {
  std::vector<char*> argv{const_cast<char*>(program.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  if (env) {
    for (const std::string& e : *env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
  }
  const std::string out_path = (scratch_dir / "stdout").string();
  const std::string err_path = (scratch_dir / "stderr").string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  RunResult result;
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(),
                             env ? envp.data() : environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    ADD_FAILURE() << "cannot start " << program << ": " << rc;
    return result;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = ReadAll(out_path);
  result.err = ReadAll(err_path);
  return result;
}

}  // namespace gpuscale::cli_test
