// RenderCompareSvg: a dependency-free SVG (two panels) for `gpuscale simulate --compare`.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "sim/report.h"

namespace gpuscale::sim {
namespace {

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                   "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
constexpr double kWidth = 900, kLeft = 70, kRight = 160, kPanel = 320;

struct Axis {
  double lo, hi, px_lo, px_hi;
  double Map(double v) const {
    return hi > lo ? px_lo + (v - lo) / (hi - lo) * (px_hi - px_lo) : px_lo;
  }
};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

std::string Frame(double top, const std::string& title, const std::string& x_label,
                  const std::string& y_label) {
  return fmt::format(
      "<rect x='{:.1f}' y='{:.1f}' width='{:.1f}' height='{:.1f}' fill='none' stroke='#333'/>\n"
      "<text x='{:.1f}' y='{:.1f}' font-size='15' font-weight='bold'>{}</text>\n"
      "<text x='{:.1f}' y='{:.1f}' font-size='12' text-anchor='middle'>{}</text>\n"
      "<text x='15' y='{:.1f}' font-size='12' transform='rotate(-90 15 {:.1f})' "
      "text-anchor='middle'>{}</text>\n",
      kLeft, top, kWidth - kLeft - kRight, kPanel, kLeft, top - 10, Escape(title),
      (kLeft + kWidth - kRight) / 2, top + kPanel + 32, Escape(x_label), top + kPanel / 2,
      top + kPanel / 2, Escape(y_label));
}

std::string Ticks(const Axis& x, const Axis& y, double y_px_bottom, int decimals_x,
                  int decimals_y) {
  std::string out;
  for (int i = 0; i <= 4; ++i) {
    double vx = x.lo + (x.hi - x.lo) * i / 4, vy = y.lo + (y.hi - y.lo) * i / 4;
    out += fmt::format("<text x='{:.1f}' y='{:.1f}' font-size='10' text-anchor='middle'>"
                       "{:.{}f}</text>\n",
                       x.Map(vx), y_px_bottom + 14, vx, decimals_x);
    out += fmt::format("<text x='{:.1f}' y='{:.1f}' font-size='10' text-anchor='end'>"
                       "{:.{}f}</text>\n",
                       kLeft - 4, y.Map(vy) + 3, vy, decimals_y);
  }
  return out;
}

std::string ScatterPanel(const std::vector<CompareEntry>& entries, const References& refs,
                         double top) {
  const double oracle = refs.oracle_gpu_hours, target = refs.slo_target;
  double x_lo = oracle > 0 ? oracle : 1e300, x_hi = oracle, y_lo = target >= 0 ? target : 1;
  auto include = [&](double gpu_hours, double attainment) {  // widen the axes to a point
    x_lo = std::min(x_lo, gpu_hours);
    x_hi = std::max(x_hi, gpu_hours);
    y_lo = std::min(y_lo, attainment);
  };
  if (const auto& fleet = refs.static_fleet) include(fleet->gpu_hours, fleet->attainment);
  if (const auto& reactive = refs.reactive_plan) include(reactive->gpu_hours, reactive->attainment);
  for (const auto& e : entries) include(e.report.gpu_hours, e.report.attainment);
  Axis x{x_lo * 0.9, x_hi * 1.1, kLeft, kWidth - kRight};
  Axis y{std::max(0.0, y_lo - 0.01), 1.0, top + kPanel, top};
  std::string out = Frame(top, "GPU-hours vs SLO attainment", "GPU-hours", "SLO attainment");
  out += Ticks(x, y, top + kPanel, 2, 3);
  if (oracle >= 0) {
    out += fmt::format("<line x1='{0:.1f}' x2='{0:.1f}' y1='{1:.1f}' y2='{2:.1f}' "
                       "stroke='#555' stroke-dasharray='5,4'/>\n<text x='{0:.1f}' y='{3:.1f}' "
                       "font-size='10'>oracle</text>\n",
                       x.Map(oracle), top, top + kPanel, top + 12);
  }
  if (const auto& fleet = refs.static_fleet) {
    const double cx = x.Map(fleet->gpu_hours), cy = y.Map(fleet->attainment);
    out += fmt::format("<rect x='{:.1f}' y='{:.1f}' width='10' height='10' fill='none' "
                       "stroke='#333' stroke-width='1.5'/>\n<text x='{:.1f}' y='{:.1f}' "
                       "font-size='11'>static fleet ({})</text>\n",
                       cx - 5, cy - 5, cx + 8, cy + 4, fleet->replicas);
  }
  if (const auto& reactive = refs.reactive_plan) {
    const double cx = x.Map(reactive->gpu_hours), cy = y.Map(reactive->attainment);
    out += fmt::format("<polygon points='{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}' "
                       "fill='none' stroke='#333' stroke-width='1.5'/>\n<text x='{:.1f}' "
                       "y='{:.1f}' font-size='11'>reactive</text>\n",
                       cx, cy - 6, cx + 6, cy, cx, cy + 6, cx - 6, cy, cx + 8, cy + 4);
  }
  if (target >= 0) {
    out += fmt::format("<line x1='{0:.1f}' x2='{1:.1f}' y1='{2:.1f}' y2='{2:.1f}' stroke='#aaa' "
                       "stroke-dasharray='2,3'/>\n",
                       kLeft, kWidth - kRight, y.Map(target));
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& r = entries[i].report;
    out += fmt::format("<circle cx='{:.1f}' cy='{:.1f}' r='5' fill='{}'/>\n<text x='{:.1f}' "
                       "y='{:.1f}' font-size='11'>{}</text>\n",
                       x.Map(r.gpu_hours), y.Map(r.attainment), kColors[i % 8],
                       x.Map(r.gpu_hours) + 7, y.Map(r.attainment) + 4,
                       Escape(entries[i].name));
  }
  return out;
}

// The plan as a step line over the panel's time axis (buckets past `t_hi` are cut).
std::string PlanSteps(const OraclePlan& plan, const Axis& x, const Axis& y, double t_hi) {
  std::string points;
  for (size_t b = 0; b < plan.replicas.size(); ++b) {
    const double start = static_cast<double>(b) * plan.bucket_s;
    if (start > t_hi) break;
    const double end = std::min(start + plan.bucket_s, t_hi);
    points += fmt::format("{:.1f},{:.1f} {:.1f},{:.1f} ", x.Map(start), y.Map(plan.replicas[b]),
                          x.Map(end), y.Map(plan.replicas[b]));
  }
  return fmt::format("<polyline points='{}' fill='none' stroke='#000' stroke-dasharray='4 3'/>\n",
                     points);
}

std::string TimelinePanel(const std::vector<CompareEntry>& entries,
                          const std::optional<OraclePlan>& plan, double top) {
  double t_hi = 1, r_hi = 1, load_hi = 1e-9;
  for (const auto& e : entries) {
    for (const auto& row : e.timeline) {
      t_hi = std::max(t_hi, row.time_s);
      r_hi = std::max(r_hi, double(row.ready + row.starting + row.draining));
      load_hi = std::max(load_hi, row.arrival_rate);
    }
  }
  if (plan && !plan->replicas.empty()) {
    r_hi = std::max(r_hi, *std::max_element(plan->replicas.begin(), plan->replicas.end()));
  }
  Axis x{0, t_hi, kLeft, kWidth - kRight};
  Axis y{0, r_hi + 1, top + kPanel, top};
  Axis load{0, load_hi * 1.05, top + kPanel, top};
  std::string out = Frame(top, "Replicas over time (grey: arrival rate, right scale)",
                          "time (s)", "replicas holding GPUs");
  out += Ticks(x, y, top + kPanel, 0, 1);
  if (!entries.empty()) {
    std::string points;
    for (const auto& row : entries[0].timeline) {
      points += fmt::format("{:.1f},{:.1f} ", x.Map(row.time_s), load.Map(row.arrival_rate));
    }
    out += fmt::format("<polyline points='{}' fill='none' stroke='#bbb'/>\n", points);
    out += fmt::format("<text x='{:.1f}' y='{:.1f}' font-size='10'>{:.0f} req/s</text>\n",
                       kWidth - kRight + 4, top + 10, load_hi * 1.05);
  }
  if (plan && !plan->replicas.empty()) {
    out += PlanSteps(*plan, x, y, t_hi);
    out += fmt::format("<text x='{:.1f}' y='{:.1f}' font-size='11'>- - oracle plan (ready)</text>\n",
                       kWidth - kRight + 8, top + 30 + 16 * static_cast<double>(entries.size()));
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    std::string points;
    for (const auto& row : entries[i].timeline) {
      points += fmt::format("{:.1f},{:.1f} ", x.Map(row.time_s),
                            y.Map(row.ready + row.starting + row.draining));
    }
    out += fmt::format("<polyline points='{}' fill='none' stroke='{}' stroke-width='1.2'/>\n",
                       points, kColors[i % 8]);
    out += fmt::format("<text x='{:.1f}' y='{:.1f}' font-size='11' fill='{}'>{}</text>\n",
                       kWidth - kRight + 8, top + 30 + 16 * static_cast<double>(i),
                       kColors[i % 8], Escape(entries[i].name));
  }
  return out;
}

}  // namespace

std::string RenderCompareSvg(const std::vector<CompareEntry>& entries,
                             const References& references) {
  double height = 2 * kPanel + 150;
  std::string out = fmt::format(
      "<svg xmlns='http://www.w3.org/2000/svg' width='{:.0f}' height='{:.0f}' "
      "font-family='sans-serif'>\n<rect width='100%' height='100%' fill='white'/>\n",
      kWidth, height);
  out += ScatterPanel(entries, references, 30);
  out += TimelinePanel(entries, references.oracle_plan, kPanel + 100);
  out += "</svg>\n";
  return out;
}

}  // namespace gpuscale::sim
