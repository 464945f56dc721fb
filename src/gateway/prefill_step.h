// The first step of a disaggregated service's request (docs/gateway.md): the prefill. The
// client's request, rewritten by PrefillRequestBody (max_tokens 1, no stream, vLLM's
// kv_transfer_params request), goes to a prefill replica as one buffered request/response (a
// small JSON answer, without the relay's streaming machinery); the answer's kv_transfer_params then
// go into the body for the decode step (DecodeRequestBody). The exchange takes and gives back
// kept-alive connections of the relay's per-thread pool (relay_threads.h). A replica that gives no
// response (refused, reset, timed out) is released as a transport failure and the prefill is
// retried once on another prefill replica, as the relay retries; an answer other than 200 goes to
// the client as it is. The client's connection is not watched meanwhile: a prefill is short and
// bounded by gateway.upstream_timeout.
//
// Private to gateway_server.cc (it includes net's Asio headers). Thread-safety: a coroutine on
// the client connection's I/O thread; it shares GatewayState (thread-safe) and uses that
// thread's UpstreamPool (used by that thread alone).
#pragma once

#include <optional>
#include <string>

#include "gateway/gateway_state.h"
#include "gateway/gateway_stats.h"
#include "gateway/relay_threads.h"
#include "net/http_server.h"

namespace gpuscale::gateway {

struct PrefillStepResult {
  bool ok = false;
  std::string decode_body = {};  // ok: the client's body with the prefill's KV handle
  int status = 0;                // !ok: the HTTP status for the client
  std::string body = {};         // !ok: the body for the client (an OpenAI error or the replica's)
  // ok: the prefill replica's ticket, still counted in flight: the caller keeps it until the
  // decode replica's first byte (HeldTicket), since the decode step pulls the KV from it.
  std::optional<Ticket> held = {};
};

// Runs the prefill on `ticket`'s replica (Acquired from the kPrefill pool; released here, but
// for the one that answered the step's success: PrefillStepResult::held) and
// on one other when it gives no response. `pool`: the calling I/O thread's. Fills m.error for a
// failure ("prefill_unreachable", "prefill_status", "prefill_no_handle").
net::asio::awaitable<PrefillStepResult> RunPrefillStep(GatewayState& state, UpstreamPool& pool,
                                                       const net::Request& req,
                                                       const std::string& service,
                                                       RouteKey prefix_key, Ticket ticket,
                                                       RequestMeasurement& m);

}  // namespace gpuscale::gateway
