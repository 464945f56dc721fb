#include "task/experiment_queue.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>

namespace gpuscale::task {
namespace {

QueuedExperiment Exp(int64_t id, int gpus, int priority = 0, int64_t task_id = 1,
                     int max_parallel = 0, double deadline = 100) {
  QueuedExperiment e;
  e.experiment_id = id;
  e.task_id = task_id;
  e.priority = priority;
  e.gpus = gpus;
  e.task_max_parallel = max_parallel;
  e.deadline = Seconds(deadline);
  return e;
}

// One scheduling round against `free_gpus`: starts what fits, in the order the queue offers.
// Returns the started ids in order; `running` is updated per task.
std::vector<int64_t> Round(ExperimentQueue& q, int& free_gpus, std::map<int64_t, int>& running) {
  std::map<int64_t, QueuedExperiment> by_id;
  for (const QueuedExperiment& e : q.Snapshot()) by_id[e.experiment_id] = e;
  std::vector<int64_t> started;
  q.BeginRound();
  for (auto id = q.NextCandidate(running); id; id = q.NextCandidate(running)) {
    const QueuedExperiment& e = by_id.at(*id);
    if (e.gpus <= free_gpus) {
      free_gpus -= e.gpus;
      ++running[e.task_id];
      q.Started(*id);
      started.push_back(*id);
    } else {
      q.DidNotFit(*id);
    }
  }
  return started;
}

std::vector<int64_t> Ids(const ExperimentQueue& q) {
  std::vector<int64_t> ids;
  for (const QueuedExperiment& e : q.Snapshot()) ids.push_back(e.experiment_id);
  return ids;
}

TEST(ExperimentQueueTest, FifoWithinPriorityAndHigherPriorityFirst) {
  ExperimentQueue q;
  q.Push(Exp(1, 1, 0));
  q.Push(Exp(2, 1, 5));
  q.Push(Exp(3, 1, 0));
  q.Push(Exp(4, 1, 5));
  q.Push(Exp(5, 1, -1));
  EXPECT_EQ(Ids(q), (std::vector<int64_t>{2, 4, 1, 3, 5}));
  int free_gpus = 3;
  std::map<int64_t, int> running;
  EXPECT_EQ(Round(q, free_gpus, running), (std::vector<int64_t>{2, 4, 1}));
  EXPECT_EQ(Ids(q), (std::vector<int64_t>{3, 5}));
}

TEST(ExperimentQueueTest, SmallExperimentBackfillsWhileHeadDoesNotFit) {
  ExperimentQueue q(3);
  q.Push(Exp(1, 4));  // head needs 4
  q.Push(Exp(2, 1));
  q.Push(Exp(3, 1));
  int free_gpus = 2;
  std::map<int64_t, int> running;
  EXPECT_EQ(Round(q, free_gpus, running), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Ids(q), (std::vector<int64_t>{1}));
  EXPECT_EQ(q.reserved(), std::nullopt);  // two skips < 3
}

TEST(ExperimentQueueTest, HeadReservesAfterMaxSkipsAndBlocksTheRest) {
  ExperimentQueue q(2);
  q.Push(Exp(1, 4));
  for (int64_t id = 2; id <= 6; ++id) q.Push(Exp(id, 1));
  int free_gpus = 2;
  std::map<int64_t, int> running;
  // Two backfills reach the limit: the head reserves.
  EXPECT_EQ(Round(q, free_gpus, running), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(q.reserved(), 1);
  // One GPU frees: still not enough for the head, and nothing else may take it.
  free_gpus = 1;
  EXPECT_EQ(Round(q, free_gpus, running), (std::vector<int64_t>{}));
  EXPECT_EQ(free_gpus, 1);
  // Four GPUs free: the head starts and the reservation is gone.
  free_gpus = 4;
  EXPECT_EQ(Round(q, free_gpus, running), (std::vector<int64_t>{1}));
  EXPECT_EQ(q.reserved(), std::nullopt);
  free_gpus = 3;
  EXPECT_EQ(Round(q, free_gpus, running), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_TRUE(q.empty());
}

TEST(ExperimentQueueTest, RemovingTheReservingHeadReleasesTheReservation) {
  ExperimentQueue q(1);
  q.Push(Exp(1, 8));
  q.Push(Exp(2, 1));
  q.Push(Exp(3, 1));
  int free_gpus = 1;
  std::map<int64_t, int> running;
  EXPECT_EQ(Round(q, free_gpus, running), (std::vector<int64_t>{2}));
  EXPECT_EQ(q.reserved(), 1);
  free_gpus = 1;
  EXPECT_EQ(Round(q, free_gpus, running), (std::vector<int64_t>{}));
  EXPECT_TRUE(q.Remove(1));
  EXPECT_FALSE(q.Remove(1));
  EXPECT_EQ(q.reserved(), std::nullopt);
  EXPECT_EQ(Round(q, free_gpus, running), (std::vector<int64_t>{3}));
}

TEST(ExperimentQueueTest, TaskAtItsCapIsPassedOverWithoutCountingAsSkip) {
  ExperimentQueue q(1);
  q.Push(Exp(1, 1, 0, /*task_id=*/7, /*max_parallel=*/1));
  q.Push(Exp(2, 1, 0, 7, 1));
  q.Push(Exp(3, 1, 0, 8, 0));
  int free_gpus = 3;
  std::map<int64_t, int> running;
  // Experiment 2 is passed over (task 7 at its cap once 1 runs); 3 starts.
  EXPECT_EQ(Round(q, free_gpus, running), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(Ids(q), (std::vector<int64_t>{2}));
  EXPECT_EQ(q.reserved(), std::nullopt);
  // Nothing to offer while task 7 is at its cap.
  q.BeginRound();
  EXPECT_EQ(q.NextCandidate(running), std::nullopt);
  running[7] = 0;
  EXPECT_EQ(q.NextCandidate(running), 2);
}

TEST(ExperimentQueueTest, NeverOffersTheSameExperimentTwiceInARound) {
  ExperimentQueue q;
  q.Push(Exp(1, 4));
  q.Push(Exp(2, 4));
  std::map<int64_t, int> running;
  q.BeginRound();
  EXPECT_EQ(q.NextCandidate(running), 1);
  q.DidNotFit(1);
  EXPECT_EQ(q.NextCandidate(running), 2);
  q.DidNotFit(2);
  EXPECT_EQ(q.NextCandidate(running), std::nullopt);
  q.BeginRound();
  EXPECT_EQ(q.NextCandidate(running), 1);
}

TEST(ExperimentQueueTest, TakesExpiredExperimentsOut) {
  ExperimentQueue q;
  q.Push(Exp(1, 1, 0, 1, 0, /*deadline=*/10));
  q.Push(Exp(2, 1, 0, 1, 0, 30));
  q.Push(Exp(3, 1, 0, 1, 0, 20));
  EXPECT_TRUE(q.TakeExpired(Seconds(5)).empty());
  std::vector<QueuedExperiment> expired = q.TakeExpired(Seconds(20));
  ASSERT_EQ(expired.size(), 2u);
  EXPECT_EQ(expired[0].experiment_id, 1);
  EXPECT_EQ(expired[1].experiment_id, 3);
  EXPECT_EQ(Ids(q), (std::vector<int64_t>{2}));
  EXPECT_EQ(q.size(), 1u);
}

TEST(ExperimentQueueTest, ZeroSkipsMeansNoBackfill) {
  ExperimentQueue q(0);
  q.Push(Exp(1, 4));
  q.Push(Exp(2, 1));
  int free_gpus = 2;
  std::map<int64_t, int> running;
  EXPECT_EQ(Round(q, free_gpus, running), (std::vector<int64_t>{}));
  EXPECT_EQ(q.reserved(), 1);
}

TEST(ExperimentQueueTest, ANewThresholdAppliesToHeadsAlreadyPassed) {
  ExperimentQueue q(3);
  q.Push(Exp(1, 4));
  for (int64_t id = 2; id <= 5; ++id) q.Push(Exp(id, 1));
  int free_gpus = 2;
  std::map<int64_t, int> running;
  EXPECT_EQ(Round(q, free_gpus, running), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(q.reserved(), std::nullopt);  // passed twice, under 3
  // Lowered to 2 (a reload): the head was passed that often and reserves now.
  q.SetMaxHeadSkips(2);
  EXPECT_EQ(q.reserved(), 1);
  free_gpus = 1;
  EXPECT_EQ(Round(q, free_gpus, running), (std::vector<int64_t>{}));
  // Raised to 5: the reservation goes and backfill resumes.
  q.SetMaxHeadSkips(5);
  EXPECT_EQ(q.reserved(), std::nullopt);
  EXPECT_EQ(Round(q, free_gpus, running), (std::vector<int64_t>{4}));
  // 0 (no backfill): a head passed before reserves at once ...
  q.SetMaxHeadSkips(0);
  EXPECT_EQ(q.reserved(), 1);
  EXPECT_EQ(q.size(), 2u);

  // ... one never passed only once it misses.
  ExperimentQueue fresh(3);
  fresh.Push(Exp(1, 4));
  fresh.Push(Exp(2, 1));
  fresh.SetMaxHeadSkips(0);
  EXPECT_EQ(fresh.reserved(), std::nullopt);
  EXPECT_EQ(Round(fresh, free_gpus, running), (std::vector<int64_t>{}));
  EXPECT_EQ(fresh.reserved(), 1);
}

}  // namespace
}  // namespace gpuscale::task
