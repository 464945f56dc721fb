#include "gateway/disagg_request.h"

#include <nlohmann/json.hpp>

namespace gpuscale::gateway {
namespace {

// ordered_json keeps the client's key order, so a replica sees its body as sent.
using ojson = nlohmann::ordered_json;

Result<ojson> ParseObject(std::string_view text) {
  ojson parsed = ojson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return InvalidArgument("expected a JSON object", "body");
  return parsed;
}

std::string Dump(const ojson& value) {
  return value.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

}  // namespace

Result<std::string> PrefillRequestBody(std::string_view client_body) {
  GS_ASSIGN_OR_RETURN(ojson body, ParseObject(client_body));
  // Only the prompt's KV and the first token are wanted from the prefill replica.
  body["max_tokens"] = 1;
  if (body.contains("max_completion_tokens")) body["max_completion_tokens"] = 1;
  body["stream"] = false;
  body.erase("stream_options");
  body["kv_transfer_params"] = ojson{{"do_remote_decode", true},    {"do_remote_prefill", false},
                                     {"remote_engine_id", nullptr}, {"remote_block_ids", nullptr},
                                     {"remote_host", nullptr},      {"remote_port", nullptr}};
  return Dump(body);
}

Result<std::string> DecodeRequestBody(std::string_view client_body,
                                      std::string_view prefill_response) {
  GS_ASSIGN_OR_RETURN(ojson body, ParseObject(client_body));
  const ojson answer = ojson::parse(prefill_response, nullptr, /*allow_exceptions=*/false);
  auto params = answer.is_object() ? answer.find("kv_transfer_params") : answer.end();
  if (params == answer.end() || !params->is_object()) {
    return Unavailable("the prefill replica answered without a kv_transfer_params object",
                       "kv_transfer_params");
  }
  body["kv_transfer_params"] = *params;
  return Dump(body);
}

}  // namespace gpuscale::gateway
