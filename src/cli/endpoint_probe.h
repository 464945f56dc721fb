// EndpointProbe: the LoadProbe of `gpuscale profile --url`. Each point offers a live
// OpenAI-compatible endpoint (vLLM, `gpuscale emulate`, a gateway in front of one replica)
// Poisson streaming completions of one mix for step_seconds, through the bench client
// (loadgen::RunBench, the same arrivals `gpuscale bench --rate` sends), and judges every
// request's TTFT and TPOT against the SLO (profile/point_summary.h). A request that fails
// or is still running drain_timeout_seconds after the step counts as a miss.
//
// A point first offers warmup_seconds of arrivals at its rate that are not scored, so that the
// scored ones meet a replica already under that load (each point starts from an idle replica:
// the previous one's requests have ended), then step_seconds whose arrivals are scored.
//
// Prompts are the bench client's words (one token each on real tokenizers, so prompt
// lengths are close to the mix's, not exact); ignore_eos makes outputs reach the mix's
// length on vLLM and the emulator. At most max_in_flight requests run at once; an arrival
// past it waits in the client, and that wait counts in its TTFT (profile/point_summary.h).
//
// Blocks for about step_seconds per Measure (threads: RunBench's). Not thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "profile/capacity_search.h"
#include "sim/simulation.h"

namespace gpuscale::cli {

struct EndpointProbeOptions {
  std::string url;    // base URL, e.g. http://127.0.0.1:8000
  std::string model;  // empty: the first model GET /v1/models lists
  sim::SloSpec slo;
  double step_seconds = 30;             // wall seconds of scored arrivals per point
  double warmup_seconds = 10;           // wall seconds of unscored arrivals before them
  double drain_timeout_seconds = 60;    // how long a point's requests may run past it
  double request_timeout_seconds = 60;  // longest silence inside one response
  int32_t max_in_flight = 2048;
  uint64_t seed = 1;
  bool ignore_eos = true;
};

class EndpointProbe final : public profile::LoadProbe {
 public:
  explicit EndpointProbe(EndpointProbeOptions options);

  // Errors: RunBench's (bad options, no model list); kUnavailable (field "--url") when no
  // request completed and every failure was a connection failure; kInvalidArgument (field
  // "--duration") when no request was due within the step.
  Result<profile::CurvePoint> Measure(const profile::Mix& mix, double rate_rps) override;

  // The model requested: the one given, or after the first point the endpoint's first.
  const std::string& model() const { return options_.model; }

 private:
  EndpointProbeOptions options_;
};

}  // namespace gpuscale::cli
