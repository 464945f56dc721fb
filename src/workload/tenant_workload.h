// The multi-tenant workload (issue 46): tenants, each with its own system prompt, sending
// multi-turn sessions whose turns extend the previous turn's prompt, one tenant possibly
// "hot" (sending several times each other's traffic), and a mix of priorities. Generated as
// a sim::Trace with block hashes (Mooncake's hash_ids: a request's blocks are its tenant's
// system prompt, then its session's earlier turns, then the new turn), tenants and
// priorities, so that the simulator's prefix caches and door see the sharing a real
// deployment of it would. Pure and seeded: the same spec gives the same trace everywhere.
//
// Arrivals are Poisson at rate_per_second over all tenants; each arrival is the hot tenant's
// with probability hot_ratio / (hot_ratio + tenants - 1), else one of the others'. A tenant
// keeps `sessions_per_tenant` sessions open; an arrival continues one of them (uniformly),
// and a session that has had max_turns turns is replaced by a new one, whose priority is
// drawn from the mix (a session keeps its priority: a conversation is one client's).
//
// Thread-safety: free functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/result.h"
#include "sim/trace.h"

namespace gpuscale::loadgen {

struct TenantWorkloadSpec {
  int tenants = 4;                // tenant-0 is the hot one
  double hot_ratio = 10;          // tenant-0's rate over each other tenant's; 1 = none hot
  double rate_per_second = 10;    // all tenants together
  double duration_seconds = 600;  // arrivals in [0, duration)
  int32_t block_tokens = 64;      // tokens per prompt block (hash id)
  int system_blocks = 16;         // a tenant's system prompt, in every request of it
  int turn_blocks = 4;            // what a turn adds to its session's prompt
  int max_turns = 4;              // turns per session
  int sessions_per_tenant = 8;    // open at once, per tenant
  int32_t output_tokens = 128;
  double critical_ratio = 0.15;  // of sessions; the rest after sheddable is standard
  double sheddable_ratio = 0.55;
  uint64_t seed = 1;
};

// "tenant-0", "tenant-1", ...: the trace's tenant names (Trace::tenants[i + 1]).
std::string TenantName(int tenant);

// Errors: InvalidArgument naming the field (as ParseTenantWorkload spells it) when a count
// is < 1 (tenants, block_tokens, turn_blocks, max_turns, sessions, output_tokens; system_blocks
// may be 0), a rate, duration or hot ratio is not finite and > 0, a priority ratio is outside
// [0, 1] or the two add up to more than 1.
Status ValidateTenantWorkload(const TenantWorkloadSpec& spec);

// `key=value` pairs separated by commas over the defaults, e.g.
// "tenants=4,hot=10,rate=20,duration=600,critical=0.15,sheddable=0.55". Keys: tenants, hot,
// rate, duration, block_tokens, system_blocks, turn_blocks, turns, sessions, output_tokens,
// critical, sheddable. The seed is not among them (the caller's --seed). Errors:
// InvalidArgument naming the key (an unknown one, a value that is not a number) or
// ValidateTenantWorkload's.
Result<TenantWorkloadSpec> ParseTenantWorkload(std::string_view text);

// REQUIRES: ValidateTenantWorkload(spec) is ok.
sim::Trace GenerateTenantTrace(const TenantWorkloadSpec& spec);

// A prompt whose blocks are `hash_ids`: `block_tokens` words per block, each word drawn from
// its block's hash id and position. Equal leading hash ids give equal leading text, so that
// route::PromptBlockKeys at the same block size (a word a token) sees on live text the
// sharing that the trace's hash ids stand for: what a live bench of this workload sends.
std::string PromptText(std::span<const uint64_t> hash_ids, int32_t block_tokens);

}  // namespace gpuscale::loadgen
