// `gpuscale serve` end to end: the real binary, emulated replicas (`gpuscale emulate`), load
// from `gpuscale bench`, all on 127.0.0.1 with a temporary state directory and a 1 s control
// loop. Scenarios: scale out under load and back in after it, the `slo` policy scaling out
// on violations of the service's own SLO targets, a killed replica is restarted,
// a replica without GPUs is pending with the allocator's reason, a kill -9'd daemon's
// replicas are adopted by the next one without duplicates or leaked leases, SIGHUP applies
// an edited config file (and a broken one changes nothing), and the API's 400/401 answers.
// TearDown kills the daemon's process group and every process carrying the test's
// environment marker (replicas run in their own process groups).
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "daemon_serve_fixture.h"
#include "testing/fake_slurm_cli.h"

namespace gpuscale::daemon_test {
namespace {

using ::testing::HasSubstr;

TEST_F(DaemonServeTest, BenchLoadScalesOutAndBackIn) {
  StartDaemon(Config(Service(1, 3, kFastQueuePolicyYaml)));
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 1; }, std::chrono::seconds(15)));
  ASSERT_TRUE(BenchUntil(3, /*bench_seconds=*/20, std::chrono::seconds(20))) << Replicas().dump();
  HttpReply service = Http(Port(), "GET", "/v1/services/x");
  EXPECT_EQ(service.body["desired_replicas"], 3) << service.body.dump();

  // Load gone: the queue drains, the stabilization window passes, two replicas drain.
  EXPECT_TRUE(
      WaitFor([&] { return Count() == 1 && Replicas().size() == 1; }, std::chrono::seconds(30)))
      << Replicas().dump();
  HttpReply events = Http(Port(), "GET", "/v1/events?kind=decision&limit=100");
  EXPECT_THAT(events.body.dump(), HasSubstr("-> 3"));
}

// The `slo` policy live, in token mode (load counted in tokens from the replicas' token
// counters) as in examples/sim/: with a capacity estimate far above the load, only SLO
// violations can add replicas, and they are measured against the service's `slo:` block. A
// 0.1 s TTFT target is missed by every request queued behind the one-request batches of
// these replicas, so the policy adds a replica per tick while requests wait.
TEST_F(DaemonServeTest, SloPolicyScalesOutOnViolationsOfTheServicesSlo) {
  std::string service = Service(1, 3,
                                "      family: slo\n"
                                "      slo: {output_token_weight: 4,\n"
                                "            initial_capacity_tokens_per_second: 1000000,\n"
                                "            ready_grace_seconds: 0}\n");
  service.replace(service.find("    policy:"), 0, "    slo: {ttft_seconds: 0.1}\n");
  StartDaemon(Config(service));
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 1; }, std::chrono::seconds(15)));
  HttpReply spec = Http(Port(), "GET", "/v1/services/x");
  EXPECT_EQ(spec.body["spec"]["slo"], json::parse(R"({"ttft_seconds": 0.1, "tpot_seconds": 0.05})"))
      << spec.body.dump();
  ASSERT_TRUE(BenchUntil(3, /*bench_seconds=*/25, std::chrono::seconds(25))) << Replicas().dump();
  HttpReply events = Http(Port(), "GET", "/v1/events?kind=decision&limit=100");
  EXPECT_THAT(events.body.dump(), HasSubstr("scale out 1 -> 2")) << events.body.dump();
}

// A 30 s control loop: the exit wakes the loop at once (SIGCHLD) and the restarting replica
// is probed every second, so it serves again within seconds, not a loop interval later.
TEST_F(DaemonServeTest, KilledReplicaIsRestartedWithoutWaitingForTheLoop) {
  daemon_.Start(Config(Service(1, 1, kFastQueuePolicyYaml)),
                {.dir = dir_, .loop_interval_seconds = "30", .env = {marker_}});
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 1; }, std::chrono::seconds(15)));
  const json before = Replicas()[0];
  const int pid = before["pid"];
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  EXPECT_TRUE(WaitFor(
      [&] {
        const json r = Replicas();
        return r.size() == 1 && r[0]["phase"] == "ready" && r[0]["pid"] != pid && r[0]["pid"] > 0;
      },
      std::chrono::seconds(10)))
      << Replicas().dump();
  EXPECT_GE(Replicas()[0]["restarts"].get<int>(), 1);
}

