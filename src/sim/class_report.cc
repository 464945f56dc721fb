// SummarizeClasses (report.h): a run's requests per priority and per tenant.
#include <string>
#include <vector>

#include "sim/report.h"

namespace gpuscale::sim {
namespace {

void Count(const RequestRecord& r, const SloSpec& slo, ClassReport& c) {
  ++c.requests;
  if (r.shed) {
    ++c.shed;
  } else if (r.aborted) {
    ++c.aborted;
  } else if (r.finish_s < 0) {
    ++c.unfinished;
  } else {
    ++c.completed;
    c.served_tokens += int64_t{r.input_tokens} + r.output_tokens;
    if (r.contended) ++c.contended_completed;
    if (MeetsSlo(r, slo)) ++c.slo_met;
  }
}

// The classes with requests, each with its attainment.
std::vector<ClassReport> Settle(std::vector<ClassReport> classes) {
  std::erase_if(classes, [](const ClassReport& c) { return c.requests == 0; });
  for (ClassReport& c : classes) {
    c.attainment = static_cast<double>(c.slo_met) / static_cast<double>(c.requests);
  }
  return classes;
}

}  // namespace

void SummarizeClasses(const std::vector<RequestRecord>& requests, const SloSpec& slo,
                      const std::vector<std::string>& tenant_names, SimReport& report) {
  std::vector<ClassReport> priorities(route::kPriorityCount);
  for (int p = 0; p < route::kPriorityCount; ++p) {
    priorities[p].name = std::string(route::PriorityName(static_cast<route::Priority>(p)));
  }
  std::vector<ClassReport> tenants(tenant_names.size());
  for (size_t t = 0; t < tenants.size(); ++t) tenants[t].name = tenant_names[t];
  std::vector<ClassReport> crossed(priorities.size() * tenants.size());
  for (size_t p = 0; p < priorities.size(); ++p) {
    for (size_t t = 0; t < tenants.size(); ++t) {
      crossed[p * tenants.size() + t].name = priorities[p].name + "/" + tenants[t].name;
    }
  }
  bool named_tenant = false;
  report.shed = 0;
  for (const RequestRecord& r : requests) {
    const auto p = static_cast<size_t>(r.priority);
    Count(r, slo, priorities[p]);
    if (r.tenant < tenants.size()) {
      Count(r, slo, tenants[r.tenant]);
      Count(r, slo, crossed[p * tenants.size() + r.tenant]);
    }
    named_tenant |= r.tenant != 0;
    report.shed += r.shed ? 1 : 0;
  }
  report.priorities = Settle(std::move(priorities));
  report.tenants = named_tenant ? Settle(std::move(tenants)) : std::vector<ClassReport>{};
  report.priority_tenants = named_tenant ? Settle(std::move(crossed)) : std::vector<ClassReport>{};
}

}  // namespace gpuscale::sim
