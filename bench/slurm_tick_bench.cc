// One daemon control tick for a Slurm service of 100 replicas, slurmrestd versus the CLI:
// SlurmOrchestrator::Poll (one jobs listing + one nodes listing through the transport, then
// the per-replica bookkeeping), Replicas() and Capacity() as the daemon reads them, and the
// service's ServiceRuntime::Tick (policy + reconcile).
//
// Method (the honest version on a 2-core machine): a REAL Slurm 22.05 cluster -- the test
// fixture tests/slurm_fixture.h, 2 nodes x 4 fake GPUs, slurmctld + slurmrestd (JWT) -- holding
// 100 tiny held jobs (`sbatch --hold --wrap "sleep 600"`), each named as a gpuscale replica
// ("gpuscale.bench.bench-<n>") and adopted by the orchestrator. 100 running model servers
// would not fit here; held jobs cost slurmctld nothing to keep, and listing them exercises
// the same RPC, JSON rendering and parsing as listing running jobs (the replicas are
// `pending` with reason JobHeldUser, so no readiness probes run -- probes are per replica
// and only while starting). So the numbers are transport + parse + bookkeeping for 100 jobs
// and 2 nodes, including slurmctld's own time to answer. BM_Parse* splits out the JSON
// parsing of the same two documents (captured once from each transport), with no I/O.
//
// The orchestrator's calls run inline (SerialCalls::Mode::kInline): in the daemon they run on
// the service's own thread, off the tick, and this measures that thread's work per tick.
//
// The fixture (tests/slurm_fixture.cc) is linked into this program by bench/CMakeLists.txt.
// Needs slurm-wlm and slurmrestd installed; without them the program says so and exits 0.
// Run: build/bench/slurm_tick_bench
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "slurm_fixture.h"  // tests/ (bench/CMakeLists.txt adds the fixture)
#include "core/clock.h"
#include "daemon/service_policy.h"
#include "daemon/service_runtime.h"
#include "orch/slurm_cli_transport.h"
#include "orch/slurm_json.h"
#include "orch/slurm_orchestrator.h"
#include "orch/slurm_rest_transport.h"

