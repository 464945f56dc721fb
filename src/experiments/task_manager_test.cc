// TaskManager without server processes: submission checks, queue bookkeeping in the store,
// cancel of queued experiments, GPU wait timeouts and restart reconciliation. The runs of
// real servers are covered by tests/tasks_test.cc.
#include "experiments/task_manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <utility>

#include "experiments/task_manager_impl.h"
#include "gpumon/simulated_backend.h"
#include "testing/wait_until.h"

namespace gpuscale::experiments {
namespace {

using ::testing::HasSubstr;

constexpr char kTaskYaml[] = R"(name: sweep
model: meta-llama/Llama-3.1-8B-Instruct
params_b: 8
parameters:
  tensor-parallel-size: [1, 2]
server:
  command: [server, --port, "{port}", --tp, "{tensor-parallel-size}"]
benchmark: {duration_seconds: 1}
gpu_wait_timeout_seconds: 300
)";

task::TaskDefinition Definition(std::vector<alloc::ParamScalar> tp) {
  task::TaskDefinition d;
  d.name = "sweep";
  d.spec.model = "meta-llama/Llama-3.1-8B-Instruct";
  d.spec.params_b = 8;
  d.spec.parameters["tensor-parallel-size"] = alloc::ParamValue::List(std::move(tp));
  d.server_command = {"server", "--port", "{port}", "--tp", "{tensor-parallel-size}"};
  return d;
}

class TaskManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clock_.Set(Seconds{1000});
    auto store = store::Store::Open(":memory:", clock_.Now());
    ASSERT_TRUE(store) << store.error().ToString();
    store_ = std::move(*store);
  }
  void TearDown() override { manager_.reset(); }

  void Open(Seconds recheck_interval = Seconds{0.02}) {
    TaskManagerOptions options;
    options.state_dir = "/tmp/gpuscale-task-manager-test";
    options.recheck_interval = recheck_interval;
    options.publish = [this](std::vector<store::EventRow> events) {
      std::lock_guard<std::mutex> lock(events_mu_);
      for (store::EventRow& e : events) events_.push_back(std::move(e));
    };
    auto manager = TaskManager::Open(ledger_, monitor_, *store_, clock_, std::move(options));
    ASSERT_TRUE(manager) << manager.error().ToString();
    manager_ = std::move(*manager);
  }
  std::vector<std::string> EventKinds() {
    std::lock_guard<std::mutex> lock(events_mu_);
    std::vector<std::string> kinds;
    for (const store::EventRow& e : events_) kinds.push_back(e.kind);
    return kinds;
  }
  // A replica holds three of the four GPUs; a task of one 2-GPU experiment, which cannot
  // start, waits up to 300 s. Starts the (opened) manager; returns the task and experiment ids.
  std::pair<int64_t, int64_t> QueueTwoGpuExperimentBehindAReplica() {
    EXPECT_TRUE(ledger_.Allocate(*monitor_.Snapshot(), alloc::SelectionRequest{3, 0, 100, {}, {}},
                                 "replica/chat-0", clock_.Now()));
    task::TaskDefinition d = Definition({int64_t{2}});
    d.gpu_wait_timeout = Seconds{300};
    Result<task::TaskRecord> task = manager_->Submit(d, "");
    EXPECT_TRUE(task) << task.error().ToString();
    if (!task) return {0, 0};
    manager_->Start();
    return {task->id, (*manager_->ListExperiments(task->id))[0].id};
  }
  // Polls (real time) until the experiment leaves `status`.
  task::ExperimentRecord WaitNot(int64_t id, task::ExperimentStatus status) {
    Result<task::ExperimentRecord> e = manager_->GetExperiment(id);
    gpuscale::testing::WaitUntil(
        [&] {
          e = manager_->GetExperiment(id);
          return !e || e->status != status;
        },
        std::chrono::seconds(5), std::chrono::milliseconds(5));
    return e ? *e : task::ExperimentRecord{};
  }

  ManualClock clock_;
  gpu::SimulatedBackend backend_;  // 4 idle H100s
  gpu::Monitor monitor_{backend_, clock_};
  alloc::LeaseLedger ledger_;
  std::unique_ptr<store::Store> store_;
  std::mutex events_mu_;
  std::vector<store::EventRow> events_;
  std::unique_ptr<TaskManager> manager_;
};

