#include "task/task_types.h"

#include <array>
#include <utility>

namespace gpuscale::task {
namespace {

constexpr std::array<std::pair<ExperimentStatus, std::string_view>, 6> kExperimentNames = {{
    {ExperimentStatus::kQueued, "queued"},
    {ExperimentStatus::kStarting, "starting"},
    {ExperimentStatus::kRunning, "running"},
    {ExperimentStatus::kSucceeded, "succeeded"},
    {ExperimentStatus::kFailed, "failed"},
    {ExperimentStatus::kCancelled, "cancelled"},
}};

constexpr std::array<std::pair<TaskStatus, std::string_view>, 5> kTaskNames = {{
    {TaskStatus::kQueued, "queued"},
    {TaskStatus::kRunning, "running"},
    {TaskStatus::kSucceeded, "succeeded"},
    {TaskStatus::kFailed, "failed"},
    {TaskStatus::kCancelled, "cancelled"},
}};

}  // namespace

std::string_view ExperimentStatusName(ExperimentStatus status) {
  for (const auto& [value, name] : kExperimentNames) {
    if (value == status) return name;
  }
  return "unknown";
}

std::optional<ExperimentStatus> ParseExperimentStatus(std::string_view text) {
  for (const auto& [value, name] : kExperimentNames) {
    if (name == text) return value;
  }
  return std::nullopt;
}

std::string_view TaskStatusName(TaskStatus status) {
  for (const auto& [value, name] : kTaskNames) {
    if (value == status) return name;
  }
  return "unknown";
}

std::optional<TaskStatus> ParseTaskStatus(std::string_view text) {
  for (const auto& [value, name] : kTaskNames) {
    if (name == text) return value;
  }
  return std::nullopt;
}

}  // namespace gpuscale::task