namespace gpuscale::bench {
namespace {

namespace fs = std::filesystem;
using slurm_test::SlurmTestCluster;

constexpr int kReplicas = 100;
constexpr char kService[] = "bench";

struct Setup {
  std::unique_ptr<SlurmTestCluster> cluster;
  fs::path dir;
  std::vector<std::string> job_ids;  // job of replica bench-<n> at [n]
  std::string cli_jobs_json, cli_nodes_json, rest_jobs_json, rest_nodes_json;
};

Setup& State() {
  static Setup setup;
  return setup;
}

std::unique_ptr<orch::SlurmTransport> Transport(const std::string& kind) {
  const Setup& s = State();
  if (kind == "rest") {
    return std::make_unique<orch::SlurmRestTransport>(orch::SlurmRestConfig{
        s.cluster->rest_url(), s.cluster->user(), s.cluster->token(), Seconds{10}});
  }
  orch::SlurmCliConfig cli;
  cli.slurm_conf = s.cluster->conf();
  cli.script_dir = (s.dir / "scripts").string();
  cli.timeout = Seconds{10};
  return std::make_unique<orch::SlurmCliTransport>(cli);
}

// Starts the cluster and submits the held jobs. Errors: the fixture's or sbatch's.
Status StartCluster() {
  Setup& s = State();
  GS_ASSIGN_OR_RETURN(s.cluster, SlurmTestCluster::Start({}));
  s.dir = fs::temp_directory_path() / fmt::format("gpuscale_slurm_bench_{}", getpid());
  fs::create_directories(s.dir / "state");
  for (int n = 0; n < kReplicas; ++n) {
    GS_ASSIGN_OR_RETURN(
        std::string id,
        s.cluster->Client({"sbatch", "--hold", "--parsable", "--job-name",
                           orch::SlurmOrchestrator::JobName(kService, fmt::format("bench-{}", n)),
                           "--gres=gpu:tesla:1", "--time=10", "--output=/dev/null", "--wrap",
                           "sleep 600"}));
    s.job_ids.push_back(id.substr(0, id.find_first_of(";\n")));
  }
  GS_ASSIGN_OR_RETURN(s.cli_jobs_json, s.cluster->Client({"squeue", "--json"}));
  GS_ASSIGN_OR_RETURN(s.cli_nodes_json, s.cluster->Client({"sinfo", "--json"}));
  httplib::Client rest(s.cluster->rest_url());
  const httplib::Headers auth = {{"X-SLURM-USER-NAME", s.cluster->user()},
                                 {"X-SLURM-USER-TOKEN", s.cluster->token()}};
  auto jobs = rest.Get("/slurm/v0.0.38/jobs", auth);
  auto nodes = rest.Get("/slurm/v0.0.38/nodes", auth);
  if (!jobs || !nodes || jobs->status != 200 || nodes->status != 200) {
    return Unavailable("slurmrestd did not answer GET jobs/nodes");
  }
  s.rest_jobs_json = jobs->body;
  s.rest_nodes_json = nodes->body;
  return OkStatus();
}

// An orchestrator that adopted the 100 held jobs, and the runtime the daemon would drive.
struct Service {
  std::unique_ptr<orch::SlurmOrchestrator> orch;
  std::unique_ptr<daemon::ServiceRuntime> runtime;
};

Result<Service> MakeService(const std::string& transport) {
  const Setup& s = State();
  orch::SlurmOrchestratorConfig c;
  c.service = kService;
  c.command = {"sleep", "600"};
  c.gres_type = "tesla";
  c.max_replicas = kReplicas;  // the tick can never submit a 101st job
  c.state_dir = (s.dir / "state").string();
  GS_ASSIGN_OR_RETURN(auto orch,
                      orch::SlurmOrchestrator::Create(
                          c, Transport(transport), [](auto&, int, auto&) { return true; },
                          orch::SerialCalls::Mode::kInline));
  std::vector<orch::ReplicaRecord> records;
  for (int n = 0; n < kReplicas; ++n) {
    orch::ReplicaRecord r;
    r.id = fmt::format("bench-{}", n);
    r.port = 20000 + n;
    r.host = "";
    r.engine_id = s.job_ids[n];
    records.push_back(std::move(r));
  }
  const orch::AdoptionReport report = orch->Adopt(records, SystemClock::Instance().Now());
  if (report.adopted.size() != kReplicas) {
    return Internal(fmt::format("{} transport adopted {} of {} jobs", transport,
                                report.adopted.size(), kReplicas));
  }
  daemon::ServiceConfig config;
  config.name = kService;
  config.command = c.command;
  config.min_replicas = kReplicas;
  config.max_replicas = kReplicas;
  config.policy_yaml =
      "family: target\ntarget:\n  metrics:\n    - name: vllm:num_requests_waiting\n"
      "      type: AverageValue\n      average_value: 5\n";
  GS_ASSIGN_OR_RETURN(auto policy, daemon::BuildServicePolicy(config, {}));
  Service service;
  service.runtime = std::make_unique<daemon::ServiceRuntime>(config, std::move(policy), *orch);
  service.orch = std::move(orch);
  return service;
}

void BM_SlurmTick(benchmark::State& state, const std::string& transport) {
  Result<Service> service = MakeService(transport);
  if (!service) {
    state.SkipWithError(service.error().ToString().c_str());
    return;
  }
  orch::SlurmOrchestrator& orch = *service->orch;
  size_t listed = 0;
  for (auto _ : state) {
    const Seconds now = SystemClock::Instance().Now();
    orch.Poll(now);
    benchmark::DoNotOptimize(orch.Replicas(now));
    benchmark::DoNotOptimize(orch.Capacity(now));
    daemon::ServiceTickResult tick = service->runtime->Tick(now, {}, nullptr, {});
    benchmark::DoNotOptimize(tick);
    listed = orch.ListReplicas().size();
  }
  if (!orch.engine_error().empty()) state.SkipWithError(orch.engine_error().c_str());
  if (listed != kReplicas) state.SkipWithError("replica count changed during the tick");
  state.counters["replicas"] = static_cast<double>(listed);
}

void BM_ParseJobsAndNodes(benchmark::State& state, const std::string& transport) {
  const Setup& s = State();
  const std::string& jobs = transport == "rest" ? s.rest_jobs_json : s.cli_jobs_json;
  const std::string& nodes = transport == "rest" ? s.rest_nodes_json : s.cli_nodes_json;
  for (auto _ : state) {
    auto j = orch::ParseSlurmJobs(jobs);
    auto n = orch::ParseSlurmNodes(nodes);
    if (!j || !n || j->size() < kReplicas) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(j);
    benchmark::DoNotOptimize(n);
  }
  state.counters["json_bytes"] = static_cast<double>(jobs.size() + nodes.size());
}

}  // namespace
}  // namespace gpuscale::bench

int main(int argc, char** argv) {
  using namespace gpuscale::bench;  // NOLINT: main only
  benchmark::Initialize(&argc, argv);
  if (const std::string missing = SlurmTestCluster::MissingBinaries(); !missing.empty()) {
    std::cerr << "slurm_tick_bench: skipped, " << missing << "\n";
    return 0;
  }
  if (gpuscale::Status started = StartCluster(); !started) {
    std::cerr << "slurm_tick_bench: " << started.error().ToString() << "\n";
    State().cluster.reset();
    return 1;
  }
  for (const std::string transport : {"cli", "rest"}) {
    benchmark::RegisterBenchmark(("BM_SlurmTick/100_jobs/" + transport).c_str(), BM_SlurmTick,
                                 transport)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()  // the tick mostly waits on slurmctld / the clients: wall time counts
        ->MinTime(2);
    benchmark::RegisterBenchmark(("BM_ParseJobsAndNodes/100_jobs/" + transport).c_str(),
                                 BM_ParseJobsAndNodes, transport)
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  State().cluster.reset();  // cancels the 100 jobs, stops Slurm
  std::filesystem::remove_all(State().dir);
  return 0;
}
