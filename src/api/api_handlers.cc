#include "api/api_handlers.h"

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <utility>

#include "api/request_parsing.h"
#include "api/services_list_json.h"
#include "events/event_kind.h"

namespace gpuscale::api {
namespace {

const std::string& Param(const HandlerContext& ctx, size_t i) { return ctx.params.at(i); }

std::string ServicePath(const std::string& name) { return "/v1/services/" + name; }

Status SendService(HandlerContext& ctx, int status, Result<daemon::ServiceView> service) {
  if (!service) return Unexpected<Error>(service.error());
  if (status == 201) ctx.response.SetHeader("Location", ServicePath(service->config.name));
  SendJson(ctx.response, status, ServiceJson(*service));
  return OkStatus();
}

Status SendNoContent(HandlerContext& ctx, Status status) {
  GS_RETURN_IF_ERROR(status);
  ctx.response.status = 204;
  return OkStatus();
}

Result<int64_t> ParseRuleId(std::string_view text, std::string_view field) {
  Result<int64_t> id = ParseNonNegativeInt(text, field);
  if (!id || *id == 0) {
    return InvalidArgument(fmt::format("expected a rule id (an integer >= 1), got '{}'", text),
                           std::string(field));
  }
  return id;
}

}  // namespace

int HttpStatusFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return 400;
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kFailedPrecondition:
    case ErrorCode::kResourceExhausted:
      return 409;
    case ErrorCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

void SendJson(ApiResponse& response, int status, const Json& body) {
  response.status = status;
  // replace: a stray invalid UTF-8 byte in a message must not turn the reply into a 500.
  response.SetContent(body.dump(2, ' ', false, Json::error_handler_t::replace) + "\n",
                       "application/json");
}

void SendError(ApiResponse& response, const Error& error) {
  SendJson(response, HttpStatusFor(error.code), ErrorJson(error));
}

void SendErrorBody(ApiResponse& response, int status, std::string_view code,
                   std::string_view message) {
  SendJson(response, status,
           Json{{"error", {{"code", code}, {"message", message}, {"field", nullptr}}}});
}

Status HandleHealthz(HandlerContext& ctx) {
  SendJson(ctx.response, 200, Json{{"status", "ok"}});
  return OkStatus();
}

Status HandleReadyz(HandlerContext& ctx) {
  GS_RETURN_IF_ERROR(ctx.daemon.Ready());
  SendJson(ctx.response, 200, Json{{"status", "ready"}});
  return OkStatus();
}

Status HandleMetrics(HandlerContext& ctx) {
  ctx.response.status = 200;
  ctx.response.SetContent(ctx.daemon.MetricsText(), "text/plain; version=0.0.4; charset=utf-8");
  return OkStatus();
}

Status HandleGpus(HandlerContext& ctx) {
  GS_ASSIGN_OR_RETURN(gpu::GpuSnapshot snapshot, ctx.daemon.Gpus());
  SendJson(ctx.response, 200, SnapshotJson(snapshot, ctx.daemon.ScoreWeights()));
  return OkStatus();
}

Status HandleGpuHistory(HandlerContext& ctx) {
  GS_ASSIGN_OR_RETURN(Seconds window, ParseHistoryWindow(ctx.request.params));
  SendJson(ctx.response, 200,
           HistoryJson(ctx.daemon.GpuHistory(window), ctx.daemon.ScoreWeights()));
  return OkStatus();
}

// The daemon's shared list (no copy, no daemon lock held) printed as text
// (services_list_json.h): the dashboard polls this at fleet scale.
Status HandleListServices(HandlerContext& ctx) {
  const std::shared_ptr<const std::vector<daemon::ServiceView>> services =
      ctx.daemon.ServicesSnapshot();
  ctx.response.status = 200;
  ctx.response.SetContent(ServicesListBody(*services), "application/json");
  return OkStatus();
}

Status HandleCreateService(HandlerContext& ctx) {
  GS_ASSIGN_OR_RETURN(daemon::ServiceConfig config, ParseServiceBody(ctx.request.body, ""));
  return SendService(ctx, 201, ctx.daemon.CreateService(config));
}

Status HandleGetService(HandlerContext& ctx) {
  return SendService(ctx, 200, ctx.daemon.GetService(Param(ctx, 0)));
}

Status HandleUpdateService(HandlerContext& ctx) {
  GS_ASSIGN_OR_RETURN(daemon::ServiceConfig config,
                      ParseServiceBody(ctx.request.body, Param(ctx, 0)));
  return SendService(ctx, 200, ctx.daemon.UpdateService(config));
}

Status HandleDeleteService(HandlerContext& ctx) {
  return SendNoContent(ctx, ctx.daemon.DeleteService(Param(ctx, 0)));
}

Status HandleListRules(HandlerContext& ctx) {
  GS_ASSIGN_OR_RETURN(std::vector<daemon::RuleView> rules, ctx.daemon.ListRules(Param(ctx, 0)));
  Json array = Json::array();
  for (const daemon::RuleView& rule : rules) array.push_back(RuleJson(rule));
  SendJson(ctx.response, 200, Json{{"rules", std::move(array)}});
  return OkStatus();
}

Status HandleAddRule(HandlerContext& ctx) {
  const std::string& name = Param(ctx, 0);
  // The service first: 404 for an unknown one, and its bounds are the rule's defaults.
  GS_ASSIGN_OR_RETURN(daemon::ServiceView service, ctx.daemon.GetService(name));
  GS_ASSIGN_OR_RETURN(daemon::RuleView rule, ParseRuleBody(ctx.request.body, service.config));
  GS_ASSIGN_OR_RETURN(daemon::RuleView added, ctx.daemon.AddRule(name, rule));
  ctx.response.SetHeader("Location", fmt::format("{}/rules/{}", ServicePath(name), added.id));
  SendJson(ctx.response, 201, RuleJson(added));
  return OkStatus();
}

Status HandleGetRule(HandlerContext& ctx) {
  GS_ASSIGN_OR_RETURN(int64_t id, ParseRuleId(Param(ctx, 1), "id"));
  GS_ASSIGN_OR_RETURN(std::vector<daemon::RuleView> rules, ctx.daemon.ListRules(Param(ctx, 0)));
  for (const daemon::RuleView& rule : rules) {
    if (rule.id == id) {
      SendJson(ctx.response, 200, RuleJson(rule));
      return OkStatus();
    }
  }
  return NotFound(fmt::format("service '{}' has no rule {}", Param(ctx, 0), id), "id");
}

Status HandleDeleteRule(HandlerContext& ctx) {
  GS_ASSIGN_OR_RETURN(int64_t id, ParseRuleId(Param(ctx, 1), "id"));
  return SendNoContent(ctx, ctx.daemon.DeleteRule(Param(ctx, 0), id));
}

Status HandleDeleteRuleByQuery(HandlerContext& ctx) {
  if (!ctx.request.HasParam("id")) {
    return InvalidArgument("required: ?id=N (or DELETE /v1/services/{name}/rules/{id})", "id");
  }
  GS_ASSIGN_OR_RETURN(int64_t id, ParseRuleId(ctx.request.Param("id"), "id"));
  return SendNoContent(ctx, ctx.daemon.DeleteRule(Param(ctx, 0), id));
}

Status HandleServiceHistory(HandlerContext& ctx) {
  GS_ASSIGN_OR_RETURN(HistoryRange range, ParseHistoryRange(ctx.request.params));
  GS_ASSIGN_OR_RETURN(daemon::HistorySeries series,
                      ctx.daemon.History(Param(ctx, 0), range.from, range.to, range.step));
  SendJson(ctx.response, 200, ServiceHistoryJson(Param(ctx, 0), series));
  return OkStatus();
}

Status HandleGetReplicas(HandlerContext& ctx) {
  GS_ASSIGN_OR_RETURN(std::vector<daemon::ReplicaView> replicas,
                      ctx.daemon.ListReplicas(Param(ctx, 0)));
  Json array = Json::array();
  for (const daemon::ReplicaView& replica : replicas) array.push_back(ReplicaJson(replica));
  SendJson(ctx.response, 200, Json{{"service", Param(ctx, 0)}, {"replicas", std::move(array)}});
  return OkStatus();
}

Status HandleSetReplicas(HandlerContext& ctx) {
  GS_ASSIGN_OR_RETURN(std::optional<int> replicas, ParseReplicasBody(ctx.request.body));
  return SendService(ctx, 200, ctx.daemon.SetDesiredReplicas(Param(ctx, 0), replicas));
}

// A cloud agent's spot notice: 202, since the replica drains and goes by the deadline.
Status HandlePreemptReplica(HandlerContext& ctx) {
  GS_ASSIGN_OR_RETURN(std::optional<Seconds> notice, ParsePreemptBody(ctx.request.body));
  GS_ASSIGN_OR_RETURN(daemon::PreemptNotice taken,
                      ctx.daemon.PreemptReplica(Param(ctx, 0), notice));
  SendJson(ctx.response, 202,
           Json{{"service", taken.service},
                {"replica", taken.replica},
                {"notice_seconds", taken.notice.count()}});
  return OkStatus();
}

Status HandleLeases(HandlerContext& ctx) {
  Json array = Json::array();
  for (const alloc::Lease& lease : ctx.daemon.Leases()) array.push_back(LeaseJson(lease));
  SendJson(ctx.response, 200, Json{{"leases", std::move(array)}});
  return OkStatus();
}

Status HandleEvents(HandlerContext& ctx) {
  GS_ASSIGN_OR_RETURN(daemon::EventQuery query, ParseEventQuery(ctx.request.params));
  GS_ASSIGN_OR_RETURN(std::vector<daemon::EventView> events, ctx.daemon.Events(query));
  Json array = Json::array();
  int64_t last_id = query.since_id;
  for (const daemon::EventView& event : events) {
    array.push_back(EventJson(event));
    last_id = std::max(last_id, event.id);
  }
  SendJson(ctx.response, 200, Json{{"events", std::move(array)}, {"last_id", last_id}});
  return OkStatus();
}

// The wire name of every kind the daemon stores, in its table's order (gateway_stats is only
// sent on the stream): the dashboard's kind filter offers these, so it never lags behind.
Status HandleEventKinds(HandlerContext& ctx) {
  Json kinds = Json::array();
  for (events::EventKind kind : events::AllEventKinds()) {
    if (kind == events::EventKind::kGatewayStats) continue;
    kinds.push_back(std::string(events::EventKindName(kind)));
  }
  SendJson(ctx.response, 200, Json{{"kinds", std::move(kinds)}});
  return OkStatus();
}

// Validates the query and chooses the starting point; the server then sends the stream's
// events until the client leaves or the server stops.
Status HandleEventStream(HandlerContext& ctx) {
  GS_ASSIGN_OR_RETURN(daemon::EventQuery query, ParseEventQuery(ctx.request.params));
  bool resume = ctx.request.HasParam("since_id");
  if (ctx.request.HasHeader("Last-Event-ID")) {  // a reconnecting EventSource wins
    GS_ASSIGN_OR_RETURN(query.since_id,
                        ParseNonNegativeInt(ctx.request.Header("Last-Event-ID"), "Last-Event-ID"));
    resume = true;
  }
  auto stream = std::make_shared<EventStream>(ctx.daemon, query, ctx.stream_options);
  if (!resume) stream->StartAtNewest();
  ctx.response.status = 200;
  ctx.response.content_type = "text/event-stream";
  ctx.response.SetHeader("Cache-Control", "no-cache");
  ctx.response.SetHeader("X-Accel-Buffering", "no");  // nginx: do not buffer the stream
  ctx.response.stream = std::move(stream);
  return OkStatus();
}

}  // namespace gpuscale::api
