// Issue 23's live acceptance: the `slo` policy runs on the daemon with a capacity profile that
// `gpuscale profile` measured against an emulated replica, behind the gateway (which then
// measures the TTFT and TPOT the policy's violation ratios come from). One emulated replica
// of the same kind as the service's is profiled first (in this process, on 127.0.0.1); the
// daemon then serves the service from that profile, and `gpuscale bench` through the gateway
// loads it past one replica's profiled capacity: the service scales out, in token mode.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>

#include <string>
#include <vector>

#include "cli/command.h"
#include "cli_test_util.h"
#include "config/profile_file.h"
#include "daemon_serve_fixture.h"
#include "emulator/emulator_server.h"

namespace gpuscale::daemon_test {
namespace {

using ::testing::HasSubstr;

// The replica both the profile and the service run: 4 batch slots, prompts at 40 ms per 1k
// tokens, 20 ms decode steps (the command-line flags below say the same).
emulator::EmulatorOptions Replica() {
  emulator::EmulatorOptions options;
  options.model_name = "m";
  options.startup_seconds = 0;
  options.engine.prefill_ms_per_1k_tokens = 40;
  options.engine.decode_ms_base = 20;
  options.engine.max_batch_size = 4;
  options.http_threads = 2;
  return options;
}

std::string ReplicaCommandYaml(const std::string& marker) {
  return std::string("    command: [") + kBinary +
         ", emulate, --port, \"{port}\", --model, m,\n"
         "              --startup-seconds, \"0.2\", --max-batch-size, \"4\",\n"
         "              --timing, linear, --prefill-ms-per-1k-tokens, \"40\",\n"
         "              --decode-ms-base, \"20\",\n"
         "              --drain-seconds, \"1\"]\n"
         "    env: {GPUSCALE_TEST_MARK: " +
         MarkerValue(marker) + "}\n";
}

TEST_F(DaemonServeTest, SloPolicyFromAProfileOfTheReplicaScalesOutBehindTheGateway) {
  // 1. Profile one replica: steps of 1 s (after 0.5 s of warm-up) from 2 req/s, doubling, at
  // the service's SLO. The mixes differ in prompt length alone, 64x apart, so that the fit
  // finds a cost per prompt token on the steps' coarse grid: the 4096-token prompts' 164 ms
  // prefills hold the replica to 2-4 req/s where 64-token ones reach 16.
  const std::string profile_path = dir_ + "/replica-profile.yaml";
  {
    auto replica = emulator::EmulatorServer::Start(Replica());
    ASSERT_TRUE(replica.has_value()) << replica.error().ToString();
    const std::string url = "http://127.0.0.1:" + std::to_string((*replica)->port());
    std::vector<std::string> args = {"profile", "--url", url,         "--model",
                                     "m",       "--out", profile_path};
    args.insert(args.end(), {"--mix", "4096:16", "--mix", "64:16", "--ttft", "1", "--tpot", "0.1"});
    args.insert(args.end(), {"--duration", "1", "--warmup", "0.5", "--start-rate", "2"});
    args.insert(args.end(), {"--step-factor", "2", "--refine", "0", "--drain-timeout", "5"});
    cli_test::RunResult r = cli_test::RunInProcess(args);
    (*replica)->Shutdown();
    ASSERT_EQ(r.exit_code, cli::kExitOk) << r.err;
  }
  Result<profile::CapacityProfile> profile = config::LoadProfileFile(profile_path);
  ASSERT_TRUE(profile.has_value()) << profile.error().ToString();
  ASSERT_GT(profile->capacity_tokens_per_second, 0);

  // 2. The daemon serves the service from that profile, at the profile's SLO, behind the
  // gateway; nothing else is set.
  const std::string service =
      "  - name: x\n"
      "    models: [m]\n" +
      ReplicaCommandYaml(marker_) +
      "    gpus_per_replica: 1\n"
      "    startup_timeout_seconds: 20\n"
      "    drain_timeout_seconds: 5\n"
      "    min_replicas: 1\n    max_replicas: 3\n"
      "    slo: {ttft_seconds: 1, tpot_seconds: 0.1}\n"
      "    policy:\n"
      "      family: slo\n"
      "      slo: {profile: " +
      profile_path + "}\n";
  StartDaemon(Config(service));
  ASSERT_GT(daemon_.gateway_port(), 0) << daemon_.stdout_seen();
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 1; }, std::chrono::seconds(15)));

  // 3. Load past one replica's capacity through the gateway: 16 clients of the profiled mix.
  std::vector<std::string> argv = {kBinary,
                                   "bench",
                                   "--url",
                                   "http://127.0.0.1:" + std::to_string(daemon_.gateway_port()),
                                   "--concurrency",
                                   "16",
                                   "--duration",
                                   "30",
                                   "--input-tokens",
                                   "512",
                                   "--output-tokens",
                                   "16",
                                   "--no-progress"};
  const pid_t bench = Spawn(argv, -1, dir_ + "/bench.err", {marker_});
  ASSERT_GT(bench, 0);
  const bool scaled = WaitFor([&] { return Count("ready") >= 2; }, std::chrono::seconds(30));
  kill(bench, SIGKILL);
  waitpid(bench, nullptr, 0);
  HttpReply events = Http(Port(), "GET", "/v1/events?kind=decision&limit=200");
  ASSERT_TRUE(scaled) << Replicas().dump() << events.body.dump();
  // Token mode from the profile, scaling out on the load (and what the gateway measured).
  EXPECT_THAT(events.body.dump(), HasSubstr("scale out 1 -> ")) << events.body.dump();
  EXPECT_THAT(events.body.dump(), HasSubstr("tokens/s per replica at the SLO"))
      << events.body.dump();
  HttpReply view = Http(Port(), "GET", "/v1/services/x");
  EXPECT_GT(view.body["gateway"]["requests_total"].get<int>(), 0) << view.body.dump();
}

}  // namespace
}  // namespace gpuscale::daemon_test
