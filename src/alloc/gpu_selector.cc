#include "alloc/gpu_selector.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <span>
#include <string_view>
#include <unordered_map>

namespace gpuscale::alloc {
namespace {

using gpu::GpuInfo;
using gpu::GpuSnapshot;

// Longer exclusion lists are cut so that a 10,000-GPU fleet still gives a readable error.
constexpr size_t kMaxListedExclusions = 20;

std::optional<int64_t> FreeMemoryMb(const GpuInfo& gpu) {
  if (gpu.memory_free_mb) return *gpu.memory_free_mb;
  if (gpu.memory_total_mb && gpu.memory_used_mb) return *gpu.memory_total_mb - *gpu.memory_used_mb;
  return std::nullopt;
}

std::string GpuLabel(int index, std::string_view node) {
  return node.empty() ? fmt::format("GPU {}", index) : fmt::format("GPU {} ({})", index, node);
}

// The key to look a GPU up in `taken`, without copying the uuid in the common case.
const std::string& KeyOf(const GpuInfo& gpu, std::string& scratch) {
  if (!gpu.uuid.empty()) return gpu.uuid;
  scratch = LeaseKeyOf(gpu);
  return scratch;
}

// Why a GPU fails a metrics filter; kNone when it passes.
enum class Failure {
  kNone,
  kWrongType,
  kMemoryUnknown,
  kMemoryLow,
  kUtilizationUnknown,
  kUtilizationHigh
};

Failure TypeFailure(const GpuInfo& gpu, const SelectionRequest& request) {
  if (request.gpu_type.empty()) return Failure::kNone;
  return gpu.type == request.gpu_type ? Failure::kNone : Failure::kWrongType;
}

Failure MemoryFailure(const GpuInfo& gpu, const SelectionRequest& request) {
  if (request.min_memory_free_mb <= 0) return Failure::kNone;
  const std::optional<int64_t> free_mb = FreeMemoryMb(gpu);
  if (!free_mb) return Failure::kMemoryUnknown;
  return *free_mb < request.min_memory_free_mb ? Failure::kMemoryLow : Failure::kNone;
}

Failure UtilizationFailure(const GpuInfo& gpu, const SelectionRequest& request) {
  if (request.max_utilization_percent >= 100) return Failure::kNone;
  if (!gpu.utilization_percent) return Failure::kUtilizationUnknown;
  return *gpu.utilization_percent > request.max_utilization_percent ? Failure::kUtilizationHigh
                                                                    : Failure::kNone;
}

std::string Describe(Failure failure, const GpuInfo& gpu, const SelectionRequest& request) {
  switch (failure) {
    case Failure::kWrongType:
      return fmt::format("type {}, not {}", gpu.type.empty() ? "unknown" : gpu.type,
                         request.gpu_type);
    case Failure::kMemoryUnknown:
      return "free memory unknown";
    case Failure::kMemoryLow:
      return fmt::format("{} MiB free < {} MiB required", FreeMemoryMb(gpu).value_or(0),
                         request.min_memory_free_mb);
    case Failure::kUtilizationUnknown:
      return "utilization unknown";
    case Failure::kUtilizationHigh:
      return fmt::format("utilization {:g}% > {:g}% max", gpu.utilization_percent.value_or(0),
                         request.max_utilization_percent);
    case Failure::kNone:
      break;
  }
  return "";
}

// Whether `gpu` passes every filter. With `reasons`, collects each failure as text (for
// error messages); without, stops at the first failure and formats nothing (the hot path).
// One function for both, so the explanation can never disagree with the selection.
bool Passes(const GpuInfo& gpu, const SelectionRequest& request, const TakenGpus& taken,
            std::vector<std::string>* reasons) {
  const std::array<Failure, 3> failures = {TypeFailure(gpu, request), MemoryFailure(gpu, request),
                                           UtilizationFailure(gpu, request)};
  const bool metrics_pass =
      std::all_of(failures.begin(), failures.end(), [](Failure f) { return f == Failure::kNone; });
  if (!reasons && !metrics_pass) return false;  // the cheap checks first on the hot path
  const std::string* owner = nullptr;
  std::string scratch;
  if (taken.owner_of) owner = taken.owner_of(KeyOf(gpu, scratch));
  if (reasons) {
    if (owner) reasons->push_back("leased to " + *owner);  // first: metrics cannot show it
    for (Failure failure : failures) {
      if (failure != Failure::kNone) reasons->push_back(Describe(failure, gpu, request));
    }
  }
  return metrics_pass && owner == nullptr;
}

struct Candidate {
  size_t position = 0;
  const GpuInfo* gpu = nullptr;
  double score = 0;
  uint32_t node_id = 0;  // dense id of gpu->node: groups by node without string compares
};

bool RanksBefore(const Candidate& a, const Candidate& b) {
  if (a.score != b.score) return a.score > b.score;
  if (a.gpu->index != b.gpu->index) return a.gpu->index < b.gpu->index;
  if (a.gpu->node != b.gpu->node) return a.gpu->node < b.gpu->node;
  return a.position < b.position;
}

// Indices into the candidate list; a node's are contiguous ("runs") and best-ranked first.
using Members = std::span<const size_t>;

void SortByRank(std::vector<size_t>& members, const std::vector<Candidate>& c) {
  std::sort(members.begin(), members.end(),
            [&c](size_t a, size_t b) { return RanksBefore(c[a], c[b]); });
}

// A candidate group (members best-ranked first) and how good a placement it is.
struct Group {
  std::vector<size_t> members;
  int worst_link = 0;
  double total_score = 0;
};

bool BetterGroup(const Group& a, const Group& b, const std::vector<Candidate>& c) {
  if (a.worst_link != b.worst_link) return a.worst_link < b.worst_link;
  if (a.total_score != b.total_score) return a.total_score > b.total_score;
  return RanksBefore(c[a.members.front()], c[b.members.front()]);
}

Group MakeGroup(std::vector<size_t> members, int worst_link, const std::vector<Candidate>& c) {
  SortByRank(members, c);
  double total = 0;
  for (size_t m : members) total += c[m].score;  // summed in rank order: deterministic
  return Group{std::move(members), worst_link, total};
}

int Link(const GpuSnapshot& snapshot, size_t a, size_t b) {
  const auto& levels = snapshot.topology.levels;
  if (a >= levels.size() || b >= levels[a].size()) {
    return static_cast<int>(gpu::LinkLevel::kUnknown);
  }
  return static_cast<int>(levels[a][b]);
}

// The greedy group grown from members[seed] (see the header).
Group GrowGroup(const GpuSnapshot& snapshot, const std::vector<Candidate>& c, Members members,
                size_t seed, size_t n) {
  auto link = [&](size_t i, size_t j) {
    return Link(snapshot, c[members[i]].position, c[members[j]].position);
  };
  std::vector<int> worst(members.size());  // worst link from each member to the group
  std::vector<bool> in_group(members.size(), false);
  for (size_t m = 0; m < members.size(); ++m) worst[m] = link(seed, m);
  in_group[seed] = true;
  std::vector<size_t> group = {members[seed]};
  int group_worst = 0;
  while (group.size() < n) {
    size_t pick = members.size();  // closest to the group; ties: best ranked (first)
    for (size_t m = 0; m < members.size(); ++m) {
      if (!in_group[m] && (pick == members.size() || worst[m] < worst[pick])) pick = m;
    }
    in_group[pick] = true;
    group.push_back(members[pick]);
    group_worst = std::max(group_worst, worst[pick]);
    for (size_t m = 0; m < members.size(); ++m) worst[m] = std::max(worst[m], link(pick, m));
  }
  return MakeGroup(std::move(group), group_worst, c);
}

// REQUIRES: members.size() >= n.
Group BestGroupOnNode(const GpuSnapshot& snapshot, const std::vector<Candidate>& c, Members members,
                      size_t n) {
  if (!snapshot.topology.Known()) {
    return MakeGroup(std::vector<size_t>(members.begin(), members.begin() + n), 0, c);
  }
  Group best = GrowGroup(snapshot, c, members, 0, n);
  for (size_t seed = 1; seed < members.size(); ++seed) {
    Group group = GrowGroup(snapshot, c, members, seed, n);
    if (BetterGroup(group, best, c)) best = std::move(group);
  }
  return best;
}

// No node holds n eligible GPUs: fill whole nodes, fullest first, to span few nodes.
std::vector<size_t> FillNodes(std::vector<Members> nodes, const std::vector<Candidate>& c,
                              size_t n) {
  std::sort(nodes.begin(), nodes.end(), [&c](Members a, Members b) {
    if (a.size() != b.size()) return a.size() > b.size();
    return RanksBefore(c[a.front()], c[b.front()]);
  });
  std::vector<size_t> chosen;
  for (Members members : nodes) {
    for (size_t m : members) {
      if (chosen.size() == n) break;
      chosen.push_back(m);
    }
  }
  SortByRank(chosen, c);
  return chosen;
}

// Candidates grouped by node in O(E) (counting sort on node ids), each node best first.
std::vector<size_t> GroupByNode(const std::vector<Candidate>& c, size_t node_count,
                                std::vector<Members>& nodes_out, std::vector<size_t>& storage) {
  std::vector<size_t> start(node_count + 1, 0);
  for (const Candidate& candidate : c) ++start[candidate.node_id + 1];
  for (size_t i = 0; i < node_count; ++i) start[i + 1] += start[i];
  storage.assign(c.size(), 0);
  std::vector<size_t> next(start.begin(), start.end() - 1);
  for (size_t i = 0; i < c.size(); ++i) storage[next[c[i].node_id]++] = i;
  for (size_t node = 0; node < node_count; ++node) {
    auto begin = storage.begin() + static_cast<std::ptrdiff_t>(start[node]);
    auto end = storage.begin() + static_cast<std::ptrdiff_t>(start[node + 1]);
    std::sort(begin, end, [&c](size_t a, size_t b) { return RanksBefore(c[a], c[b]); });
    nodes_out.emplace_back(storage.data() + start[node], start[node + 1] - start[node]);
  }
  return start;
}

// Indices (into `c`) of the n GPUs to hand out, best-ranked first. REQUIRES: c.size() >= n.
std::vector<size_t> Place(const GpuSnapshot& snapshot, const std::vector<Candidate>& c,
                          size_t node_count, size_t n) {
  std::vector<Members> nodes;
  std::vector<size_t> storage;
  GroupByNode(c, node_count, nodes, storage);
  std::optional<Group> best;
  for (Members members : nodes) {
    if (members.size() < n) continue;
    Group group = BestGroupOnNode(snapshot, c, members, n);
    if (!best || BetterGroup(group, *best, c)) best = std::move(group);
  }
  if (best) return best->members;
  return FillNodes(std::move(nodes), c, n);
}

std::string FiltersText(const SelectionRequest& request) {
  std::vector<std::string> filters;
  if (request.min_memory_free_mb > 0) {
    filters.push_back(fmt::format("min {} MiB free", request.min_memory_free_mb));
  }
  if (request.max_utilization_percent < 100) {
    filters.push_back(fmt::format("max {:g}% utilization", request.max_utilization_percent));
  }
  return filters.empty() ? "" : fmt::format(" ({})", fmt::join(filters, ", "));
}

// "; free by type: A100-80GB 2, H100-80GB 3" (not leased, whatever their readings), or
// "; no GPU is free": what a request for another type could get.
std::string FreeByType(const GpuSnapshot& snapshot, const TakenGpus& taken) {
  const std::string free = CountsByType(snapshot, taken);
  return free.empty() ? "; no GPU is free" : "; free by type: " + free;
}

Unexpected<Error> NotEnoughGpus(const GpuSnapshot& snapshot, const SelectionRequest& request,
                                const TakenGpus& taken, const std::vector<Exclusion>& excluded,
                                size_t eligible) {
  const std::string of_type =
      request.gpu_type.empty() ? "" : fmt::format(" of type {}", request.gpu_type);
  std::string message = fmt::format("need {} GPU{}{}, {} of {} eligible{}", request.gpu_count,
                                    request.gpu_count == 1 ? "" : "s", of_type, eligible,
                                    snapshot.gpus.size(), FiltersText(request));
  if (!request.gpu_type.empty()) message += FreeByType(snapshot, taken);
  if (excluded.empty()) {
    message += fmt::format("; the {} backend reports only {} GPU{}", snapshot.backend,
                           snapshot.gpus.size(), snapshot.gpus.size() == 1 ? "" : "s");
  } else {
    std::vector<std::string> lines;
    for (size_t i = 0; i < excluded.size() && i < kMaxListedExclusions; ++i) {
      lines.push_back(
          fmt::format("{}: {}", GpuLabel(excluded[i].index, excluded[i].node), excluded[i].reason));
    }
    if (excluded.size() > kMaxListedExclusions) {
      lines.push_back(fmt::format("and {} more", excluded.size() - kMaxListedExclusions));
    }
    message += fmt::format("; excluded: {}", fmt::join(lines, "; "));
  }
  return ResourceExhausted(std::move(message));
}

SelectedGpu ToSelected(const Candidate& c) {
  SelectedGpu s;
  s.position = c.position;
  s.index = c.gpu->index;
  s.uuid = c.gpu->uuid;
  s.node = c.gpu->node;
  s.name = c.gpu->name;
  s.type = c.gpu->type;
  s.price_per_hour = c.gpu->price_per_hour;
  s.spot = c.gpu->spot;
  s.memory_free_mb = FreeMemoryMb(*c.gpu).value_or(0);
  s.utilization_percent = c.gpu->utilization_percent;
  s.score = c.score;
  return s;
}

}  // namespace

std::vector<int> Selection::Indices() const {
  std::vector<int> indices;
  indices.reserve(gpus.size());
  for (const SelectedGpu& g : gpus) indices.push_back(g.index);
  return indices;
}

std::map<std::string, int> FreeGpusByType(const GpuSnapshot& snapshot, const TakenGpus& taken) {
  std::map<std::string, int> counts;
  std::string scratch;
  for (const GpuInfo& gpu : snapshot.gpus) {
    if (taken.owner_of && taken.owner_of(KeyOf(gpu, scratch)) != nullptr) continue;
    ++counts[gpu.type];
  }
  return counts;
}

std::string CountsByType(const GpuSnapshot& snapshot, const TakenGpus& taken) {
  std::map<std::string, int> counts = FreeGpusByType(snapshot, taken);
  if (auto unknown = counts.extract(""); !unknown.empty()) counts["unknown"] += unknown.mapped();
  std::vector<std::string> parts;
  for (const auto& [type, count] : counts) parts.push_back(fmt::format("{} {}", type, count));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string LeaseKeyOf(const GpuInfo& gpu) {
  if (!gpu.uuid.empty()) return gpu.uuid;
  return fmt::format("{}#{}", gpu.node.empty() ? "local" : gpu.node, gpu.index);
}

std::vector<Exclusion> ExplainExclusions(const GpuSnapshot& snapshot,
                                         const SelectionRequest& request, const TakenGpus& taken) {
  std::vector<Exclusion> excluded;
  for (size_t p = 0; p < snapshot.gpus.size(); ++p) {
    const GpuInfo& gpu = snapshot.gpus[p];
    std::vector<std::string> reasons;
    if (Passes(gpu, request, taken, &reasons)) continue;
    excluded.push_back(
        Exclusion{p, gpu.index, gpu.node, fmt::format("{}", fmt::join(reasons, ", "))});
  }
  return excluded;
}

Status ValidateRequest(const SelectionRequest& request) {
  if (request.gpu_count < 1) {
    return InvalidArgument(fmt::format("expected at least 1 GPU, got {}", request.gpu_count),
                           "gpu_count");
  }
  if (request.min_memory_free_mb < 0) {
    return InvalidArgument("expected a non-negative number of MiB", "min_memory_free_mb");
  }
  if (!(request.max_utilization_percent >= 0 && request.max_utilization_percent <= 100)) {
    return InvalidArgument("expected a percentage in 0..100", "max_utilization_percent");
  }
  if (!(request.weights.memory >= 0 && request.weights.utilization >= 0) ||
      request.weights.memory + request.weights.utilization <= 0) {
    return InvalidArgument("expected non-negative weights, not both zero", "weights");
  }
  return OkStatus();
}

namespace {

// Eligible GPUs of the snapshot with their scores and dense node ids; returns the number
// of distinct nodes among them.
size_t CollectEligible(const GpuSnapshot& snapshot, const SelectionRequest& request,
                       const TakenGpus& taken, std::vector<Candidate>& eligible) {
  std::unordered_map<std::string_view, uint32_t> node_ids;
  std::optional<std::string_view> last_node;  // GPUs come grouped by node: skip most lookups
  uint32_t last_id = 0;
  eligible.reserve(snapshot.gpus.size());
  for (size_t p = 0; p < snapshot.gpus.size(); ++p) {
    const GpuInfo& gpu = snapshot.gpus[p];
    if (!Passes(gpu, request, taken, nullptr)) continue;
    if (!last_node || *last_node != gpu.node) {
      last_id = node_ids.emplace(gpu.node, static_cast<uint32_t>(node_ids.size())).first->second;
      last_node = gpu.node;
    }
    eligible.push_back(Candidate{p, &gpu, gpu::AvailabilityScore(gpu, request.weights), last_id});
  }
  return node_ids.size();
}

}  // namespace

Result<Selection> SelectGpus(const GpuSnapshot& snapshot, const SelectionRequest& request,
                             const TakenGpus& taken) {
  GS_RETURN_IF_ERROR(ValidateRequest(request));
  std::vector<Candidate> eligible;
  const size_t node_count = CollectEligible(snapshot, request, taken, eligible);
  const auto n = static_cast<size_t>(request.gpu_count);
  if (eligible.size() < n) {
    return NotEnoughGpus(snapshot, request, taken, ExplainExclusions(snapshot, request, taken),
                         eligible.size());
  }
  Selection selection;
  if (n == 1 || (node_count == 1 && !snapshot.topology.Known())) {
    // Closeness cannot matter: only the best n need ordering, O(E log n).
    std::partial_sort(eligible.begin(), eligible.begin() + static_cast<std::ptrdiff_t>(n),
                      eligible.end(), RanksBefore);
    for (size_t i = 0; i < n; ++i) selection.gpus.push_back(ToSelected(eligible[i]));
    return selection;
  }
  for (size_t i : Place(snapshot, eligible, node_count, n)) {
    selection.gpus.push_back(ToSelected(eligible[i]));
  }
  return selection;
}

}  // namespace gpuscale::alloc
