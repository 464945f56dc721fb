#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <exception>

#include "cli/command.h"

namespace gpuscale::cli {

int CommandContext::Fail(const Error& error) {
  err << "error: " << error.ToString() << "\n";
  switch (error.code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kNotFound:
      exit_code = kExitUsage;
      break;
    case ErrorCode::kResourceExhausted:
      exit_code = kExitUnsatisfiable;
      break;
    case ErrorCode::kDeadlineExceeded:
      exit_code = kExitTimeout;
      break;
    default:
      exit_code = kExitFailure;
  }
  return exit_code;
}

void AddOutputOption(CLI::App* command, OutputFormat& format) {
  command
      ->add_option("-o,--output", format, "Output format: table (for people) or json (for scripts)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, OutputFormat>{{"table", OutputFormat::kTable},
                                              {"json", OutputFormat::kJson}},
          CLI::ignore_case));
}

void RaiseOpenFilesLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
}

Status ParseListenFlag(const std::string& text, const std::string& flag, std::string& host,
                       int& port) {
  const size_t colon = text.rfind(':');
  int parsed = -1;
  if (colon != std::string::npos) {
    const char* begin = text.data() + colon + 1;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(begin, end, parsed);
    if (ec != std::errc() || ptr != end) parsed = -1;
  }
  if (parsed < 0 || parsed > 65535) {
    return InvalidArgument(
        fmt::format("expected HOST:PORT with PORT in 0..65535 (0 = any free port), got '{}'",
                    text),
        flag);
  }
  if (colon > 0) host = text.substr(0, colon);
  port = parsed;
  return OkStatus();
}

int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CommandContext ctx{out, err};
  CLI::App app{"gpuscale: GPU tracking, placement and autoscaling for LLM inference",
               "gpuscale"};
  app.require_subcommand(1);
  AddGpuCommands(app, ctx);
  AddAllocCommands(app, ctx);
  AddPolicyCommands(app, ctx);
  AddSimulateCommands(app, ctx);
  AddProfileCommands(app, ctx);
  AddEmulateCommands(app, ctx);
  AddFleetCommand(app, ctx);
  AddBenchCommands(app, ctx);
  AddServeCommands(app, ctx);
  AddServiceCommands(app, ctx);
  AddReplicaCommands(app, ctx);
  AddGatewayCommands(app, ctx);
  AddRenderCommands(app, ctx);
  AddTaskCommands(app, ctx);

  // An unknown command word: CLI11 would let a later --help print the top-level help and exit
  // 0, as if `gpuscale sim --help` had worked. Refuse it, naming the nearest command.
  const std::vector<CLI::App*> commands = app.get_subcommands({});
  const bool word = !args.empty() && !args[0].empty() && args[0][0] != '-';
  if (word && std::none_of(commands.begin(), commands.end(),
                           [&](const CLI::App* sub) { return sub->check_name(args[0]); })) {
    std::string names, nearest;
    for (const CLI::App* sub : commands) {
      names += (names.empty() ? "" : ", ") + sub->get_name();
      if (nearest.empty() && (sub->get_name().rfind(args[0], 0) == 0 ||
                              args[0].rfind(sub->get_name(), 0) == 0)) {
        nearest = sub->get_name();
      }
    }
    err << "error: unknown command '" << args[0] << "'"
        << (nearest.empty() ? "" : "; did you mean '" + nearest + "'?") << "\n"
        << "commands: " << names << "\n";
    return kExitUsage;
  }

  // CLI11 parses argv in reverse order from a vector.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    out << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp& e) {
    out << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    // Help for the subcommand the user asked about, when CLI11 knows it.
    if (e.get_name() == "CallForHelp") return kExitOk;
    err << "error: " << e.what() << "\n"
        << "run 'gpuscale --help' or 'gpuscale <command> --help' for usage\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    err << "error: internal: " << e.what() << "\n";
    return kExitFailure;
  }
  return ctx.exit_code;
}

}  // namespace gpuscale::cli
