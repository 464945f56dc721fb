#include "profile/capacity_search.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpuscale::profile {
namespace {

std::string MixField(const Mix& mix) {
  return fmt::format("mix {}:{}", mix.prompt_tokens, mix.output_tokens);
}

std::string Describe(const CurvePoint& p) {
  return fmt::format(
      "at {:.4g} req/s attainment {:.4f} over {} requests (TTFT p99 {:.3f} s, "
      "TPOT p99 {:.4f} s)",
      p.rate_rps, p.attainment, p.requests, p.ttft_p99_seconds, p.tpot_p99_seconds);
}

// Measures and reports one point; `held` tells whether it met the target.
class Prober {
 public:
  Prober(LoadProbe& probe, const Mix& mix, double target, const SearchProgress& progress)
      : probe_(probe), mix_(mix), target_(target), progress_(progress) {}

  Result<CurvePoint> Measure(double rate) {
    GS_ASSIGN_OR_RETURN(CurvePoint point, probe_.Measure(mix_, rate));
    if (progress_) progress_(mix_, point, Held(point));
    return point;
  }
  bool Held(const CurvePoint& point) const { return point.attainment >= target_; }

 private:
  LoadProbe& probe_;
  const Mix mix_;
  const double target_;
  const SearchProgress& progress_;
};

// A bracket [held, missed] of rates: `held` met the target, `missed` did not.
struct Bracket {
  double held = 0;
  double missed = 0;
};

// Doubles up from start (or halves down) until one rate holds and the next one misses.
Result<Bracket> FindBracket(Prober& prober, const Mix& mix, const BisectionOptions& o) {
  double rate = o.start_rps;
  GS_ASSIGN_OR_RETURN(CurvePoint point, prober.Measure(rate));
  const bool rising = prober.Held(point);
  while (prober.Held(point) == rising) {
    rate = rising ? rate * 2 : rate / 2;
    if (rate > o.max_rps) {
      return InvalidArgument(fmt::format("still within the SLO past {} req/s ({}); the probe "
                                         "never saturates",
                                         o.max_rps, Describe(point)),
                             MixField(mix));
    }
    if (rate < o.min_rps) {
      return InvalidArgument(fmt::format("no rate down to {} req/s met the SLO ({}); a lone "
                                         "request of this mix may miss it",
                                         o.min_rps, Describe(point)),
                             MixField(mix));
    }
    GS_ASSIGN_OR_RETURN(point, prober.Measure(rate));
  }
  return rising ? Bracket{rate / 2, rate} : Bracket{rate, rate * 2};
}

}  // namespace

Result<MixProfile> BisectCapacity(LoadProbe& probe, const Mix& mix, double target_ratio,
                                  const BisectionOptions& options, const SearchProgress& progress) {
  Prober prober(probe, mix, target_ratio, progress);
  GS_ASSIGN_OR_RETURN(Bracket bracket, FindBracket(prober, mix, options));
  for (int i = 0; i < options.steps; ++i) {
    const double mid = (bracket.held + bracket.missed) / 2;
    GS_ASSIGN_OR_RETURN(CurvePoint point, prober.Measure(mid));
    (prober.Held(point) ? bracket.held : bracket.missed) = mid;
  }
  MixProfile result;
  result.mix = mix;
  result.capacity_rps = bracket.held;
  std::vector<double> shares = options.curve_shares;
  std::sort(shares.begin(), shares.end());
  for (double share : shares) {
    GS_ASSIGN_OR_RETURN(CurvePoint point, prober.Measure(share * bracket.held));
    result.curve.push_back(point);
  }
  return result;
}

Result<MixProfile> StepCapacity(LoadProbe& probe, const Mix& mix, double target_ratio,
                                const StepOptions& options, const SearchProgress& progress) {
  Prober prober(probe, mix, target_ratio, progress);
  MixProfile result;
  result.mix = mix;
  Bracket bracket;
  for (double rate = options.start_rps; bracket.missed == 0; rate *= options.step_factor) {
    if (rate > options.max_rps) {
      return InvalidArgument(
          fmt::format("still within the SLO at {:.4g} req/s, the last step below the maximum "
                      "rate {} req/s; raise it",
                      bracket.held, options.max_rps),
          MixField(mix));
    }
    GS_ASSIGN_OR_RETURN(CurvePoint point, prober.Measure(rate));
    result.curve.push_back(point);
    (prober.Held(point) ? bracket.held : bracket.missed) = rate;
    if (bracket.held == 0 && bracket.missed > 0) {
      return InvalidArgument(
          fmt::format("the first step already missed the target ({}); lower the start rate",
                      Describe(point)),
          MixField(mix));
    }
  }
  for (int i = 0; i < options.refine_steps; ++i) {
    const double mid = (bracket.held + bracket.missed) / 2;
    GS_ASSIGN_OR_RETURN(CurvePoint point, prober.Measure(mid));
    result.curve.push_back(point);
    (prober.Held(point) ? bracket.held : bracket.missed) = mid;
  }
  result.capacity_rps = bracket.held;
  std::stable_sort(
      result.curve.begin(), result.curve.end(),
      [](const CurvePoint& a, const CurvePoint& b) { return a.rate_rps < b.rate_rps; });
  return result;
}

}  // namespace gpuscale::profile
