// The request bodies of a disaggregated service's two steps (docs/gateway.md), in the shape of
// vLLM's disaggregated-prefill toy proxy (its NIXL/P2P connector examples):
//   1. to a prefill replica: the client's body with max_tokens (and max_completion_tokens when
//      present) 1, stream false, no stream_options, and
//      kv_transfer_params {"do_remote_decode": true, "do_remote_prefill": false, the remote_*
//      fields null};
//   2. to a decode replica: the client's body, unchanged but for the kv_transfer_params the
//      prefill replica answered (an opaque handle: where its KV cache lies).
// Pure: JSON in, JSON out; JSON stays inside the .cc.
//
// Thread-safety: stateless functions.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace gpuscale::gateway {

// Errors: kInvalidArgument ("body") when `client_body` is not a JSON object.
Result<std::string> PrefillRequestBody(std::string_view client_body);

// Errors: kInvalidArgument ("body") when `client_body` is not a JSON object;
// kUnavailable ("kv_transfer_params") when `prefill_response` carries no kv_transfer_params
// object (a replica that is not a prefill one of a KV connector).
Result<std::string> DecodeRequestBody(std::string_view client_body,
                                      std::string_view prefill_response);

}  // namespace gpuscale::gateway
