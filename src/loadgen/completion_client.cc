#include "loadgen/completion_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <array>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>

#include "loadgen/http_error.h"
#include "loadgen/sse_parser.h"

namespace gpuscale::loadgen {
namespace {

using json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

constexpr size_t kMaxDetailBytes = 200;

double SecondsBetween(SteadyClock::time_point from, SteadyClock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// What one response stream has shown so far.
struct StreamState {
  SteadyClock::time_point start;
  int status = 0;
  SseParser parser;
  std::optional<SteadyClock::time_point> first_token_at;
  SteadyClock::time_point last_token_at;
  SteadyClock::time_point done_at;
  bool done = false;
  int32_t content_events = 0;
  std::optional<int32_t> usage_tokens;
  std::vector<double> gaps;
  std::string error_kind;  // set by a bad event
  std::string detail;

  // Text carried by an OpenAI completion or chat chunk ("" when none).
  static std::string_view ChunkText(const json& chunk) {
    auto choices = chunk.find("choices");
    if (choices == chunk.end() || !choices->is_array() || choices->empty()) return {};
    const json& choice = choices->front();
    if (auto text = choice.find("text"); text != choice.end() && text->is_string()) {
      return text->get_ref<const std::string&>();
    }
    auto delta = choice.find("delta");
    if (delta == choice.end() || !delta->is_object()) return {};
    auto content = delta->find("content");
    if (content == delta->end() || !content->is_string()) return {};
    return content->get_ref<const std::string&>();
  }

  // False stops reading (a malformed or error event).
  bool OnEvent(const std::string& data) {
    if (data == "[DONE]") {
      done = true;
      done_at = SteadyClock::now();
      return true;
    }
    const json chunk = json::parse(data, nullptr, /*allow_exceptions=*/false);
    if (!chunk.is_object() || chunk.contains("error")) {
      error_kind = chunk.is_object() ? "server_error_event" : "invalid_event";
      detail = data.substr(0, kMaxDetailBytes);
      return false;
    }
    if (!ChunkText(chunk).empty()) {
      const SteadyClock::time_point now = SteadyClock::now();
      if (!first_token_at) {
        first_token_at = now;
      } else {
        gaps.push_back(SecondsBetween(last_token_at, now));
      }
      last_token_at = now;
      ++content_events;
    }
    auto usage = chunk.find("usage");
    if (usage != chunk.end() && usage->is_object()) {
      auto tokens = usage->find("completion_tokens");
      if (tokens != usage->end() && tokens->is_number_integer()) {
        usage_tokens = tokens->get<int32_t>();
      }
    }
    return true;
  }

  bool OnBytes(const char* data, size_t length) {
    if (status != 200) {  // keep the start of an error body for the report
      detail.append(data,
                    std::min(length, kMaxDetailBytes - std::min(detail.size(), kMaxDetailBytes)));
      return true;
    }
    for (const std::string& event : parser.Feed(std::string_view(data, length))) {
      if (!OnEvent(event)) return false;
    }
    return true;
  }
};

std::string ErrorKind(httplib::Error error) {
  switch (error) {
    case httplib::Error::Connection:
      return "connection_error";
    case httplib::Error::ConnectionTimeout:
      return "connect_timeout";
    case httplib::Error::Read:
      return "read_error";
    case httplib::Error::Write:
      return "write_error";
    case httplib::Error::Canceled:
      return "cancelled";
    default:
      return "client_error";
  }
}

void ConfigureTimeouts(httplib::Client& http, double connect_seconds, double read_seconds) {
  const auto to_micros = [](double seconds) {
    return std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
  };
  http.set_connection_timeout(to_micros(connect_seconds));
  http.set_read_timeout(to_micros(read_seconds));
  http.set_write_timeout(to_micros(read_seconds));
}

}  // namespace

Result<std::string> FetchFirstModel(const ServerUrl& url, double timeout_seconds) {
  httplib::Client http(url.scheme_host_port);
  ConfigureTimeouts(http, timeout_seconds, timeout_seconds);
  const std::string path = url.base_path + "/v1/models";
  httplib::Result res = http.Get(path.c_str());
  const std::string where = url.scheme_host_port + path;
  if (!res) {
    return Unavailable(fmt::format("cannot reach {}: {}", where, DescribeHttpError(res.error())),
                       "--url");
  }
  if (res->status == 404 && res->body.find("no such endpoint") != std::string::npos) {
    // gpuscale's own 404 body: the user pointed the bench at the daemon's REST API.
    return InvalidArgument(
        fmt::format("{} is gpuscale's REST API, not an OpenAI endpoint: point --url at the "
                    "gateway (`gpuscale serve` prints its address, by default "
                    "http://127.0.0.1:8000)",
                    url.scheme_host_port),
        "--url");
  }
  if (res->status != 200) {
    return Unavailable(
        fmt::format("GET {} answered HTTP {}{}; pass --model to skip this query", where,
                    res->status, res->status == 503 ? " (is the model still loading?)" : ""),
        "--url");
  }
  const json body = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object() || !body.contains("data") || !body["data"].is_array() ||
      body["data"].empty() || !body["data"][0].contains("id") ||
      !body["data"][0]["id"].is_string()) {
    return Unavailable(fmt::format("GET {} listed no model; pass --model", where), "--url");
  }
  return body["data"][0]["id"].get<std::string>();
}

std::string PromptText(int32_t tokens) {
  static constexpr std::array<std::string_view, 8> kWords = {"the",   "quick", "brown", "fox",
                                                             "jumps", "over",  "a",     "dog"};
  std::string text;
  text.reserve(static_cast<size_t>(tokens) * 6);
  for (int32_t i = 0; i < tokens; ++i) {
    if (i > 0) text += ' ';
    text += kWords[static_cast<size_t>(i) % kWords.size()];
  }
  return text;
}

namespace {

// The request's priority and tenant as the gateway's door reads them (docs/gateway.md,
// "Priority and fair share"); nothing when the workload gives none, so the door's defaults
// apply.
void SetClassHeaders(const PlannedRequest& planned, const ClientOptions& options,
                     httplib::Request& req) {
  if (planned.priority && !options.priority_header.empty()) {
    req.set_header(options.priority_header, std::string(route::PriorityName(*planned.priority)));
  }
  if (!planned.tenant.empty() && !options.tenant_header.empty()) {
    req.set_header(options.tenant_header, planned.tenant);
  }
}

}  // namespace

struct CompletionClient::Impl {
  Impl(const ServerUrl& server, std::string model_name, const ClientOptions& opts)
      : url(server), model(std::move(model_name)), options(opts), http(server.scheme_host_port) {
    ConfigureTimeouts(http, options.connect_timeout_seconds, options.read_timeout_seconds);
    http.set_tcp_nodelay(true);
    http.set_keep_alive(true);
  }

