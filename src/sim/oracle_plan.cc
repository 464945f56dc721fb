// Step 4 of the oracle bound (sim/oracle.h): the cheapest fleet plan, serving time and
// cold starts together, whose violations fit the SLO's budget.
//
// The problem is a linear program over the fleet h_b held in each bucket:
//   minimize  sum_b h_b * len_b + cold_start * sum_b max(0, h_b - h_{b-1})   (h_{-1} = initial)
//   subject to sum_b V_b(h_b) <= budget,  min_n <= h_b <= max_n,
// with V_b the lower convex hull of bucket b's fleet curve. It has a single coupling
// constraint, so it is solved through its Lagrangian dual: for a price lambda per violation,
// min_h [cost(h) + lambda * V(h)] is a chain of convex per-bucket costs with a linear penalty
// on rises, whose minimum lies on integer fleets (its breakpoints are integers) and is found
// by dynamic programming in O(buckets x fleet sizes). The dual value at any lambda is a lower
// bound (weak duality); the price where two minimizers, one over the budget and one within
// it, cost the same is the dual optimum, and a mix of those two plans is a primal optimum of
// the same cost (strong duality of a linear program). Earlier versions priced the serving
// plan first and its cold starts after, which could overshoot the joint optimum.
#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/oracle.h"

namespace gpuscale::sim {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// One bucket's violations for every fleet size in [min_n, max_n] (index n - min_n), on the
// lower convex hull of its curve; infinity where the fleet cannot meet the budget.
std::vector<double> HullViolations(const FleetCurve& curve, int min_n, int max_n) {
  const int sizes = max_n - min_n + 1;
  std::vector<double> raw(static_cast<size_t>(sizes), kInfinity);
  const int top = curve.n_low + static_cast<int>(curve.violations.size()) - 1;
  for (int n = min_n; n <= max_n; ++n) {
    double v;
    if (n < curve.n_low) {
      // FleetCurves stops going down where the violations exceed the budget (a smaller fleet
      // only adds to them, so it is out) or where every request misses (a smaller fleet
      // misses them too, for less).
      const int first = curve.violations.front();
      v = first >= curve.scored ? first : kInfinity;
    } else {
      v = curve.violations[static_cast<size_t>(std::min(n, top) - curve.n_low)];
    }
    raw[static_cast<size_t>(n - min_n)] = v;
  }
  // Lower convex hull over the finite points (monotone chain), then interpolated.
  std::vector<int> hull;
  for (int i = 0; i < sizes; ++i) {
    if (std::isinf(raw[static_cast<size_t>(i)])) continue;
    while (hull.size() >= 2) {
      const int a = hull[hull.size() - 2], b = hull.back();
      const double cross = (raw[static_cast<size_t>(b)] - raw[static_cast<size_t>(a)]) * (i - a) -
                           (raw[static_cast<size_t>(i)] - raw[static_cast<size_t>(a)]) * (b - a);
      if (cross < 0) break;  // b lies strictly below the chord a-i: keep it
      hull.pop_back();
    }
    hull.push_back(i);
  }
  std::vector<double> out(static_cast<size_t>(sizes), kInfinity);
  for (size_t k = 0; k < hull.size(); ++k) {
    const int a = hull[k];
    out[static_cast<size_t>(a)] = raw[static_cast<size_t>(a)];
    if (k + 1 == hull.size()) break;
    const int b = hull[k + 1];
    for (int i = a + 1; i < b; ++i) {
      out[static_cast<size_t>(i)] =
          raw[static_cast<size_t>(a)] +
          (raw[static_cast<size_t>(b)] - raw[static_cast<size_t>(a)]) * (i - a) / (b - a);
    }
  }
  return out;
}

struct IntegerPlan {
  std::vector<int> fleet;  // per bucket
  double cost = 0;         // replica-seconds: serving plus cold starts
  double violations = 0;   // on the hulls
};

class PlanSolver {
 public:
  PlanSolver(const std::vector<FleetCurve>& curves, const PlanLimits& limits)
      : curves_(curves), limits_(limits) {
    min_n_ = std::max(limits.min_replicas, 1);
    max_n_ = std::max(limits.max_replicas, min_n_);
    for (const FleetCurve& c : curves) hulls_.push_back(HullViolations(c, min_n_, max_n_));
  }

  size_t Sizes() const { return static_cast<size_t>(max_n_ - min_n_ + 1); }
  int MinN() const { return min_n_; }

  // The fewest violations any plan leaves: every bucket at its hull's minimum.
  double FewestViolations() const {
    double total = 0;
    for (const auto& h : hulls_) total += *std::min_element(h.begin(), h.end());
    return total;
  }

