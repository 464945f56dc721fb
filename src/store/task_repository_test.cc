#include "store/task_repository.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "store/store.h"

namespace gpuscale::store {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class TaskRepositoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = Store::Open(":memory:", Seconds{0});
    ASSERT_TRUE(store) << store.error().ToString();
    store_ = std::move(*store);
  }
  static TaskRow Task(const std::string& name, Seconds created) {
    TaskRow task;
    task.name = name;
    task.source_text = "name: " + name + "\n";
    task.status = "queued";
    task.priority = 2;
    task.experiments_total = 2;
    task.created_at = created;
    return task;
  }
  static ExperimentRow Experiment(int index) {
    ExperimentRow e;
    e.index = index;
    e.status = "queued";
    e.parameters = R"({"tp":)" + std::to_string(index + 1) + "}";
    e.gpus_required = index + 1;
    e.memory_mb_per_gpu = 19000;
    e.queued_at = Seconds{10};
    return e;
  }
  TaskRepository& tasks() { return store_->tasks(); }
  std::unique_ptr<Store> store_;
};

TEST_F(TaskRepositoryTest, AddTaskStoresTaskAndExperimentsWithFreshIds) {
  Result<AddedTask> added = tasks().AddTask(Task("sweep", Seconds{5}),
                                            {Experiment(0), Experiment(1)});
  ASSERT_TRUE(added) << added.error().ToString();
  ASSERT_EQ(added->experiment_ids.size(), 2u);
  EXPECT_NE(added->experiment_ids[0], added->experiment_ids[1]);

  Result<TaskRow> task = tasks().GetTask(added->task_id);
  ASSERT_TRUE(task);
  EXPECT_EQ(task->name, "sweep");
  EXPECT_EQ(task->source_text, "name: sweep\n");
  EXPECT_EQ(task->priority, 2);
  EXPECT_EQ(task->experiments_total, 2);
  EXPECT_FALSE(task->best_experiment_id.has_value());
  EXPECT_FALSE(task->finished_at.has_value());
  EXPECT_EQ(task->created_at, Seconds{5});

  Result<std::vector<ExperimentRow>> experiments = tasks().ListExperiments(added->task_id);
  ASSERT_TRUE(experiments);
  ASSERT_EQ(experiments->size(), 2u);
  EXPECT_EQ((*experiments)[1].id, added->experiment_ids[1]);
  EXPECT_EQ((*experiments)[1].task_id, added->task_id);
  EXPECT_EQ((*experiments)[1].index, 1);
  EXPECT_EQ((*experiments)[1].parameters, R"({"tp":2})");
  EXPECT_EQ((*experiments)[1].gpus_required, 2);
  EXPECT_EQ((*experiments)[1].results, "{}");
  EXPECT_FALSE((*experiments)[1].started_at.has_value());
}

TEST_F(TaskRepositoryTest, AddTaskIsAllOrNothing) {
  // Two experiments with the same index violate UNIQUE(task_id, idx): nothing is stored.
  Result<AddedTask> added = tasks().AddTask(Task("dup", Seconds{1}),
                                            {Experiment(0), Experiment(0)});
  ASSERT_FALSE(added);
  EXPECT_EQ(added.error().code, ErrorCode::kFailedPrecondition);
  Result<std::vector<TaskRow>> all = tasks().ListTasks();
  ASSERT_TRUE(all);
  EXPECT_TRUE(all->empty());
  EXPECT_EQ(tasks().AddTask(Task("", Seconds{1}), {}).error().field, "name");
}

