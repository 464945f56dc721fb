// `gpuscale task submit|list|show|cancel` and `gpuscale experiment show`: clients of a
// running daemon's tasks API (docs/api.md "Tasks and experiments"), with readable tables by
// default and the API's JSON as it is with `-o json`.
#include <fmt/format.h>

#include <charconv>

#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "cli/api_client.h"
#include "cli/api_flags.h"
#include "cli/command.h"
#include "cli/task_views.h"
#include "config/task_definition.h"

namespace gpuscale::cli {
namespace {

using Json = ApiClient::Json;

struct SubmitFlags {
  ApiFlags api;
  std::string path;
  bool wait = false;
  double poll_interval_seconds = 2;
};

struct IdFlags {
  ApiFlags api;
  int64_t id = 0;
};

void PrintJson(const Json& body, CommandContext& ctx) { ctx.out << body.dump(2) << "\n"; }

Result<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (!in || !(text << in.rdbuf())) return NotFound("cannot read the task file", path);
  return text.str();
}

bool IsEnded(const Json& task) {
  const std::string status = task.value("status", "");
  return status == "succeeded" || status == "failed" || status == "cancelled";
}

// Polls the task until it ends, printing its progress line on err whenever it changes.
Result<Json> WaitForTask(const ApiClient& client, int64_t id, Seconds poll, CommandContext& ctx) {
  std::string last_line;
  while (true) {
    GS_ASSIGN_OR_RETURN(Json task, client.Get(fmt::format("/v1/tasks/{}", id)));
    const std::string line = ProgressLine(task);
    if (line != last_line) ctx.err << line << "\n" << std::flush;
    last_line = line;
    if (IsEnded(task)) return task;
    std::this_thread::sleep_for(poll);
  }
}

// Exit 0 when the task succeeded, 1 (with the reason on err) when it failed or was cancelled.
int FinishWait(const Json& task, const SubmitFlags& flags, CommandContext& ctx) {
  if (flags.api.format == OutputFormat::kJson) {
    PrintJson(task, ctx);
  } else {
    PrintTask(task, ctx.out);
  }
  const std::string status = task.value("status", "");
  if (status == "succeeded") return kExitOk;
  ctx.err << fmt::format("task {} {}{}\n", task.value("id", int64_t{0}), status,
                         task.value("message", "").empty() ? "" : ": " + task.value("message", ""));
  ctx.exit_code = kExitFailure;
  return ctx.exit_code;
}

// Validates the file here first (errors name the file's line without a round trip), then
// submits its text as it is, so the daemon stores what the user wrote.
int RunSubmit(const SubmitFlags& flags, CommandContext& ctx) {
  Result<task::TaskDefinition> definition = config::LoadTaskDefinitionFile(flags.path);
  if (!definition) return ctx.Fail(definition.error());
  Result<std::string> text = ReadText(flags.path);
  if (!text) return ctx.Fail(text.error());
  const ApiClient client = MakeClient(flags.api);
  Result<Json> task = client.Post("/v1/tasks", *text, "application/yaml");
  if (!task) return ctx.Fail(task.error());
  const int64_t id = task->value("id", int64_t{0});
  if (flags.wait) {
    ctx.err << fmt::format("submitted task {} '{}' ({} experiments); waiting\n", id,
                           task->value("name", ""), task->value("experiments_total", 0));
    Result<Json> ended = WaitForTask(
        client, id, Seconds{flags.poll_interval_seconds}, ctx);
    if (!ended) return ctx.Fail(ended.error());
    return FinishWait(*ended, flags, ctx);
  }
  if (flags.api.format == OutputFormat::kJson) {
    PrintJson(*task, ctx);
  } else {
    ctx.out << fmt::format("submitted task {} '{}': {} experiments\n", id,
                           task->value("name", ""), task->value("experiments_total", 0))
            << fmt::format("follow it with: gpuscale task show {}\n", id);
  }
  return kExitOk;
}

// GET or DELETE `path`, then the JSON or `print`'s view.
int RunRequest(const ApiFlags& flags, const std::string& method, const std::string& path,
               void (*print)(const Json&, std::ostream&), CommandContext& ctx) {
  const ApiClient client = MakeClient(flags);
  Result<Json> body = method == "DELETE" ? client.Delete(path) : client.Get(path);
  if (!body) return ctx.Fail(body.error());
  if (flags.format == OutputFormat::kJson) {
    PrintJson(*body, ctx);
  } else {
    print(*body, ctx.out);
  }
  return kExitOk;
}

void PrintCancelled(const Json& task, std::ostream& out) {
  out << fmt::format("cancelled task {} '{}' ({})\n", task.value("id", int64_t{0}),
                     task.value("name", ""), task.value("status", ""));
  PrintTask(task, out);
}

CLI::App* AddIdCommand(CLI::App* parent, const char* name, const char* help,
                       const char* id_help, std::shared_ptr<IdFlags> flags) {
  CLI::App* command = parent->add_subcommand(name, help);
  // CLI::PositiveNumber would answer "abc" with its whole double range (300 digits).
  const CLI::Validator task_id(
      [](std::string& text) -> std::string {
        int64_t id = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
        if (ec == std::errc() && end == text.data() + text.size() && id >= 1) return "";
        return "expected a task id (an integer >= 1, as `gpuscale task list` shows), got '" +
               text + "'";
      },
      "ID >= 1");
  command->add_option("ID", flags->id, id_help)->required()->check(task_id);
  AddApiFlags(command, flags->api);
  return command;
}

void AddSubmit(CLI::App* task, CommandContext& ctx) {
  auto flags = std::make_shared<SubmitFlags>();
  CLI::App* submit = task->add_subcommand(
      "submit", "Validate a task file (YAML or JSON) and submit it to the daemon");
  submit->add_option("FILE", flags->path, "Task file (docs/tasks.md)")->required();
  submit->add_flag("--wait", flags->wait,
                   "Wait until the task ends, printing progress on stderr; exit 0 when it "
                   "succeeded, 1 when it failed or was cancelled");
  submit->add_option("--poll-interval", flags->poll_interval_seconds,
                     "Seconds between progress checks with --wait (default 2)")
      ->check(CLI::PositiveNumber);
  AddApiFlags(submit, flags->api);
  submit->callback([flags, &ctx] { RunSubmit(*flags, ctx); });
}

}  // namespace