// Only a replica's exit wakes the loop: every Slurm listing runs squeue and sinfo, whose exits
// raise SIGCHLD too, and waking for them made each tick's listings start the next tick (the
// loop ticked 100+ times a second with two Slurm services on a 15 s loop).
TEST_F(DaemonServeTest, ChildProcessesOtherThanReplicasDoNotWakeTheLoop) {
  daemon::FakeSlurmCli slurm(dir_ + "/slurm");
  std::string services;
  for (const char* name : {"a", "b", "c"}) {
    services += std::string("  - name: ") + name +
                "\n    engine: slurm\n    command: [srv, --port, \"{port}\"]\n"
                "    min_replicas: 0\n    max_replicas: 1\n"
                "    slurm: {transport: cli, bin_dir: " +
                slurm.bin_dir() + "}\n" + "    policy:\n" + kFastQueuePolicyYaml;
  }
  daemon_.Start(Config(services), {.dir = dir_, .loop_interval_seconds = "30", .env = {marker_}});
  std::this_thread::sleep_for(std::chrono::seconds(5));
  httplib::Client client("127.0.0.1", Port());
  httplib::Result metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics && metrics->status == 200);
  const size_t at = metrics->body.find("\ngpuscale_control_loop_duration_seconds_count ");
  ASSERT_NE(at, std::string::npos) << metrics->body;
  const std::string_view name = "\ngpuscale_control_loop_duration_seconds_count ";
  const double ticks = std::stod(metrics->body.substr(at + name.size()));
  EXPECT_LE(ticks, 2) << "a 30 s loop ticked " << ticks << " times in 5 s";
}

// Simulated GPUs react to load (issue 22): the GPU leased to an emulated replica shows the
// memory of its model and KV cache from the start, and utilization that follows its batch
// occupancy: full (one sequence per batch) under bench load, back to 0 after it; the GPUs
// nobody leases stay at the inventory's zeros.
TEST_F(DaemonServeTest, LeasedSimulatedGpuShowsTheEmulatedReplicasLoad) {
  StartDaemon(Config(Service(1, 1, kFastQueuePolicyYaml)));
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 1; }, std::chrono::seconds(15)));
  const int leased = Replicas()[0]["gpus"][0];
  auto gpu = [&](int index) {
    const HttpReply gpus = Http(Port(), "GET", "/v1/gpus");
    for (const json& g : gpus.body["gpus"]) {
      if (g["index"] == index) return g;
    }
    return json();
  };
  // An 8B model (the default when the name gives no size) in 16 bits plus 65,536 KV tokens.
  EXPECT_TRUE(WaitFor([&] { return gpu(leased)["memory_used_mb"].get<int>() > 20000; },
                      std::chrono::seconds(5)))
      << gpu(leased);
  EXPECT_LT(gpu(leased)["memory_used_mb"].get<int>(), gpu(leased)["memory_total_mb"].get<int>());
  // The replica is the GPU's process, as nvidia-smi's process table would list it.
  const json processes = gpu(leased)["processes"];
  ASSERT_EQ(processes.size(), 1u) << processes;
  EXPECT_EQ(processes[0]["pid"], Replicas()[0]["pid"]);
  EXPECT_EQ(processes[0]["name"], "replica " + Replicas()[0]["id"].get<std::string>());
  EXPECT_EQ(processes[0]["used_memory_mb"], gpu(leased)["memory_used_mb"]);
  const int other = leased == 0 ? 1 : 0;
  EXPECT_EQ(gpu(other)["processes"], json::array());
  EXPECT_EQ(gpu(other)["memory_used_mb"], 0) << gpu(other);
  EXPECT_EQ(gpu(other)["utilization_percent"], 0.0) << gpu(other);

  const int replica_port = Replicas()[0]["port"];
  const pid_t bench = Spawn(BenchArgv("http://127.0.0.1:" + std::to_string(replica_port), 8), -1,
                            dir_ + "/bench.err", {marker_});
  ASSERT_GT(bench, 0);
  const bool busy =
      WaitFor([&] { return gpu(leased)["utilization_percent"].get<double>() > 50; },
              std::chrono::seconds(6));
  waitpid(bench, nullptr, 0);
  EXPECT_TRUE(busy) << gpu(leased);
  EXPECT_TRUE(WaitFor([&] { return gpu(leased)["utilization_percent"].get<double>() == 0; },
                      std::chrono::seconds(5)))
      << gpu(leased);
  EXPECT_EQ(gpu(other)["utilization_percent"], 0.0) << gpu(other);
}

