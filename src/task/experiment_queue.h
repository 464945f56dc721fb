// ExperimentQueue: the order in which queued experiments get GPUs. Pure bookkeeping (no
// clock reads, no threads): the TaskManager asks it what to try next whenever GPUs may have
// been freed (a lease release) and on a periodic re-check.
//
// Policy: highest priority first, then FIFO (queue sequence). The head experiment is tried
// first; when it does not fit, smaller experiments behind it may backfill -- but each time
// one does, the head's skip count grows, and once it reaches `max_head_skips` the head holds
// a reservation: nothing else starts until the head has started (or left the queue), so a
// large experiment cannot starve behind a stream of small ones. Experiments of a task at its
// `max_parallel` cap are passed over without counting as skips (and a reserving head whose
// task is at its cap blocks nothing: it could not start anyway).
//
// Usage per scheduling round:
//   for (auto id = q.NextCandidate(running_by_task); id; id = q.NextCandidate(...)) {
//     if (TryStart(*id)) q.Started(*id); else q.DidNotFit(*id);
//   }
// NextCandidate never returns an experiment twice in one round; BeginRound() resets that.
//
// Thread-safety: not thread-safe; the TaskManager holds its mutex around every call.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "core/clock.h"

namespace gpuscale::task {

struct QueuedExperiment {
  int64_t experiment_id = 0;
  int64_t task_id = 0;
  int priority = 0;
  int gpus = 1;              // requirement, for backfill ordering and reporting
  int task_max_parallel = 0; // 0 = no cap
  Seconds queued_at{0};
  Seconds deadline{0};       // queued_at + gpu wait timeout
};

class ExperimentQueue {
 public:
  explicit ExperimentQueue(int max_head_skips = 3);

  // Adds an experiment (sequence = insertion order). REQUIRES: id not already queued.
  void Push(const QueuedExperiment& experiment);
  // Removes an experiment (cancelled, timed out). Returns false when it was not queued.
  bool Remove(int64_t experiment_id);

  // Starts a scheduling round (forget which experiments were offered).
  void BeginRound();
  // The next experiment to try in this round, given how many experiments of each task are
  // running now; nullopt when none may start (empty, all offered, reservation held by a head
  // that did not fit, or every remaining task is at its cap).
  std::optional<int64_t> NextCandidate(const std::map<int64_t, int>& running_by_task);
  // The offered experiment got its GPUs: leaves the queue; if it was behind a head that did
  // not fit this round, the head's skip count grows.
  void Started(int64_t experiment_id);
  // The offered experiment did not fit this round.
  void DidNotFit(int64_t experiment_id);

  // Changes the reservation threshold (a config reload): from now on a head reserves once
  // passed `max_head_skips` times. Entries already passed that often reserve at once; ones
  // holding a reservation under the old threshold that the new one would not give release it.
  void SetMaxHeadSkips(int max_head_skips);

  // Experiments whose deadline is <= now, removed from the queue (they time out).
  std::vector<QueuedExperiment> TakeExpired(Seconds now);

  // Queue order (priority, then FIFO), for the API and tests.
  std::vector<QueuedExperiment> Snapshot() const;
  // The experiment currently holding a reservation, if any.
  std::optional<int64_t> reserved() const;
  size_t size() const;
  bool empty() const;

 private:
  struct Entry {
    QueuedExperiment experiment;
    int64_t sequence = 0;
    int skips = 0;
    bool offered = false;    // offered in this round
    bool missed = false;     // offered in this round and did not fit
    bool reserving = false;  // skips reached max_head_skips (or it missed with max 0)
  };
  std::vector<Entry>::iterator Find(int64_t experiment_id);
  std::vector<Entry> entries_;  // kept sorted: priority desc, then sequence asc
  int64_t next_sequence_ = 0;
  int max_head_skips_;
  std::optional<int64_t> head_missed_;  // head offered this round and did not fit
};

}  // namespace gpuscale::task
