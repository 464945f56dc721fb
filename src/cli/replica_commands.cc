// `gpuscale replicas preempt ID [--notice SECONDS]`: what a cloud agent on a spot machine
// sends the daemon when the provider announces a reclaim (POST /v1/replicas/{id}/preempt):
// the replica drains, goes by the deadline, and a replacement starts on the cheapest variant
// with free GPUs (docs/cluster.md, "Mixed fleets").
#include <fmt/format.h>

#include <memory>
#include <string>

#include "cli/api_flags.h"
#include "cli/command.h"

namespace gpuscale::cli {
namespace {

using Json = ApiClient::Json;

struct PreemptFlags {
  ApiFlags api;
  std::string replica;
  double notice_seconds = -1;  // < 0: the variant's preemption_notice_seconds
};

int RunPreempt(const PreemptFlags& flags, CommandContext& ctx) {
  const ApiClient client = MakeClient(flags.api);
  const std::string body =
      flags.notice_seconds < 0 ? "{}" : Json{{"notice_seconds", flags.notice_seconds}}.dump();
  Result<Json> taken =
      client.Post("/v1/replicas/" + flags.replica + "/preempt", body, "application/json");
  if (!taken) return ctx.Fail(taken.error());
  if (flags.api.format == OutputFormat::kJson) {
    ctx.out << taken->dump(2) << "\n";
  } else {
    ctx.out << fmt::format("{} ({}): preempting, stopped within {:g} s; a replacement starts\n",
                           taken->value("replica", ""), taken->value("service", ""),
                           taken->value("notice_seconds", 0.0));
  }
  return kExitOk;
}

}  // namespace

void AddReplicaCommands(CLI::App& app, CommandContext& ctx) {
  CLI::App* replicas = app.add_subcommand("replicas", "Act on one replica of a running daemon");
  replicas->require_subcommand(1);
  auto flags = std::make_shared<PreemptFlags>();
  CLI::App* cmd = replicas->add_subcommand(
      "preempt",
      "A spot notice for a replica of a service with variants: it takes no new requests, is "
      "stopped by the deadline, and a replacement starts on the cheapest variant with free GPUs");
  AddApiFlags(cmd, flags->api);
  cmd->add_option("replica", flags->replica, "Replica id (gpuscale API: GET .../replicas)")
      ->required();
  cmd->add_option("--notice", flags->notice_seconds,
                  "Seconds until the replica must be gone (default: its variant's "
                  "preemption_notice_seconds)")
      ->check(CLI::Range(0.0, 86400.0));
  cmd->callback([flags, &ctx] { RunPreempt(*flags, ctx); });
}

}  // namespace gpuscale::cli
