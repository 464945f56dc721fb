// Tasks and experiments end to end (issue 6 "Done when"): the real `gpuscale serve` on 4
// simulated GPUs, experiments running `gpuscale emulate` servers and 1 s benchmarks, all on
// 127.0.0.1 with a temporary state directory, driven through the REST API only.
// Scenarios: a 2 x 3 sweep completes without ever leasing a GPU twice (replayed from the event
// log); an experiment needing more GPUs than exist is refused at once (409); one needing GPUs
// held by a service waits until the service scales in, another times out with the
// allocator's message; cancel stops running and queued experiments; a SIGKILLed daemon's
// running experiment fails with the restart reason on the next start, without leaking its
// lease, and the queued ones resume. TearDown kills every process carrying the test's marker.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "daemon_test_util.h"

namespace gpuscale::daemon_test {
namespace {

using ::testing::HasSubstr;

constexpr int kGpus = 4;

// A server process that no longer runs (gone, or a zombie waiting for its new parent).
bool ProcessGone(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string content;
  if (!std::getline(stat, content)) return true;
  const size_t paren = content.rfind(')');
  return paren != std::string::npos && paren + 2 < content.size() && content[paren + 2] == 'Z';
}

class TasksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("gpuscale_tasks_test_");
    ASSERT_FALSE(dir_.empty());
    marker_ = TestMarker(dir_);
    mark_ = MarkerValue(marker_);
  }

  void TearDown() override {
    daemon_.Kill(SIGKILL);
    KillMarkedProcesses(marker_);
    if (HasFailure()) DumpFile("daemon stderr", dir_ + "/daemon.err");
    std::filesystem::remove_all(dir_);
  }

  // The daemon config: 4 simulated GPUs, a fast GPU sampler, and optionally a service "svc"
  // of emulated replicas with one GPU each (sized by PUT /replicas).
  std::string Config(bool service = false) {
    std::ofstream inv(dir_ + "/inventory.yaml");
    inv << "gpus:\n";
    for (int i = 0; i < kGpus; ++i) inv << "  - index: " << i << "\n";
    std::string config = "gpu: {backend: simulated, inventory: " + dir_ +
                         "/inventory.yaml, sample_interval_seconds: 0.2, "
                         "cache_ttl_seconds: 0.1}\n";
    if (!service) return config + "services: []\n";
    return config + "services:\n  - name: svc\n    command: [" + std::string(kBinary) +
           ", emulate, --port, \"{port}\", --model, m, --startup-seconds, \"0.2\"]\n" +
           "    env: {GPUSCALE_TEST_MARK: " + mark_ + "}\n" +
           "    gpus_per_replica: 1\n    startup_timeout_seconds: 20\n" +
           "    drain_timeout_seconds: 1\n    min_replicas: 0\n    max_replicas: 4\n" +
           "    policy:\n      family: target\n      target:\n        metrics:\n" +
           "          - {name: \"vllm:num_requests_waiting\", type: AverageValue, " +
           "average_value: 2}\n";
  }

  // Starts `gpuscale serve` with a 0.5 s control loop.
  void StartDaemon(const std::string& config) {
    daemon_.Start(config, {.dir = dir_, .loop_interval_seconds = "0.5", .env = {marker_}});
  }

  int Port() const { return daemon_.port(); }

  // A task body (JSON). `parameters` is a JSON object of the grid; the emulator gets the
  // tensor-parallel-size and max-num-seqs placeholders.
  json Task(const std::string& name, json parameters, double bench_seconds = 1) {
    json task;
    task["name"] = name;
    task["model"] = "meta-llama/Llama-3.1-8B-Instruct";
    task["params_b"] = 8;
    task["parameters"] = std::move(parameters);
    task["server"] = {
        {"command",
         {kBinary, "emulate", "--port", "{port}", "--model", "m", "--startup-seconds", "0.1",
          "--timing", "linear", "--decode-ms-base", "5", "--drain-seconds", "1",
          "--tensor-parallel-size", "{tensor-parallel-size}", "--max-num-seqs", "{max-num-seqs}"}},
        {"env", {{"GPUSCALE_TEST_MARK", mark_}}},
        {"startup_timeout_seconds", 20}};
    task["benchmark"] = {{"concurrency", 4},
                         {"input_tokens", 16},
                         {"output_tokens", 8},
                         {"duration_seconds", bench_seconds}};
    task["gpu_wait_timeout_seconds"] = 60;
    return task;
  }