TEST_F(DaemonServeTest, ReplicaWithoutGpuIsPendingWithReason) {
  StartDaemon(Config(Service(2, 2, kFastQueuePolicyYaml), /*gpus=*/1));
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 1 && Count("pending") == 1; },
                      std::chrono::seconds(15)))
      << Replicas().dump();
  for (const json& r : Replicas()) {
    if (r["phase"] == "pending") {
      EXPECT_FALSE(r["last_error"].get<std::string>().empty()) << r;
    }
  }
  HttpReply service = Http(Port(), "GET", "/v1/services/x");
  EXPECT_EQ(service.body["pending_replicas"], 1);
}

TEST_F(DaemonServeTest, RestartedDaemonAdoptsReplicasStopsUnrecordedOnesAndASecondOneIsRefused) {
  const std::string config = Config(Service(2, 2, kFastQueuePolicyYaml));
  StartDaemon(config);
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 2; }, std::chrono::seconds(15)));
  std::set<int> pids;
  for (const json& r : Replicas()) pids.insert(r["pid"].get<int>());
  // A second daemon on the same state directory would adopt and restart the same replicas:
  // it is refused, naming the holder.
  const cli_test::RunResult second = cli_test::RunProgram(
      kBinary,
      {"serve", "--config", dir_ + "/gpuscale.yaml", "--listen", "127.0.0.1:0",
       "--gateway-listen", "off", "--state-dir", dir_ + "/state"},
      dir_);
  EXPECT_EQ(second.exit_code, 1) << second.err;
  EXPECT_THAT(second.err, HasSubstr("in use by another gpuscale serve (pid " +
                                    std::to_string(daemon_.pid()) + ")"));
  EXPECT_EQ(Count("ready"), 2) << "the refused daemon touched nothing";
  daemon_.Kill(SIGKILL);  // the replicas run in their own process groups: they survive
  // A replica process the dead daemon started but never saved (it died in between): only
  // its environment marker says whose it is.
  const pid_t unrecorded = Spawn(
      {"sleep", "300"}, -1, dir_ + "/unrecorded.err",
      {marker_, "GPUSCALE_REPLICA_OF=" + std::filesystem::absolute(dir_ + "/state").string()});
  ASSERT_GT(unrecorded, 0);

  StartDaemon(config);
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 2; }, std::chrono::seconds(15)))
      << Replicas().dump();
  // Killed before the daemon's first placement, so no GPU is ever leased twice.
  EXPECT_TRUE(WaitFor(
      [&] {
        int status = 0;
        return waitpid(unrecorded, &status, WNOHANG) == unrecorded;
      },
      std::chrono::seconds(5)))
      << "the unrecorded replica process still runs";
  EXPECT_THAT(Http(Port(), "GET", "/v1/events?kind=replica_process_stopped").body.dump(),
              HasSubstr("no record knows"));
  std::set<int> adopted;
  for (const json& r : Replicas()) {
    adopted.insert(r["pid"].get<int>());
    EXPECT_TRUE(r["adopted"].get<bool>()) << r;
  }
  EXPECT_EQ(adopted, pids);
  const json leases = Http(Port(), "GET", "/v1/leases").body["leases"];
  ASSERT_EQ(leases.size(), 2u) << leases.dump();
  std::set<std::string> owners;
  for (const json& l : leases) owners.insert(l["owner"].get<std::string>());
  EXPECT_EQ(owners.size(), 2u);
}

