// A capacity profile for tests of the profile file, the slo policy's `profile:` key and the
// configs that name it (config/, daemon/): two mixes that the fit w = 4, C = 36,000
// prompt-token equivalents/s describes exactly, measured at the default SLO. Test-only.
#pragma once

#include <fstream>
#include <string>

#include "config/profile_file.h"
#include "profile/capacity_profile.h"
#include "profile/role_profile.h"

namespace gpuscale::testing_data {

inline profile::CapacityProfile SampleProfile() {
  profile::CapacityProfile p;
  p.model = "llama-3-8b";
  p.source = "simulator";
  p.slo = {1, 0.05, 0.99};
  p.replica_model = sim::ReplicaModelConfig{};
  p.measurement = {"bisection", 300, 60, 7};
  for (const profile::Mix mix : {profile::Mix{256, 64}, profile::Mix{512, 1024}}) {
    profile::MixProfile m;
    m.mix = mix;
    m.capacity_rps = 36000.0 / (mix.prompt_tokens + 4.0 * mix.output_tokens);
    m.curve.push_back({0.5 * m.capacity_rps, 1000, 1, 0.05, 0.09, 0.012, 0.014});
    m.curve.push_back({m.capacity_rps, 2000, 0.991, 0.2, 0.95, 0.03, 0.049});
    p.mixes.push_back(m);
  }
  (void)profile::ApplyFit(p);  // exact numbers: cannot fail
  return p;
}

// A role profile (profile/role_profile.h) at the default SLO, as `gpuscale profile --role
// --sim` writes one: prefill, 20,000 prompt tokens/s at 512-token prompts and 16,000 at 8k;
// decode, 6,000 generated tokens/s at 1k:64 and 3,000 at 8k:256.
inline profile::CapacityProfile SampleRoleProfile(profile::ProfileRole role) {
  profile::CapacityProfile p;
  p.model = "llama-3-8b";
  p.source = "simulator";
  p.role = role;
  p.slo = {1, 0.05, 0.99};
  p.replica_model = sim::ReplicaModelConfig{};
  p.measurement = {"model", 0, 0, 1};
  const bool prefill = role == profile::ProfileRole::kPrefill;
  const profile::Mix mixes[2] = {prefill ? profile::Mix{512, 1} : profile::Mix{1024, 64},
                                 prefill ? profile::Mix{8192, 1} : profile::Mix{8192, 256}};
  const double capacities[2] = {prefill ? 20000.0 : 6000.0, prefill ? 16000.0 : 3000.0};
  for (int i = 0; i < 2; ++i) p.mixes.push_back(profile::RoleMix(role, mixes[i], capacities[i]));
  return p;
}

// Writes `profile` as a profile file at `path`; false when it cannot.
inline bool WriteProfileFile(const std::string& path,
                             const profile::CapacityProfile& profile = SampleProfile()) {
  std::ofstream out(path, std::ios::binary);
  out << config::ProfileToYaml(profile);
  return static_cast<bool>(out);
}

}  // namespace gpuscale::testing_data
