#include "profile/capacity_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace gpuscale::profile {
namespace {

// Whether a:b and c:d are the same ratio (exact in 64-bit integers).
bool SameRatio(const Mix& x, const Mix& y) {
  return static_cast<int64_t>(x.prompt_tokens) * y.output_tokens ==
         static_cast<int64_t>(y.prompt_tokens) * x.output_tokens;
}

Status CheckMixValues(const std::vector<MixProfile>& mixes) {
  for (size_t i = 0; i < mixes.size(); ++i) {
    const MixProfile& m = mixes[i];
    if (m.mix.prompt_tokens < 1 || m.mix.output_tokens < 1 || !(m.capacity_rps > 0) ||
        !std::isfinite(m.capacity_rps)) {
      return InvalidArgument(
          fmt::format("mix {}:{} has capacity {} req/s; the fit needs lengths >= 1 and a "
                      "positive capacity",
                      m.mix.prompt_tokens, m.mix.output_tokens, m.capacity_rps),
          fmt::format("mixes[{}]", i));
    }
  }
  return OkStatus();
}

// The double nearest to `v` written with `digits` significant digits.
double Round(double v, int digits) {
  if (v == 0 || !std::isfinite(v)) return v;
  const std::string text = fmt::format("{:.{}g}", v, digits);
  double rounded = v;
  std::from_chars(text.data(), text.data() + text.size(), rounded);
  return rounded;
}

// The sums of the least-squares normal equations in relative residuals: row i of the system
// is (prompt_i, output_i) x capacity_rps_i = (u_i, v_i), its right-hand side 1.
struct NormalEquations {
  double uu = 0, uv = 0, vv = 0, u = 0, v = 0;
};

NormalEquations Sums(const std::vector<MixProfile>& mixes) {
  NormalEquations n;
  for (const MixProfile& m : mixes) {
    const double u = m.mix.prompt_tokens * m.capacity_rps;
    const double v = m.mix.output_tokens * m.capacity_rps;
    n.uu += u * u;
    n.uv += u * v;
    n.vv += v * v;
    n.u += u;
    n.v += v;
  }
  return n;
}

}  // namespace

std::string_view ProfileRoleName(ProfileRole role) {
  switch (role) {
    case ProfileRole::kPrefill:
      return "prefill";
    case ProfileRole::kDecode:
      return "decode";
    case ProfileRole::kAggregated:
      break;
  }
  return "aggregated";
}

CapacityProfile RoundedForOutput(const CapacityProfile& profile, int significant_digits) {
  CapacityProfile p = profile;
  auto round = [significant_digits](double& v) { v = Round(v, significant_digits); };
  round(p.output_token_weight);
  round(p.capacity_tokens_per_second);
  round(p.fit_max_error_ratio);
  for (MixProfile& m : p.mixes) {
    round(m.capacity_rps);
    round(m.capacity_tokens_per_second);
    for (CurvePoint& c : m.curve) {
      for (double* v : {&c.rate_rps, &c.attainment, &c.ttft_p50_seconds, &c.ttft_p99_seconds,
                        &c.tpot_p50_seconds, &c.tpot_p99_seconds}) {
        round(*v);
      }
    }
  }
  return p;
}

const std::vector<Mix>& DefaultMixes() {
  static const std::vector<Mix> mixes = {
      {256, 64}, {1024, 256}, {2048, 128}, {4096, 64}, {512, 1024}};
  return mixes;
}

Status CheckFittable(const std::vector<Mix>& mixes, std::string_view field) {
  for (size_t i = 1; i < mixes.size(); ++i) {
    if (!SameRatio(mixes[0], mixes[i])) return OkStatus();
  }
  return InvalidArgument(
      fmt::format("{} given; fitting the generated-token weight needs at least two mixes "
                  "whose prompt:output ratios differ (with one ratio any weight fits)",
                  mixes.size() == 1 ? "one mix" : "only mixes of one prompt:output ratio"),
      std::string(field));
}

Result<CapacityFit> FitCapacity(const std::vector<MixProfile>& mixes) {
  std::vector<Mix> shapes;
  for (const MixProfile& m : mixes) shapes.push_back(m.mix);
  if (shapes.empty()) return InvalidArgument("no mix to fit", "mixes");
  GS_RETURN_IF_ERROR(CheckFittable(shapes, "mixes"));
  GS_RETURN_IF_ERROR(CheckMixValues(mixes));
  const NormalEquations n = Sums(mixes);
  // Not zero: the ratios differ, so the rows are not proportional (Cauchy-Schwarz).
  const double det = n.uu * n.vv - n.uv * n.uv;
  double a = (n.vv * n.u - n.uv * n.v) / det;
  double b = (n.uu * n.v - n.uv * n.u) / det;
  CapacityFit fit;
  if (b < 0) {
    b = 0;
    a = n.u / n.uu;
    fit.weight_clamped = true;
  }
  if (!(a > 0) || !std::isfinite(a) || !std::isfinite(b)) {
    return InvalidArgument(
        "the capacities fit no positive cost per prompt token: longer prompts did not lower "
        "the capacity at these mixes (e.g. a replica bound by its batch slots or its decode "
        "steps), so load cannot be counted in prompt-token equivalents; add mixes whose "
        "prompts are long enough to cost time, or use the slo policy in request mode",
        "mixes");
  }
  fit.output_token_weight = b / a;
  fit.capacity_tokens_per_second = 1 / a;
  for (const MixProfile& m : mixes) {
    const double predicted = fit.capacity_tokens_per_second /
                             (m.mix.prompt_tokens + fit.output_token_weight * m.mix.output_tokens);
    fit.max_error_ratio = std::max(fit.max_error_ratio, std::abs(predicted / m.capacity_rps - 1));
  }
  return fit;
}

Status ApplyFit(CapacityProfile& profile) {
  GS_ASSIGN_OR_RETURN(CapacityFit fit, FitCapacity(profile.mixes));
  profile.output_token_weight = fit.output_token_weight;
  profile.capacity_tokens_per_second = fit.capacity_tokens_per_second;
  profile.fit_max_error_ratio = fit.max_error_ratio;
  for (MixProfile& m : profile.mixes) {
    m.capacity_tokens_per_second =
        m.capacity_rps * (m.mix.prompt_tokens + fit.output_token_weight * m.mix.output_tokens);
  }
  return OkStatus();
}

}  // namespace gpuscale::profile