void AddTaskCommands(CLI::App& app, CommandContext& ctx) {
  CLI::App* task = app.add_subcommand(
      "task", "Parameter-sweep tasks on a running daemon (gpuscale serve): submit, list, show, "
              "cancel");
  task->require_subcommand(1);
  AddSubmit(task, ctx);

  auto list_flags = std::make_shared<ApiFlags>();
  CLI::App* list = task->add_subcommand("list", "Tasks, newest first");
  AddApiFlags(list, *list_flags);
  list->callback(
      [list_flags, &ctx] { RunRequest(*list_flags, "GET", "/v1/tasks", PrintTaskList, ctx); });

  auto show = std::make_shared<IdFlags>();
  AddIdCommand(task, "show", "A task with its experiments and the best one", "Task id", show)
      ->callback([show, &ctx] {
        RunRequest(show->api, "GET", fmt::format("/v1/tasks/{}", show->id), PrintTask, ctx);
      });

  auto cancel = std::make_shared<IdFlags>();
  AddIdCommand(task, "cancel", "Cancel a task: queued experiments are dropped, running ones "
                               "stopped", "Task id", cancel)
      ->callback([cancel, &ctx] {
        RunRequest(cancel->api, "DELETE", fmt::format("/v1/tasks/{}", cancel->id),
                   PrintCancelled, ctx);
      });

  CLI::App* experiment =
      app.add_subcommand("experiment", "Experiments of tasks on a running daemon");
  experiment->require_subcommand(1);
  auto experiment_show = std::make_shared<IdFlags>();
  AddIdCommand(experiment, "show",
               "One experiment: parameters, GPUs, benchmark results, GPU monitoring",
               "Experiment id", experiment_show)
      ->callback([experiment_show, &ctx] {
        RunRequest(experiment_show->api, "GET",
                   fmt::format("/v1/experiments/{}", experiment_show->id), PrintExperiment, ctx);
      });
}

}  // namespace gpuscale::cli
