// libFuzzer target for capacity profile files (`slo: {profile: FILE}`, `disagg: {profile:
// FILE}`; docs/profiles.md): a profile is a file a user edits or copies between machines, so
// no text may crash the reader or let an exception escape. Every error carries a message;
// whatever it accepts keeps the schema's promises (positive capacities and lengths, a
// positive fitted capacity unless a role profile) and survives a write and re-read unchanged.
//   build-asan/fuzz/profile_file_fuzz -max_total_time=600 fuzz/corpus/profile_file_fuzz
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "config/profile_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscale;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = config::ParseProfileText(text, "fuzz");
  if (!parsed) {
    if (parsed.error().message.empty()) std::abort();
    return 0;
  }
  const profile::CapacityProfile& p = *parsed;
  if (p.mixes.empty()) std::abort();
  for (const profile::MixProfile& m : p.mixes) {
    if (m.mix.prompt_tokens < 1 || m.mix.output_tokens < 1) std::abort();
    if (!(m.capacity_rps > 0) || !std::isfinite(m.capacity_rps)) std::abort();
  }
  if (p.role == profile::ProfileRole::kAggregated && !(p.capacity_tokens_per_second > 0)) {
    std::abort();
  }
  auto again = config::ParseProfileText(config::ProfileToYaml(p), "fuzz (written again)");
  if (!again || !(*again == p)) std::abort();
  return 0;
}