TEST_F(TaskManagerTest, SubmitStoresQueuedExperimentsAndAnnouncesThem) {
  Open();
  Result<task::TaskRecord> task = manager_->Submit(Definition({int64_t{1}, int64_t{2}}), "text");
  ASSERT_TRUE(task) << task.error().ToString();
  EXPECT_EQ(task->status, task::TaskStatus::kQueued);
  EXPECT_EQ(task->experiments_total, 2);
  Result<std::vector<task::ExperimentRecord>> experiments = manager_->ListExperiments(task->id);
  ASSERT_TRUE(experiments);
  ASSERT_EQ(experiments->size(), 2u);
  EXPECT_EQ((*experiments)[0].gpus_required, 1);
  EXPECT_EQ((*experiments)[1].gpus_required, 2);
  EXPECT_EQ((*experiments)[1].status, task::ExperimentStatus::kQueued);
  EXPECT_EQ((*experiments)[1].queued_at, Seconds{1000});
  EXPECT_THAT(EventKinds(), ::testing::ElementsAre("task_submitted", "experiment_queued",
                                                   "experiment_queued"));
  EXPECT_EQ(manager_->ListTasks().size(), 1u);
  EXPECT_EQ(manager_->GetTask(task->id)->source_text, "text");
}

TEST_F(TaskManagerTest, MoreGpusThanExistFailsAtSubmitAndStoresNothing) {
  Open();
  Result<task::TaskRecord> task = manager_->Submit(Definition({int64_t{2}, int64_t{8}}), "");
  ASSERT_FALSE(task);
  EXPECT_EQ(task.error().code, ErrorCode::kResourceExhausted);
  EXPECT_THAT(task.error().message, HasSubstr("needs 8 GPUs but this machine has 4"));
  EXPECT_TRUE(manager_->ListTasks().empty());
  EXPECT_TRUE(EventKinds().empty());
}

