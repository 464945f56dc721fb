// The REST API's request handlers, one function per route, and the helpers that write JSON
// replies and map error codes to HTTP statuses. ApiServer (api_server.cc) routes, checks
// the token and calls these; they hold no business logic (DaemonApi does the work).
//
// Handlers are synchronous: the server runs them on its worker pool, never on the threads
// that serve connections, so a slow DaemonApi call holds one worker, not the API.
//
// This is an api/-internal header: it exposes nlohmann types, so only api/ .cc files include
// it (third-party headers stay out of public headers).
//
// Thread-safety: handlers run on worker threads concurrently; they share only the DaemonApi
// (thread-safe by contract) and read-only options.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/event_stream.h"
#include "api/http_message.h"
#include "api/json_views.h"
#include "core/result.h"
#include "daemon_api/daemon_api.h"

namespace gpuscale::api {

struct HandlerContext {
  daemon::DaemonApi& daemon;
  const ApiRequest& request;
  ApiResponse& response;
  const std::vector<std::string>& params;  // the route's {placeholders}, in order
  const EventStreamOptions& stream_options;
};

// A handler writes its reply on success; on error the caller writes the error body.
using Handler = Status (*)(HandlerContext&);

// The one HTTP status of each error code (daemon_api.h): 400, 404, 409, 503, else 500.
int HttpStatusFor(ErrorCode code);

void SendJson(ApiResponse& response, int status, const Json& body);
void SendError(ApiResponse& response, const Error& error);
// An error body with a code string of the HTTP layer's own ("unauthenticated",
// "method_not_allowed", "payload_too_large", ...).
void SendErrorBody(ApiResponse& response, int status, std::string_view code,
                   std::string_view message);

Status HandleHealthz(HandlerContext& ctx);
Status HandleReadyz(HandlerContext& ctx);
Status HandleMetrics(HandlerContext& ctx);
Status HandleGpus(HandlerContext& ctx);
Status HandleGpuHistory(HandlerContext& ctx);
Status HandleListServices(HandlerContext& ctx);
Status HandleCreateService(HandlerContext& ctx);
Status HandleGetService(HandlerContext& ctx);
Status HandleUpdateService(HandlerContext& ctx);
Status HandleDeleteService(HandlerContext& ctx);
Status HandleListRules(HandlerContext& ctx);
Status HandleAddRule(HandlerContext& ctx);
Status HandleGetRule(HandlerContext& ctx);
Status HandleDeleteRule(HandlerContext& ctx);         // /rules/{id}
Status HandleDeleteRuleByQuery(HandlerContext& ctx);  // /rules?id=N
Status HandleGetReplicas(HandlerContext& ctx);
Status HandleServiceHistory(HandlerContext& ctx);
Status HandleSetReplicas(HandlerContext& ctx);
Status HandlePreemptReplica(HandlerContext& ctx);  // POST /v1/replicas/{id}/preempt
Status HandleLeases(HandlerContext& ctx);
Status HandleEvents(HandlerContext& ctx);
Status HandleEventStream(HandlerContext& ctx);
Status HandleEventKinds(HandlerContext& ctx);
// Tasks and experiments (task_handlers.cc; views from task/task_json.h).
Status HandleSubmitTask(HandlerContext& ctx);
Status HandleListTasks(HandlerContext& ctx);
Status HandleGetTask(HandlerContext& ctx);
Status HandleCancelTask(HandlerContext& ctx);
Status HandleListTaskExperiments(HandlerContext& ctx);
Status HandleGetExperiment(HandlerContext& ctx);

}  // namespace gpuscale::api