  HttpReply Submit(const json& task) { return Http(Port(), "POST", "/v1/tasks", "", task.dump()); }
  json GetTask(int64_t id) { return Http(Port(), "GET", "/v1/tasks/" + std::to_string(id)).body; }
  // Waits until the task's status is one of the ended ones; returns the full task.
  json WaitEnded(int64_t id, std::chrono::seconds timeout) {
    json task;
    WaitFor(
        [&] {
          task = GetTask(id);
          const std::string status = task.value("status", "");
          return status == "succeeded" || status == "failed" || status == "cancelled";
        },
        timeout);
    return task;
  }
  // Submits `task` to run one experiment at a time and waits (15 s) until the first runs its
  // server; sets the task's id and the server's pid. Fails the test fatally otherwise.
  void SubmitOneAtATimeAndWaitRunning(json task, int64_t* id, int* pid) {
    task["max_parallel"] = 1;
    HttpReply r = Submit(task);
    ASSERT_EQ(r.status, 201) << r.body.dump();
    *id = r.body["id"];
    ASSERT_TRUE(WaitFor(
        [&] {
          const json e = GetTask(*id)["experiments"][0];
          *pid = e.value("pid", 0);
          return e["status"] == "running" && *pid > 0;
        },
        std::chrono::seconds(15)))
        << GetTask(*id).dump(1);
  }
  json Leases() { return Http(Port(), "GET", "/v1/leases").body["leases"]; }
  json Events() {
    return Http(Port(), "GET", "/v1/events?limit=10000").body["events"];
  }

  std::string dir_, marker_, mark_;
  ServeDaemon daemon_;
};

// Replays the experiments' lease intervals from the event log: a GPU is taken at
// experiment_started and given back at the experiment's end event. Returns "" when no GPU
// was ever held twice and no more than kGpus were held at once, else what went wrong.
std::string ReplayLeases(const json& events, std::set<int64_t>* started) {
  std::map<int, int64_t> holder;  // GPU index -> experiment id
  for (const json& e : events) {
    const std::string kind = e["kind"];
    if (kind.rfind("experiment_", 0) != 0 || !e["data"].is_object()) continue;
    const int64_t experiment = e["data"].value("experiment_id", int64_t{0});
    const json gpus = e["data"].value("gpus", json::array());
    if (kind == "experiment_started") {
      started->insert(experiment);
      for (int gpu : gpus) {
        if (holder.count(gpu) != 0) {
          return "GPU " + std::to_string(gpu) + " leased to experiments " +
                 std::to_string(holder[gpu]) + " and " + std::to_string(experiment);
        }
        holder[gpu] = experiment;
      }
      if (holder.size() > static_cast<size_t>(kGpus)) return "more GPUs leased than exist";
    } else if (kind == "experiment_succeeded" || kind == "experiment_failed" ||
               kind == "experiment_cancelled") {
      for (int gpu : gpus) {
        if (holder[gpu] != experiment) return "experiment released a GPU it did not hold";
        holder.erase(gpu);
      }
    }
  }
  return holder.empty() ? "" : "leases still held at the end of the log";
}