TEST_F(TaskManagerTest, BadDefinitionsAreInvalidArguments) {
  Open();
  task::TaskDefinition no_command = Definition({int64_t{1}});
  no_command.server_command.clear();
  EXPECT_EQ(manager_->Submit(no_command, "").error().field, "server.command");
  task::TaskDefinition bad_placeholder = Definition({int64_t{1}});
  bad_placeholder.server_command.push_back("{nope}");
  EXPECT_EQ(manager_->Submit(bad_placeholder, "").error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(manager_->ListTasks().empty());
}

TEST_F(TaskManagerTest, CancelEndsQueuedExperimentsAndOnlyOnce) {
  Open();  // not started: nothing leaves the queue
  Result<task::TaskRecord> task = manager_->Submit(Definition({int64_t{1}, int64_t{2}}), "");
  ASSERT_TRUE(task);
  Result<task::TaskRecord> cancelled = manager_->CancelTask(task->id);
  ASSERT_TRUE(cancelled) << cancelled.error().ToString();
  EXPECT_EQ(cancelled->status, task::TaskStatus::kCancelled);
  EXPECT_EQ(cancelled->experiments_done, 2);
  ASSERT_TRUE(cancelled->finished_at.has_value());
  Result<std::vector<task::ExperimentRecord>> experiments = manager_->ListExperiments(task->id);
  ASSERT_TRUE(experiments);
  for (const task::ExperimentRecord& e : *experiments) {
    EXPECT_EQ(e.status, task::ExperimentStatus::kCancelled);
    EXPECT_EQ(e.message, "task cancelled");
  }
  EXPECT_EQ(manager_->CancelTask(task->id).error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(manager_->CancelTask(99).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(manager_->GetExperiment(99).error().code, ErrorCode::kNotFound);
}

TEST_F(TaskManagerTest, GpuWaitTimesOutWithTheAllocatorsMessage) {
  Open();
  const auto [task_id, id] = QueueTwoGpuExperimentBehindAReplica();
  manager_->Wake();
  // Rounds that do not fit run on the scheduler's own thread; nothing signals "a round ran
  // and changed nothing", so the check that nothing happens gives it real time.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(manager_->GetExperiment(id)->status, task::ExperimentStatus::kQueued);
  clock_.Advance(Seconds{301});
  manager_->Wake();
  task::ExperimentRecord e = WaitNot(id, task::ExperimentStatus::kQueued);
  EXPECT_EQ(e.status, task::ExperimentStatus::kFailed);
  EXPECT_THAT(e.message, HasSubstr("no GPUs after 300 s: need 2 GPUs"));
  EXPECT_THAT(e.message, HasSubstr("leased to replica/chat-0"));
  EXPECT_EQ(manager_->GetTask(task_id)->status, task::TaskStatus::kFailed);
  EXPECT_EQ(ledger_.size(), 3u);  // the experiment never leased anything
}

TEST_F(TaskManagerTest, RetuneChangesTheRecheckInterval) {
  // As above, but nothing wakes the scheduler after the deadline: only its periodic re-check
  // can time the experiment out. An hour apart at start; retuned to 20 ms.
  Open(Seconds{3600});
  const int64_t id = QueueTwoGpuExperimentBehindAReplica().second;
  manager_->Retune({Seconds{0.02}, 3, Seconds{10}});
  // The round Retune asks for, on the scheduler's thread (real time, as above).
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(manager_->GetExperiment(id)->status, task::ExperimentStatus::kQueued);
  clock_.Advance(Seconds{301});
  EXPECT_EQ(WaitNot(id, task::ExperimentStatus::kQueued).status, task::ExperimentStatus::kFailed);
}

TEST_F(TaskManagerTest, RestartFailsRunningExperimentsAndRequeuesQueuedOnes) {
  // What a killed daemon left: a task with one running experiment (holding GPU 0 in the old
  // ledger) and one queued.
  store::TaskRow task;
  task.name = "sweep";
  task.source_text = kTaskYaml;
  task.status = "running";
  task.experiments_total = 2;
  task.created_at = Seconds{900};
  store::ExperimentRow running;
  running.index = 0;
  running.status = "running";
  running.parameters = R"({"tensor-parallel-size":1})";
  running.queued_at = Seconds{900};
  running.started_at = Seconds{901};
  store::ExperimentRow queued = running;
  queued.index = 1;
  queued.status = "queued";
  queued.parameters = R"({"tensor-parallel-size":2})";
  queued.gpus_required = 2;
  queued.started_at.reset();
  Result<store::AddedTask> added = store_->tasks().AddTask(task, {running, queued});
  ASSERT_TRUE(added) << added.error().ToString();
  const int64_t running_id = added->experiment_ids[0];
  ASSERT_TRUE(ledger_.Allocate(*monitor_.Snapshot(), alloc::SelectionRequest{},
                               LeaseOwnerOf(running_id), Seconds{901}));

  Open();
  task::ExperimentRecord failed = *manager_->GetExperiment(running_id);
  EXPECT_EQ(failed.status, task::ExperimentStatus::kFailed);
  EXPECT_THAT(failed.message, HasSubstr("daemon restarted while the experiment was running"));
  EXPECT_TRUE(failed.finished_at.has_value());
  EXPECT_EQ(ledger_.size(), 0u);  // no leak
  task::ExperimentRecord requeued = *manager_->GetExperiment(added->experiment_ids[1]);
  EXPECT_EQ(requeued.status, task::ExperimentStatus::kQueued);
  EXPECT_EQ(requeued.queued_at, Seconds{900});  // original order and deadline
  Result<task::TaskRecord> t = manager_->GetTask(added->task_id);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->status, task::TaskStatus::kRunning);
  EXPECT_EQ(t->experiments_done, 1);
  EXPECT_EQ(t->definition.server_command.front(), "server");  // re-parsed from the source

  // Cancelling the resumed task ends it (the queued experiment was really queued again).
  ASSERT_TRUE(manager_->CancelTask(added->task_id));
  EXPECT_EQ(manager_->GetExperiment(added->experiment_ids[1])->status,
            task::ExperimentStatus::kCancelled);
}

}  // namespace
}  // namespace gpuscale::experiments
