// Fuzzes the emulator's POST /v1/embeddings body parser (emulator/openai_protocol.h) and the
// response it leads to: any bytes give either a request within the documented bounds (1 to
// kMaxEmbeddingInputs inputs, dimensions 1..kEmbeddingDimensions, at least one prompt token
// each) or an InvalidArgument naming a field; an accepted request's response is JSON of
// OpenAI's shape with one embedding per input, unit length when given as floats.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "emulator/openai_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscale::emulator;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  gpuscale::Result<EmbeddingRequest> request = ParseEmbeddingRequest(body);
  if (!request) {
    if (request.error().code != gpuscale::ErrorCode::kInvalidArgument) std::abort();
    if (request.error().field.empty()) std::abort();
    return 0;
  }
  if (request->inputs.empty() || request->inputs.size() > kMaxEmbeddingInputs) std::abort();
  if (request->dimensions < 1 || request->dimensions > kEmbeddingDimensions) std::abort();
  for (const EmbeddingInput& input : request->inputs) {
    if (input.prompt_tokens < 1) std::abort();
  }
  const nlohmann::json response = nlohmann::json::parse(
      EmbeddingResponseBody(*request, "embd-0", 0, "m"), nullptr, /*allow_exceptions=*/false);
  if (response.is_discarded() || !response.contains("data")) std::abort();
  if (response["data"].size() != request->inputs.size()) std::abort();
  if (!request->base64) {
    const nlohmann::json& first = response["data"][0]["embedding"];
    if (static_cast<int32_t>(first.size()) != request->dimensions) std::abort();
    double norm = 0;
    for (const nlohmann::json& x : first) norm += x.get<double>() * x.get<double>();
    if (std::abs(norm - 1) > 1e-3) std::abort();
  }
  return 0;
}
