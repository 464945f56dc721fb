#include "profile/role_profile.h"

#include <fmt/format.h>

namespace gpuscale::profile {

double RoleTokensPerRequest(ProfileRole role, const Mix& mix) {
  switch (role) {
    case ProfileRole::kPrefill:
      return mix.prompt_tokens;
    case ProfileRole::kDecode:
      return mix.output_tokens;
    case ProfileRole::kAggregated:
      break;
  }
  return static_cast<double>(mix.prompt_tokens) + mix.output_tokens;
}

MixProfile RoleMix(ProfileRole role, const Mix& mix, double capacity_tokens_per_second) {
  MixProfile m;
  m.mix = mix;
  m.capacity_tokens_per_second = capacity_tokens_per_second;
  m.capacity_rps = capacity_tokens_per_second / RoleTokensPerRequest(role, mix);
  return m;
}

void ApplyRoleCapacities(CapacityProfile& profile) {
  for (MixProfile& m : profile.mixes) {
    m.capacity_tokens_per_second = m.capacity_rps * RoleTokensPerRequest(profile.role, m.mix);
  }
}

Status CheckRoleMixes(ProfileRole role, const std::vector<Mix>& mixes, std::string_view field) {
  if (role != ProfileRole::kPrefill) return OkStatus();
  for (const Mix& m : mixes) {
    if (m.output_tokens == 1) continue;
    return InvalidArgument(
        fmt::format("{}:{} asks {} output tokens, but a prefill replica makes the first token "
                    "only: give PROMPT:1",
                    m.prompt_tokens, m.output_tokens, m.output_tokens),
        std::string(field));
  }
  return OkStatus();
}

const std::vector<Mix>& DefaultPrefillMixes() {
  static const std::vector<Mix> mixes = {{512, 1}, {2048, 1}, {8192, 1}};
  return mixes;
}

}  // namespace gpuscale::profile
