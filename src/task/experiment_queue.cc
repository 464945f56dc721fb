#include "task/experiment_queue.h"

#include <algorithm>

namespace gpuscale::task {
namespace {

bool AtCap(const QueuedExperiment& e, const std::map<int64_t, int>& running_by_task) {
  if (e.task_max_parallel <= 0) return false;
  auto it = running_by_task.find(e.task_id);
  return it != running_by_task.end() && it->second >= e.task_max_parallel;
}

}  // namespace

ExperimentQueue::ExperimentQueue(int max_head_skips)
    : max_head_skips_(std::max(0, max_head_skips)) {}

std::vector<ExperimentQueue::Entry>::iterator ExperimentQueue::Find(int64_t experiment_id) {
  return std::find_if(entries_.begin(), entries_.end(),
                      [&](const Entry& e) { return e.experiment.experiment_id == experiment_id; });
}

void ExperimentQueue::Push(const QueuedExperiment& experiment) {
  Entry entry{experiment, next_sequence_++};
  // Insert after every entry of the same or higher priority: FIFO within a priority.
  auto at = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) {
    return e.experiment.priority < experiment.priority;
  });
  entries_.insert(at, std::move(entry));
}

bool ExperimentQueue::Remove(int64_t experiment_id) {
  auto it = Find(experiment_id);
  if (it == entries_.end()) return false;
  if (head_missed_ == experiment_id) head_missed_.reset();
  entries_.erase(it);
  return true;
}

void ExperimentQueue::BeginRound() {
  for (Entry& e : entries_) e.offered = e.missed = false;
  head_missed_.reset();
}

std::optional<int64_t> ExperimentQueue::NextCandidate(
    const std::map<int64_t, int>& running_by_task) {
  // A reserving experiment that did not fit this round blocks everything behind it: the
  // GPUs that free up must go to it, not to the next small experiment.
  for (const Entry& e : entries_) {
    if (e.reserving && e.missed) return std::nullopt;
  }
  for (Entry& e : entries_) {
    if (e.offered || AtCap(e.experiment, running_by_task)) continue;
    e.offered = true;
    return e.experiment.experiment_id;
  }
  return std::nullopt;
}

void ExperimentQueue::Started(int64_t experiment_id) {
  auto it = Find(experiment_id);
  if (it == entries_.end()) return;
  entries_.erase(it);
  if (!head_missed_ || *head_missed_ == experiment_id) return;
  // A backfill passed the head: count it, and reserve once the head was passed often enough.
  auto head = Find(*head_missed_);
  if (head == entries_.end()) return;
  ++head->skips;
  if (head->skips >= max_head_skips_) head->reserving = true;
}

void ExperimentQueue::DidNotFit(int64_t experiment_id) {
  auto it = Find(experiment_id);
  if (it == entries_.end()) return;
  it->missed = true;
  if (max_head_skips_ == 0) it->reserving = true;  // no backfill at all
  if (!head_missed_) head_missed_ = experiment_id;
}

void ExperimentQueue::SetMaxHeadSkips(int max_head_skips) {
  max_head_skips_ = std::max(0, max_head_skips);
  for (Entry& e : entries_) {
    // With no backfill (0) an entry reserves when it misses; one that never did waits for that.
    e.reserving = e.skips >= max_head_skips_ && (e.skips > 0 || e.reserving);
  }
}

std::vector<QueuedExperiment> ExperimentQueue::TakeExpired(Seconds now) {
  std::vector<QueuedExperiment> expired;
  std::erase_if(entries_, [&](const Entry& e) {
    if (e.experiment.deadline > now) return false;
    expired.push_back(e.experiment);
    if (head_missed_ == e.experiment.experiment_id) head_missed_.reset();
    return true;
  });
  return expired;
}

std::vector<QueuedExperiment> ExperimentQueue::Snapshot() const {
  std::vector<QueuedExperiment> out;
  out.reserve(entries_.size());
  for (const Entry& e : entries_) out.push_back(e.experiment);
  return out;
}

std::optional<int64_t> ExperimentQueue::reserved() const {
  for (const Entry& e : entries_) {
    if (e.reserving) return e.experiment.experiment_id;
  }
  return std::nullopt;
}

size_t ExperimentQueue::size() const { return entries_.size(); }
bool ExperimentQueue::empty() const { return entries_.empty(); }

}  // namespace gpuscale::task
