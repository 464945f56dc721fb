// Test helpers for store/ tests: a fresh temporary directory, removed with everything in it
// when the fixture ends; one row of each table with every field set.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "store/records.h"

namespace gpuscale::store {

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "gpuscale-store-XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path dir_;
};

// Rows with no field at its default (ids excepted: SQLite assigns them), so a column dropped
// on the way in or out shows up as an inequality. FullRule's service is FullService's and
// FullExperiment's task_id is 0 (set it to a stored task's id before inserting directly).
inline ServiceRow FullService() {
  return {.name = "chat",
          .spec = "model: m",
          .paused = true,
          .created_at = Seconds{10.5},
          .updated_at = Seconds{20.25},
          .deleting = true,
          .manual_replicas = 0};
}
inline RuleRow FullRule() {
  return {.service = "chat",
          .name = "queue-high",
          .source = "prometheus",
          .metric = "vllm:num_requests_waiting",
          .aggregation = "max",
          .comparator = "GREATER_THAN",
          .threshold = 12.5,
          .step_size = 3,
          .cooldown = Seconds{45},
          .min_replicas = 1,
          .max_replicas = 9,
          .enabled = false,
          .created_at = Seconds{7.5}};
}
inline ReplicaRow FullReplica() {
  return {.id = "chat-3",
          .service = "chat",
          .phase = "ready",
          .pid = 4242,
          .port = 8003,
          .gpus = {0, 3},
          .gpu_keys = {"GPU-aaa", "node1#3"},
          .lease_owner = "replica/chat-3",
          .argv = {"vllm", "serve", "a;b c", "\"quoted\""},
          .log_path = "/logs/chat-3.log",
          .restarts = 2,
          .started_at = Seconds{100.5},
          .phase_since = Seconds{150},
          .updated_at = Seconds{160},
          .host = "10.0.0.7",
          .engine_id = "job-81"};
}
inline LeaseRow FullLease() {
  return {.key = "GPU-aaa",
          .gpu_index = 3,
          .node = "node1",
          .owner = "replica/chat-3",
          .acquired_at = Seconds{99.5}};
}
inline DecisionRow FullDecision() {
  return {.service = "chat",
          .at = Seconds{30.5},
          .policy = "target",
          .current_replicas = 2,
          .ready_replicas = 1,
          .desired_replicas = 3,
          .reason = "queue above target",
          .details = {"waiting=12"},
          .actions = {"start", "drain chat-2: fewest outstanding"}};
}
inline EventRow FullEvent() {
  return {.at = Seconds{31.5},
          .service = "chat",
          .kind = "replica_started",
          .replica = "chat-3",
          .message = "started",
          .data = R"({"pid":4242})"};
}
inline TaskRow FullTask() {
  return {.name = "sweep",
          .source_text = "name: sweep\n",
          .status = "running",
          .priority = 2,
          .experiments_total = 4,
          .experiments_done = 1,
          .best_experiment_id = 77,
          .message = "half done",
          .created_at = Seconds{5.5},
          .finished_at = Seconds{90}};
}
inline ExperimentRow FullExperiment() {
  return {.index = 3,
          .status = "succeeded",
          .parameters = R"({"tp":2})",
          .gpus_required = 2,
          .memory_mb_per_gpu = 19000,
          .results = R"({"bench":{}})",
          .server_argv = {"gpuscale", "emulate"},
          .pid = 4343,
          .port = 4100,
          .lease_owner = "experiment/3",
          .log_path = "/logs/e3.log",
          .message = "ok",
          .queued_at = Seconds{10},
          .started_at = Seconds{11},
          .finished_at = Seconds{12.5}};
}

}  // namespace gpuscale::store