TEST_F(TasksTest, SweepCompletesWithoutSharingGpusAndStoresResults) {
  StartDaemon(Config());
  HttpReply submitted =
      Submit(Task("sweep", {{"tensor-parallel-size", {1, 2}}, {"max-num-seqs", {2, 4, 8}}}));
  ASSERT_EQ(submitted.status, 201) << submitted.body.dump();
  const int64_t id = submitted.body["id"];
  EXPECT_EQ(submitted.body["experiments_total"], 6);

  const json task = WaitEnded(id, std::chrono::seconds(40));
  ASSERT_EQ(task["status"], "succeeded") << task.dump(1);
  EXPECT_EQ(task["experiments_done"], 6);
  ASSERT_TRUE(task["best_experiment_id"].is_number()) << task.dump(1);
  int best_marks = 0;
  for (const json& e : task["experiments"]) {
    EXPECT_EQ(e["status"], "succeeded") << e.dump(1);
    const int tp = e["parameters"]["tensor-parallel-size"];
    EXPECT_EQ(e["gpus_required"], tp);
    ASSERT_TRUE(e["bench"].is_object()) << e.dump(1);
    EXPECT_GT(e["bench"]["requests_completed"].get<int>(), 0);
    EXPECT_GT(e["bench"]["output_token_throughput_per_second"].get<double>(), 0);
    ASSERT_TRUE(e["gpu_info"].is_object()) << e.dump(1);
    EXPECT_EQ(e["gpu_info"]["count"], tp);
    EXPECT_EQ(e["gpu_info"]["allocation_method"], "lease-ledger/availability-score");
    if (e["gpu_monitoring"].is_object()) {
      EXPECT_EQ(e["gpu_monitoring"]["gpus"].size(), static_cast<size_t>(tp)) << e.dump(1);
    }
    best_marks += e["is_best"].get<bool>() ? 1 : 0;
    if (e["is_best"].get<bool>()) {
      EXPECT_EQ(e["id"], task["best_experiment_id"]);
    }
  }
  EXPECT_EQ(best_marks, 1);
  // The sampler ran every 0.2 s during 1 s benchmarks: some experiment has monitoring.
  bool monitored = false;
  for (const json& e : task["experiments"]) monitored |= e["gpu_monitoring"].is_object();
  EXPECT_TRUE(monitored);

  const json one = Http(Port(), "GET",
                        "/v1/experiments/" + std::to_string(task["best_experiment_id"].get<int>()))
                       .body;
  EXPECT_EQ(one["is_best"], true) << one.dump(1);
  const json listed = Http(Port(), "GET", "/v1/tasks").body["tasks"];
  ASSERT_FALSE(listed.empty());
  EXPECT_EQ(listed[0]["id"], id);

  std::set<int64_t> started;
  EXPECT_EQ(ReplayLeases(Events(), &started), "");
  EXPECT_EQ(started.size(), 6u);
  EXPECT_TRUE(Leases().empty()) << Leases().dump();
}

// examples/tasks/emulated-sweep.yaml runs `gpuscale emulate`: a bare `gpuscale` is the
// daemon's own executable, found without PATH (the test's PATH has no build directory).
TEST_F(TasksTest, ABareGpuscaleCommandRunsTheDaemonsOwnExecutable) {
  ASSERT_EQ(std::string(std::getenv("PATH") ? std::getenv("PATH") : "").find(
                std::filesystem::path(kBinary).parent_path().string() + ":"),
            std::string::npos)
      << "the build directory is on PATH: this test would prove nothing";
  StartDaemon(Config());
  json task = Task("bare", {{"tensor-parallel-size", {1}}, {"max-num-seqs", {2}}});
  task["server"]["command"][0] = "gpuscale";
  HttpReply submitted = Submit(task);
  ASSERT_EQ(submitted.status, 201) << submitted.body.dump();
  const json done = WaitEnded(submitted.body["id"], std::chrono::seconds(40));
  EXPECT_EQ(done["status"], "succeeded") << done.dump(1);
}

TEST_F(TasksTest, MoreGpusThanExistIsRefusedAtOnce) {
  StartDaemon(Config());
  HttpReply r = Submit(Task("huge", {{"tensor-parallel-size", 8}, {"max-num-seqs", 4}}));
  EXPECT_EQ(r.status, 409) << r.body.dump();
  EXPECT_THAT(r.body["error"]["message"].get<std::string>(), HasSubstr("needs 8 GPUs"));
  EXPECT_THAT(r.body["error"]["message"].get<std::string>(), HasSubstr("has 4"));
  EXPECT_TRUE(Http(Port(), "GET", "/v1/tasks").body["tasks"].empty());
}