  // min over integer plans of cost + price * violations; ties go to the smaller fleet.
  IntegerPlan Minimize(double price) const {
    const size_t sizes = Sizes(), buckets = curves_.size();
    const double cold = std::max(limits_.cold_start_s, 0.0);
    // best[i]: the cheapest (cost + price x violations) of buckets 0..b ending at min_n + i.
    std::vector<double> best(sizes, kInfinity), next(sizes);
    std::vector<std::vector<int>> from(buckets, std::vector<int>(sizes, -1));
    // Before the first bucket: `initial` ready replicas, free; fewer by stopping some (free),
    // more by starting them (a cold start each).
    const int initial = std::max(limits_.initial_replicas, 0);
    for (size_t i = 0; i < sizes; ++i) {
      const int n = min_n_ + static_cast<int>(i);
      best[i] = cold * std::max(0, n - initial);
    }
    for (size_t b = 0; b < buckets; ++b) {
      std::vector<int>& arg = from[b];
      if (b == 0) {
        for (size_t i = 0; i < sizes; ++i) arg[i] = static_cast<int>(i);  // no predecessor
        next = best;
      } else {
        // Coming down is free: the cheapest predecessor at or above i (suffix minimum) ...
        double suffix = kInfinity;
        int suffix_arg = -1;
        for (size_t i = sizes; i-- > 0;) {
          if (best[i] <= suffix) suffix = best[i], suffix_arg = static_cast<int>(i);
          next[i] = suffix, arg[i] = suffix_arg;
        }
        // ... or from below, paying a cold start per replica of rise (prefix minimum).
        double prefix = kInfinity;  // min over j < i of best[j] - cold * j
        int prefix_arg = -1;
        for (size_t i = 0; i < sizes; ++i) {
          if (i > 0) {
            const double c = best[i - 1] - cold * static_cast<double>(i - 1);
            if (c < prefix) prefix = c, prefix_arg = static_cast<int>(i - 1);
          }
          const double up = prefix + cold * static_cast<double>(i);
          if (up < next[i]) next[i] = up, arg[i] = prefix_arg;
        }
      }
      for (size_t i = 0; i < sizes; ++i) {
        const double v = hulls_[b][i];
        const int n = min_n_ + static_cast<int>(i);
        next[i] = std::isinf(v) ? kInfinity : next[i] + n * curves_[b].len + price * v;
      }
      best.swap(next);
    }
    IntegerPlan plan;
    plan.fleet.assign(buckets, min_n_);
    if (buckets == 0) return plan;
    size_t at = static_cast<size_t>(std::min_element(best.begin(), best.end()) - best.begin());
    for (size_t b = buckets; b-- > 0;) {
      plan.fleet[b] = min_n_ + static_cast<int>(at);
      at = static_cast<size_t>(from[b][at]);
    }
    Price(plan);
    return plan;
  }

  // Fills in cost and violations of plan.fleet.
  void Price(IntegerPlan& plan) const {
    const double cold = std::max(limits_.cold_start_s, 0.0);
    plan.cost = plan.violations = 0;
    int previous = std::max(limits_.initial_replicas, 0);
    for (size_t b = 0; b < plan.fleet.size(); ++b) {
      const int n = plan.fleet[b];
      plan.cost += n * curves_[b].len + cold * std::max(0, n - previous);
      plan.violations += hulls_[b][static_cast<size_t>(n - min_n_)];
      previous = n;
    }
  }

 private:
  const std::vector<FleetCurve>& curves_;
  PlanLimits limits_;
  int min_n_ = 1, max_n_ = 1;
  std::vector<std::vector<double>> hulls_;
};

}  // namespace

CheapestPlan SolveCheapestPlan(const std::vector<FleetCurve>& curves, double allowed_violations,
                               const PlanLimits& limits) {
  PlanSolver solver(curves, limits);
  CheapestPlan out;
  // Out of reach: the cheapest plan among those with the fewest violations.
  const double fewest = solver.FewestViolations();
  const double budget = std::max(allowed_violations, fewest);
  // Violation counts are integers or interpolations between them; this absorbs rounding.
  const double slack = 1e-9 * std::max(1.0, budget);
  auto finish = [&](double lower_bound) {
    double serving = 0;
    for (size_t b = 0; b < curves.size(); ++b) serving += out.replicas[b] * curves[b].len;
    out.serving_replica_seconds = serving;
    out.start_replica_seconds = std::max(lower_bound - serving, 0.0);
    return out;
  };
  IntegerPlan free_plan = solver.Minimize(0);
  if (free_plan.violations <= budget + slack) {  // the budget does not bind
    out.replicas.assign(free_plan.fleet.begin(), free_plan.fleet.end());
    out.violations = free_plan.violations;
    return finish(free_plan.cost);
  }
  // A price high enough that the minimizer fits the budget.
  double price = 1;
  IntegerPlan within = solver.Minimize(price);
  for (int i = 0; i < 200 && within.violations > budget + slack; ++i) {
    price *= 2;
    within = solver.Minimize(price);
  }
  IntegerPlan over = std::move(free_plan);
  // Cutting planes on the concave dual: price where the two plans' Lagrangians meet; a
  // cheaper minimizer there replaces the one on its side of the budget, until none is.
  double dual = -kInfinity;
  for (int i = 0; i < 200 && within.violations < over.violations; ++i) {
    price = (within.cost - over.cost) / (over.violations - within.violations);
    IntegerPlan p = solver.Minimize(price);
    const double meet = over.cost + price * over.violations;
    const double value = p.cost + price * p.violations;
    dual = std::max(dual, value - price * budget);
    if (value >= meet - 1e-9 * std::max(1.0, std::abs(meet))) break;
    (p.violations > budget + slack ? over : within) = std::move(p);
  }
  // The primal optimum: the mix of the two plans that spends exactly the budget.
  const double share_over = std::clamp(
      (budget - within.violations) / std::max(over.violations - within.violations, 1e-300), 0.0,
      1.0);
  out.replicas.resize(curves.size());
  for (size_t b = 0; b < curves.size(); ++b) {
    out.replicas[b] = share_over * over.fleet[b] + (1 - share_over) * within.fleet[b];
  }
  out.violations = share_over * over.violations + (1 - share_over) * within.violations;
  // The dual value is the certified bound; the mixed plan costs the same up to rounding.
  const double mixed = share_over * over.cost + (1 - share_over) * within.cost;
  return finish(std::isinf(dual) ? mixed : std::min(dual, mixed));
}

}  // namespace gpuscale::sim
