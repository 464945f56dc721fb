// The `gpuscale` command line: one CLI11 app with a subcommand per task (docs/architecture.md).
// Each domain registers its subcommands through one Add*Commands function, so main() stays
// a one-liner and tests can run the whole CLI in-process with captured streams.
//
// Exit codes (scripts rely on them): 0 ok, 1 runtime failure, 2 usage or input error
// (message names the flag, field or line), 3 allocation cannot be met, 4 timed out waiting.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/result.h"

namespace gpuscale::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,
  kExitUsage = 2,
  kExitUnsatisfiable = 3,
  kExitTimeout = 4,
};

enum class OutputFormat { kTable, kJson };

// Shared by every subcommand of one invocation: where to print and what to return.
struct CommandContext {
  std::ostream& out;
  std::ostream& err;
  int exit_code = kExitOk;

  // Prints "error: <field: message>" to err and records the exit code for `error.code`
  // (invalid_argument/not_found -> 2, resource_exhausted -> 3, deadline_exceeded -> 4,
  // anything else -> 1). Returns the exit code.
  int Fail(const Error& error);
};

// Adds `-o,--output table|json` to a subcommand.
void AddOutputOption(CLI::App* command, OutputFormat& format);

// "HOST:PORT" or ":PORT" (host stays as given); PORT in 0..65535, 0 = any free port. Errors:
// kInvalidArgument naming `flag`.
Status ParseListenFlag(const std::string& text, const std::string& flag, std::string& host,
                       int& port);

// Raises the open-files soft limit to the hard limit: a server holds a descriptor per
// connection (event streams, gateway clients, replicas' upstreams), and distributions start
// processes at a soft 1,024. Best effort: the limit stays when the kernel refuses.
void RaiseOpenFilesLimit();

// Registration, one per domain (each in its own *_commands.cc).
void AddGpuCommands(CLI::App& app, CommandContext& ctx);     // gpus, monitor
void AddAllocCommands(CLI::App& app, CommandContext& ctx);   // allocate, wait, estimate
void AddPolicyCommands(CLI::App& app, CommandContext& ctx);  // policy eval
void AddSimulateCommands(CLI::App& app, CommandContext& ctx);  // simulate
void AddEmulateCommands(CLI::App& app, CommandContext& ctx);   // emulate
void AddFleetCommand(CLI::App& app, CommandContext& ctx);      // fleet
void AddServiceCommands(CLI::App& app, CommandContext& ctx);   // services
void AddReplicaCommands(CLI::App& app, CommandContext& ctx);   // replicas preempt
void AddBenchCommands(CLI::App& app, CommandContext& ctx);     // bench
void AddServeCommands(CLI::App& app, CommandContext& ctx);     // serve
void AddGatewayCommands(CLI::App& app, CommandContext& ctx);   // gateway (standalone)
void AddRenderCommands(CLI::App& app, CommandContext& ctx);    // render
void AddTaskCommands(CLI::App& app, CommandContext& ctx);      // task ..., experiment show
void AddProfileCommands(CLI::App& app, CommandContext& ctx);   // profile

// Runs the CLI. `args` excludes the program name. Never throws.
int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpuscale::cli