TEST_F(TasksTest, WaitsForServiceGpusAndTimesOutWithAllocatorMessage) {
  StartDaemon(Config(/*service=*/true));
  HttpReply scaled = Http(Port(), "PUT", "/v1/services/svc/replicas", "", R"({"replicas": 4})");
  ASSERT_EQ(scaled.status, 200) << scaled.body.dump();
  ASSERT_TRUE(WaitFor([&] { return Leases().size() == 4; }, std::chrono::seconds(15)));

  json impatient = Task("impatient", {{"tensor-parallel-size", 2}, {"max-num-seqs", 4}});
  impatient["gpu_wait_timeout_seconds"] = 1;
  HttpReply r = Submit(impatient);
  ASSERT_EQ(r.status, 201) << r.body.dump();
  json ended = WaitEnded(r.body["id"], std::chrono::seconds(10));
  ASSERT_EQ(ended["status"], "failed") << ended.dump(1);
  const std::string message = ended["experiments"][0]["message"];
  EXPECT_THAT(message, HasSubstr("no GPUs after 1 s"));
  EXPECT_THAT(message, HasSubstr("need 2 GPUs"));
  EXPECT_THAT(message, HasSubstr("leased to replica/"));

  r = Submit(Task("patient", {{"tensor-parallel-size", 2}, {"max-num-seqs", 4}}));
  ASSERT_EQ(r.status, 201) << r.body.dump();
  const int64_t patient = r.body["id"];
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(GetTask(patient)["experiments"][0]["status"], "queued");

  scaled = Http(Port(), "PUT", "/v1/services/svc/replicas", "", R"({"replicas": 2})");
  ASSERT_EQ(scaled.status, 200) << scaled.body.dump();
  ended = WaitEnded(patient, std::chrono::seconds(30));
  EXPECT_EQ(ended["status"], "succeeded") << ended.dump(1);
}

TEST_F(TasksTest, CancelStopsRunningAndQueuedExperiments) {
  StartDaemon(Config());
  int64_t id = 0;
  int pid = 0;
  ASSERT_NO_FATAL_FAILURE(SubmitOneAtATimeAndWaitRunning(
      Task("cancel-me", {{"tensor-parallel-size", 1}, {"max-num-seqs", {4, 8}}}, 30), &id, &pid));
  EXPECT_EQ(Leases().size(), 1u);

  HttpReply cancelled = Http(Port(), "DELETE", "/v1/tasks/" + std::to_string(id));
  ASSERT_EQ(cancelled.status, 200) << cancelled.body.dump();
  EXPECT_EQ(cancelled.body["status"], "cancelled");
  const json after = GetTask(id);
  EXPECT_EQ(after["experiments"][0]["status"], "cancelled") << after.dump(1);
  EXPECT_EQ(after["experiments"][1]["status"], "cancelled") << after.dump(1);
  EXPECT_TRUE(WaitFor([&] { return ProcessGone(pid); }, std::chrono::seconds(5)));
  EXPECT_TRUE(Leases().empty()) << Leases().dump();
  EXPECT_EQ(Http(Port(), "DELETE", "/v1/tasks/" + std::to_string(id)).status, 409);
}

TEST_F(TasksTest, RestartFailsRunningExperimentAndResumesQueuedOnes) {
  const std::string config = Config();
  StartDaemon(config);
  int64_t id = 0;
  int pid = 0;
  ASSERT_NO_FATAL_FAILURE(SubmitOneAtATimeAndWaitRunning(
      Task("survivor", {{"tensor-parallel-size", 1}, {"max-num-seqs", {2, 4, 8}}}, 1), &id, &pid));
  daemon_.Kill(SIGKILL);  // the experiment's server runs in its own process group: it survives

  StartDaemon(config);
  const json ended = WaitEnded(id, std::chrono::seconds(30));
  ASSERT_EQ(ended["status"], "succeeded") << ended.dump(1);
  const json& first = ended["experiments"][0];
  EXPECT_EQ(first["status"], "failed");
  EXPECT_THAT(first["message"].get<std::string>(),
              HasSubstr("daemon restarted while the experiment was running"));
  EXPECT_EQ(ended["experiments"][1]["status"], "succeeded");
  EXPECT_EQ(ended["experiments"][2]["status"], "succeeded");
  EXPECT_TRUE(WaitFor([&] { return ProcessGone(pid); }, std::chrono::seconds(5)));
  EXPECT_TRUE(Leases().empty()) << Leases().dump();
}

}  // namespace
}  // namespace gpuscale::daemon_test