  std::string Body(const PlannedRequest& request) const {
    json body{
        {"model", model},
        {"prompt", request.prompt.empty() ? PromptText(request.input_tokens) : request.prompt},
        {"max_tokens", request.output_tokens},
        {"stream", true},
        {"stream_options", {{"include_usage", true}}}};
    if (options.ignore_eos) body["ignore_eos"] = true;
    return body.dump();
  }

  const ServerUrl url;
  const std::string model;
  const ClientOptions options;
  httplib::Client http;
  std::atomic<bool> cancelled{false};
};

CompletionClient::CompletionClient(const ServerUrl& url, std::string model,
                                   const ClientOptions& options)
    : impl_(std::make_unique<Impl>(url, std::move(model), options)) {}

CompletionClient::~CompletionClient() = default;

void CompletionClient::Cancel() {
  impl_->cancelled = true;
  impl_->http.stop();  // shuts the socket of a request in flight
}

// Longer than 40 lines: one request's whole life, kept together so the timing points are
// easy to audit (send -> first content event -> [DONE]).
RequestOutcome CompletionClient::Send(const PlannedRequest& planned) {
  RequestOutcome outcome;
  outcome.input_tokens = planned.input_tokens;
  outcome.priority = planned.priority;
  outcome.tenant = planned.tenant;
  if (impl_->cancelled) {
    outcome.error_kind = "cancelled";
    return outcome;
  }
  StreamState state;
  httplib::Request req;
  req.method = "POST";
  req.path = impl_->url.base_path + "/v1/completions";
  req.set_header("Accept", "text/event-stream");
  req.set_header("Content-Type", "application/json");
  req.body = impl_->Body(planned);
  SetClassHeaders(planned, impl_->options, req);
  req.response_handler = [&state](const httplib::Response& res) {
    state.status = res.status;
    return true;
  };
  req.content_receiver = [this, &state](const char* data, size_t length, uint64_t, uint64_t) {
    return state.OnBytes(data, length) && !impl_->cancelled;
  };
  state.start = SteadyClock::now();
  httplib::Result result = impl_->http.send(req);
  if (impl_->cancelled) {
    outcome.error_kind = "cancelled";
  } else if (!state.error_kind.empty()) {
    outcome.error_kind = state.error_kind;
  } else if (!result) {
    outcome.error_kind = ErrorKind(result.error());
    outcome.error_detail = DescribeHttpError(result.error());
  } else if (state.status != 200) {
    outcome.error_kind = fmt::format("http_{}", state.status);
  } else if (!state.done) {
    outcome.error_kind = "incomplete_stream";
  }
  if (outcome.error_detail.empty()) outcome.error_detail = state.detail;
  if (!outcome.error_kind.empty()) return outcome;
  outcome.ok = true;
  outcome.e2e_seconds = SecondsBetween(state.start, state.done_at);
  outcome.ttft_seconds = state.first_token_at ? SecondsBetween(state.start, *state.first_token_at)
                                              : outcome.e2e_seconds;
  outcome.output_tokens = state.usage_tokens.value_or(state.content_events);
  outcome.inter_token_seconds = std::move(state.gaps);
  return outcome;
}

}  // namespace gpuscale::loadgen
