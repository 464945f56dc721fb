// REST handlers of tasks and experiments (docs/api.md "Tasks and experiments"). Like the
// other handlers they parse, call DaemonApi and write the views of task/task_json.h, so the
// API, `gpuscale task ... -o json` and the dashboard read the same keys.
#include <fmt/format.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/api_handlers.h"
#include "api/request_parsing.h"
#include "task/task_json.h"

namespace gpuscale::api {
namespace {

Result<int64_t> PathId(const HandlerContext& ctx, std::string_view what) {
  return ParsePositiveId(ctx.params.at(0), "id", what);
}

// The full task view. The experiments are read after the task call (submit, cancel)
// succeeded; if that read fails, the task is still answered (with no experiments) because
// the submit or cancel already happened and a client must not retry it.
void SendFullTask(HandlerContext& ctx, int status, const task::TaskRecord& record) {
  Result<std::vector<task::ExperimentRecord>> experiments =
      ctx.daemon.ListExperiments(record.id);
  SendJson(ctx.response, status,
           task::TaskJson(record, experiments ? *experiments
                                              : std::vector<task::ExperimentRecord>{}));
}

}  // namespace

Status HandleSubmitTask(HandlerContext& ctx) {
  GS_ASSIGN_OR_RETURN(
      task::TaskDefinition definition,
      ParseTaskBody(ctx.request.body, ctx.request.Header("Content-Type")));
  GS_ASSIGN_OR_RETURN(task::TaskRecord record,
                      ctx.daemon.SubmitTask(std::move(definition), ctx.request.body));
  ctx.response.SetHeader("Location", fmt::format("/v1/tasks/{}", record.id));
  SendFullTask(ctx, 201, record);
  return OkStatus();
}

Status HandleListTasks(HandlerContext& ctx) {
  Json tasks = Json::array();
  for (const task::TaskRecord& record : ctx.daemon.ListTasks()) {
    // The experiments give the running and failed counts; without them (a task removed
    // meanwhile, a store error) those counts are null rather than the whole list failing.
    Result<std::vector<task::ExperimentRecord>> experiments =
        ctx.daemon.ListExperiments(record.id);
    tasks.push_back(experiments ? task::TaskSummaryJson(record, *experiments)
                                : task::TaskSummaryJson(record));
  }
  SendJson(ctx.response, 200, Json{{"tasks", std::move(tasks)}});
  return OkStatus();
}

Status HandleGetTask(HandlerContext& ctx) {
  GS_ASSIGN_OR_RETURN(int64_t id, PathId(ctx, "task"));
  GS_ASSIGN_OR_RETURN(task::TaskRecord record, ctx.daemon.GetTask(id));
  GS_ASSIGN_OR_RETURN(std::vector<task::ExperimentRecord> experiments,
                      ctx.daemon.ListExperiments(id));
  SendJson(ctx.response, 200, task::TaskJson(record, experiments));
  return OkStatus();
}

Status HandleCancelTask(HandlerContext& ctx) {
  GS_ASSIGN_OR_RETURN(int64_t id, PathId(ctx, "task"));
  GS_ASSIGN_OR_RETURN(task::TaskRecord record, ctx.daemon.CancelTask(id));
  SendFullTask(ctx, 200, record);
  return OkStatus();
}

Status HandleListTaskExperiments(HandlerContext& ctx) {
  GS_ASSIGN_OR_RETURN(int64_t id, PathId(ctx, "task"));
  // The task first: an unknown task is a 404 naming it, and it knows the best experiment.
  GS_ASSIGN_OR_RETURN(task::TaskRecord record, ctx.daemon.GetTask(id));
  GS_ASSIGN_OR_RETURN(std::vector<task::ExperimentRecord> experiments,
                      ctx.daemon.ListExperiments(id));
  Json array = Json::array();
  for (const task::ExperimentRecord& experiment : experiments) {
    array.push_back(task::ExperimentJson(experiment, record.best_experiment_id));
  }
  SendJson(ctx.response, 200, Json{{"experiments", std::move(array)}});
  return OkStatus();
}

Status HandleGetExperiment(HandlerContext& ctx) {
  GS_ASSIGN_OR_RETURN(int64_t id, PathId(ctx, "experiment"));
  GS_ASSIGN_OR_RETURN(task::ExperimentRecord experiment, ctx.daemon.GetExperiment(id));
  // is_best comes from the owning task; an experiment always has one, but should the task
  // be unreadable the experiment is still worth answering (is_best false).
  Result<task::TaskRecord> owner = ctx.daemon.GetTask(experiment.task_id);
  SendJson(ctx.response, 200,
           task::ExperimentJson(experiment, owner ? owner->best_experiment_id : std::nullopt));
  return OkStatus();
}

}  // namespace gpuscale::api