TEST_F(TaskRepositoryTest, UpdatesRoundTripEveryColumn) {
  Result<AddedTask> added = tasks().AddTask(Task("sweep", Seconds{5}), {Experiment(0)});
  ASSERT_TRUE(added);
  ExperimentRow e = *tasks().GetExperiment(added->experiment_ids[0]);
  e.status = "succeeded";
  e.results = R"({"bench":{"requests_completed":3}})";
  e.server_argv = {"gpuscale", "emulate", "--port", "4100"};
  e.pid = 4242;
  e.port = 4100;
  e.lease_owner = "experiment/1";
  e.log_path = "/tmp/x.log";
  e.message = "ok";
  e.started_at = Seconds{11};
  e.finished_at = Seconds{12.5};
  e.index = 7;  // task and index are fixed when the task is added
  e.task_id = added->task_id + 1;
  ASSERT_TRUE(tasks().UpdateExperiment(e));
  Result<ExperimentRow> read = tasks().GetExperiment(e.id);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->index, 0);
  EXPECT_EQ(read->task_id, added->task_id);
  EXPECT_EQ(read->status, "succeeded");
  EXPECT_EQ(read->results, e.results);
  EXPECT_THAT(read->server_argv, ElementsAre("gpuscale", "emulate", "--port", "4100"));
  EXPECT_EQ(read->pid, 4242);
  EXPECT_EQ(read->port, 4100);
  EXPECT_EQ(read->lease_owner, "experiment/1");
  EXPECT_EQ(read->log_path, "/tmp/x.log");
  EXPECT_EQ(read->started_at, Seconds{11});
  EXPECT_EQ(read->finished_at, Seconds{12.5});

  TaskRow task = *tasks().GetTask(added->task_id);
  task.status = "succeeded";
  task.experiments_done = 1;
  task.best_experiment_id = e.id;
  task.finished_at = Seconds{13};
  task.message = "done";
  ASSERT_TRUE(tasks().UpdateTask(task));
  Result<TaskRow> t = tasks().GetTask(task.id);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->status, "succeeded");
  EXPECT_EQ(t->experiments_done, 1);
  EXPECT_EQ(t->best_experiment_id, e.id);
  EXPECT_EQ(t->finished_at, Seconds{13});
  EXPECT_EQ(t->message, "done");

  // Clearing optional columns writes NULL back.
  task.best_experiment_id.reset();
  task.finished_at.reset();
  ASSERT_TRUE(tasks().UpdateTask(task));
  EXPECT_FALSE(tasks().GetTask(task.id)->best_experiment_id.has_value());
  EXPECT_FALSE(tasks().GetTask(task.id)->finished_at.has_value());
}

TEST_F(TaskRepositoryTest, UnknownIdsAreNotFound) {
  EXPECT_EQ(tasks().GetTask(7).error().code, ErrorCode::kNotFound);
  EXPECT_THAT(tasks().GetTask(7).error().message, HasSubstr("no task 7"));
  EXPECT_EQ(tasks().GetExperiment(9).error().code, ErrorCode::kNotFound);
  TaskRow task = Task("x", Seconds{0});
  task.id = 7;
  EXPECT_EQ(tasks().UpdateTask(task).error().code, ErrorCode::kNotFound);
  ExperimentRow e = Experiment(0);
  e.id = 9;
  EXPECT_EQ(tasks().UpdateExperiment(e).error().code, ErrorCode::kNotFound);
  Result<std::vector<ExperimentRow>> none = tasks().ListExperiments(7);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST_F(TaskRepositoryTest, ListsTasksNewestFirstAndExperimentsByStatus) {
  Result<AddedTask> a = tasks().AddTask(Task("a", Seconds{1}), {Experiment(0), Experiment(1)});
  Result<AddedTask> b = tasks().AddTask(Task("b", Seconds{2}), {Experiment(0)});
  ASSERT_TRUE(a && b);
  Result<std::vector<TaskRow>> all = tasks().ListTasks();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].name, "b");
  EXPECT_EQ((*all)[1].name, "a");

  ExperimentRow running = *tasks().GetExperiment(a->experiment_ids[1]);
  running.status = "running";
  ASSERT_TRUE(tasks().UpdateExperiment(running));
  ExperimentRow failed = *tasks().GetExperiment(b->experiment_ids[0]);
  failed.status = "failed";
  ASSERT_TRUE(tasks().UpdateExperiment(failed));

  auto ids = [](const std::vector<ExperimentRow>& rows) {
    std::vector<int64_t> out;
    for (const ExperimentRow& r : rows) out.push_back(r.id);
    return out;
  };
  Result<std::vector<ExperimentRow>> active =
      tasks().ListExperimentsByStatus({"queued", "starting", "running"});
  ASSERT_TRUE(active);
  EXPECT_THAT(ids(*active), ElementsAre(a->experiment_ids[0], a->experiment_ids[1]));
  Result<std::vector<ExperimentRow>> ended = tasks().ListExperimentsByStatus({"failed"});
  ASSERT_TRUE(ended);
  EXPECT_THAT(ids(*ended), ElementsAre(b->experiment_ids[0]));
  EXPECT_TRUE(tasks().ListExperimentsByStatus({})->empty());
}

}  // namespace
}  // namespace gpuscale::store