TEST_F(DaemonServeTest, SighupAppliesTheEditedConfigAndABrokenOneChangesNothing) {
  StartDaemon(Config(Service(1, 1, kFastQueuePolicyYaml)));
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 1; }, std::chrono::seconds(15)));
  const auto events = [&](const std::string& kind) {
    return Http(Port(), "GET", "/v1/events?kind=" + kind).body["events"];
  };

  std::ofstream(dir_ + "/gpuscale.yaml") << "services: [\n";  // unterminated
  ASSERT_EQ(kill(daemon_.pid(), SIGHUP), 0);
  ASSERT_TRUE(WaitFor([&] { return events("config_reload_failed").size() == 1; },
                      std::chrono::seconds(10)));
  const std::string failed = events("config_reload_failed")[0]["message"].get<std::string>();
  EXPECT_THAT(failed, HasSubstr("not applied, nothing changed: "));
  EXPECT_THAT(failed, HasSubstr("(line 2"));
  EXPECT_EQ(Http(Port(), "GET", "/v1/services/x").body["max_replicas"], 1);

  std::ofstream(dir_ + "/gpuscale.yaml") << Config(Service(1, 2, kFastQueuePolicyYaml));
  ASSERT_EQ(kill(daemon_.pid(), SIGHUP), 0);
  ASSERT_TRUE(WaitFor([&] { return events("config_reloaded").size() == 1; },
                      std::chrono::seconds(10)));
  EXPECT_THAT(events("config_reloaded")[0]["message"].get<std::string>(),
              HasSubstr("updated x"));
  EXPECT_EQ(Http(Port(), "GET", "/v1/services/x").body["max_replicas"], 2);
  EXPECT_EQ(Count("ready"), 1);  // the replica runs on
  EXPECT_EQ(Http(Port(), "GET", "/healthz").status, 200);
  std::ifstream err(dir_ + "/daemon.err");
  const std::string log((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  EXPECT_THAT(log, HasSubstr("gpuscale serve: SIGHUP: " + dir_ +
                             "/gpuscale.yaml: created none; updated x"));
}

TEST_F(DaemonServeTest, BadBodyIs400NamingTheFieldAndWrongTokenIs401) {
  token_ = "s3cret";
  StartDaemon(Config(Service(1, 1, kFastQueuePolicyYaml)), {"--token", token_});
  HttpReply unauthorized = Http(Port(), "GET", "/v1/services", "wrong");
  EXPECT_EQ(unauthorized.status, 401);
  HttpReply bad = Http(Port(), "POST", "/v1/services", token_,
                       R"({"name": "y", "command": ["true"], "gpus_per_replica": "two"})");
  EXPECT_EQ(bad.status, 400) << bad.body.dump();
  EXPECT_THAT(bad.body["error"]["field"].dump(), HasSubstr("gpus_per_replica"));
  HttpReply replicas = Http(Port(), "PUT", "/v1/services/x/replicas", token_, R"({"replicas": 7})");
  EXPECT_EQ(replicas.status, 400) << replicas.body.dump();
  EXPECT_EQ(Http(Port(), "GET", "/healthz").status, 200);
}

}  // namespace
}  // namespace gpuscale::daemon_test
