#include "daemon/task_service.h"

#include <utility>

namespace gpuscale::daemon {
namespace {

Error TasksDisabled() {
  return Error{ErrorCode::kUnavailable, "the tasks service is not running in this daemon", ""};
}

}  // namespace

TaskService::~TaskService() {
  if (ledger_ != nullptr) ledger_->SetReleaseListener({});
}

Status TaskService::Open(alloc::LeaseLedger& ledger, gpu::Monitor& monitor, store::Store& store,
                         Clock& clock, experiments::TaskManagerOptions options) {
  GS_ASSIGN_OR_RETURN(
      manager_, experiments::TaskManager::Open(ledger, monitor, store, clock, std::move(options)));
  ledger_ = &ledger;
  experiments::TaskManager* manager = manager_.get();
  ledger.SetReleaseListener([manager] { manager->Wake(); });
  return OkStatus();
}

void TaskService::Start() {
  if (manager_) manager_->Start();
}

bool TaskService::Shutdown() {
  if (!manager_) return false;
  manager_->Shutdown();
  return true;
}

void TaskService::Retune(const experiments::TaskTuning& tuning) {
  if (manager_) manager_->Retune(tuning);
}

Result<task::TaskRecord> TaskService::Submit(task::TaskDefinition definition,
                                             std::string source_text) {
  if (!manager_) return Unexpected<Error>(TasksDisabled());
  return manager_->Submit(std::move(definition), std::move(source_text));
}

std::vector<task::TaskRecord> TaskService::ListTasks() {
  if (!manager_) return {};
  return manager_->ListTasks();
}

Result<task::TaskRecord> TaskService::GetTask(int64_t id) {
  if (!manager_) return Unexpected<Error>(TasksDisabled());
  return manager_->GetTask(id);
}

Result<task::TaskRecord> TaskService::CancelTask(int64_t id) {
  if (!manager_) return Unexpected<Error>(TasksDisabled());
  return manager_->CancelTask(id);
}

Result<std::vector<task::ExperimentRecord>> TaskService::ListExperiments(int64_t task_id) {
  if (!manager_) return Unexpected<Error>(TasksDisabled());
  return manager_->ListExperiments(task_id);
}

Result<task::ExperimentRecord> TaskService::GetExperiment(int64_t id) {
  if (!manager_) return Unexpected<Error>(TasksDisabled());
  return manager_->GetExperiment(id);
}

}  // namespace gpuscale::daemon
