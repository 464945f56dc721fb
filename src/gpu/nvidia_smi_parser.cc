#include "gpu/nvidia_smi_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <optional>
#include <set>
#include <string>

namespace gpuscale::gpu {
namespace {

constexpr std::array<std::string_view, 9> kGpuColumns{"index",
                                                      "uuid",
                                                      "name",
                                                      "memory.total",
                                                      "memory.used",
                                                      "memory.free",
                                                      "utilization.gpu",
                                                      "temperature.gpu",
                                                      "power.draw"};
constexpr std::array<std::string_view, 4> kAppColumns{"gpu_uuid", "pid", "used_memory",
                                                      "process_name"};
constexpr size_t kRequiredGpuColumns = 3;  // index, uuid, name

std::string_view Trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n";
  const size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(kSpace) - begin + 1);
}

std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    fields.push_back(Trim(line.substr(start, comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return fields;
}

// nvidia-smi's ways of saying "no reading": "[N/A]", "[Not Supported]", "[Unknown Error]",
// "[GPU requires reset]", bare "N/A", or nothing at all.
bool IsAbsent(std::string_view field) {
  return field.empty() || field == "N/A" || (field.front() == '[' && field.back() == ']');
}

Unexpected<Error> LineError(size_t line, std::string message) {
  return InvalidArgument(std::move(message), fmt::format("line {}", line));
}

// One reading: absent markers -> nullopt; a finite number; otherwise an error.
Result<std::optional<double>> ParseReading(std::string_view field, size_t line,
                                           std::string_view column) {
  if (IsAbsent(field)) return std::optional<double>{};
  double value = 0;
  const char* end = field.data() + field.size();
  auto [ptr, ec] = std::from_chars(field.data(), end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value)) {
    return LineError(line, fmt::format("column {}: expected a number, got '{}'", column, field));
  }
  return std::optional<double>{value};
}

Result<std::optional<int64_t>> ParseMb(std::string_view field, size_t line,
                                       std::string_view column) {
  GS_ASSIGN_OR_RETURN(std::optional<double> value, ParseReading(field, line, column));
  if (!value) return std::optional<int64_t>{};
  if (*value < 0 || *value > 1e12) {
    return LineError(line, fmt::format("column {}: {} is out of range", column, field));
  }
  return std::optional<int64_t>{static_cast<int64_t>(std::llround(*value))};
}

Result<int> ParseId(std::string_view field, size_t line, std::string_view column) {
  int value = 0;
  const char* end = field.data() + field.size();
  auto [ptr, ec] = std::from_chars(field.data(), end, value);
  if (ec != std::errc() || ptr != end || value < 0) {
    return LineError(
        line, fmt::format("column {}: expected a non-negative integer, got '{}'", column, field));
  }
  return value;
}

// Readings after index/uuid/name; `fields` may stop early (absent readings).
Status ParseGpuReadings(const std::vector<std::string_view>& fields, size_t line, GpuInfo& gpu) {
  auto field = [&fields](size_t i) { return i < fields.size() ? fields[i] : std::string_view{}; };
  GS_ASSIGN_OR_RETURN(gpu.memory_total_mb, ParseMb(field(3), line, kGpuColumns[3]));
  GS_ASSIGN_OR_RETURN(gpu.memory_used_mb, ParseMb(field(4), line, kGpuColumns[4]));
  GS_ASSIGN_OR_RETURN(gpu.memory_free_mb, ParseMb(field(5), line, kGpuColumns[5]));
  GS_ASSIGN_OR_RETURN(gpu.utilization_percent, ParseReading(field(6), line, kGpuColumns[6]));
  if (gpu.utilization_percent && (*gpu.utilization_percent < 0 || *gpu.utilization_percent > 100)) {
    return LineError(line, fmt::format("column {}: {} is outside 0..100", kGpuColumns[6],
                                       *gpu.utilization_percent));
  }
  GS_ASSIGN_OR_RETURN(gpu.temperature_c, ParseReading(field(7), line, kGpuColumns[7]));
  GS_ASSIGN_OR_RETURN(gpu.power_draw_w, ParseReading(field(8), line, kGpuColumns[8]));
  return OkStatus();
}

Result<GpuInfo> ParseGpuLine(std::string_view text, size_t line) {
  const std::vector<std::string_view> fields = SplitFields(text);
  if (fields.size() < kRequiredGpuColumns || fields.size() > kGpuColumns.size()) {
    return LineError(line, fmt::format("expected {} comma-separated columns ({}), got {}",
                                       kGpuColumns.size(), kNvidiaSmiGpuQuery, fields.size()));
  }
  GpuInfo gpu;
  GS_ASSIGN_OR_RETURN(gpu.index, ParseId(fields[0], line, kGpuColumns[0]));
  if (IsAbsent(fields[1])) return LineError(line, "column uuid: missing GPU uuid");
  gpu.uuid = std::string(fields[1]);
  gpu.name = std::string(fields[2]);
  GS_RETURN_IF_ERROR(ParseGpuReadings(fields, line, gpu));
  return gpu;
}

// Calls `parse_line(line_text, line_number)` for every non-blank line.
template <typename Fn>
Status ForEachLine(std::string_view text, Fn&& parse_line) {
  size_t line = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t newline = text.find('\n', start);
    if (newline == std::string_view::npos) newline = text.size();
    ++line;
    const std::string_view content = Trim(text.substr(start, newline - start));
    if (!content.empty()) GS_RETURN_IF_ERROR(parse_line(content, line));
    start = newline + 1;
  }
  return OkStatus();
}

}  // namespace

Result<std::vector<GpuInfo>> ParseNvidiaSmiCsv(std::string_view text) {
  std::vector<GpuInfo> gpus;
  std::set<int> seen;
  GS_RETURN_IF_ERROR(ForEachLine(text, [&](std::string_view content, size_t line) -> Status {
    GS_ASSIGN_OR_RETURN(GpuInfo gpu, ParseGpuLine(content, line));
    if (!seen.insert(gpu.index).second) {
      return LineError(line, fmt::format("column index: duplicate GPU index {}", gpu.index));
    }
    gpus.push_back(std::move(gpu));
    return OkStatus();
  }));
  std::stable_sort(gpus.begin(), gpus.end(),
                   [](const GpuInfo& a, const GpuInfo& b) { return a.index < b.index; });
  return gpus;
}

Result<std::vector<NvidiaSmiApp>> ParseNvidiaSmiAppsCsv(std::string_view text) {
  std::vector<NvidiaSmiApp> apps;
  GS_RETURN_IF_ERROR(ForEachLine(text, [&](std::string_view content, size_t line) -> Status {
    const std::vector<std::string_view> fields = SplitFields(content);
    if (fields.size() != kAppColumns.size()) {
      return LineError(line, fmt::format("expected {} comma-separated columns ({}), got {}",
                                         kAppColumns.size(), kNvidiaSmiAppsQuery, fields.size()));
    }
    NvidiaSmiApp app;
    app.gpu_uuid = std::string(fields[0]);
    GS_ASSIGN_OR_RETURN(app.process.pid, ParseId(fields[1], line, kAppColumns[1]));
    GS_ASSIGN_OR_RETURN(app.process.used_memory_mb, ParseMb(fields[2], line, kAppColumns[2]));
    if (!IsAbsent(fields[3])) app.process.name = std::string(fields[3]);
    apps.push_back(std::move(app));
    return OkStatus();
  }));
  return apps;
}

void AttachProcesses(const std::vector<NvidiaSmiApp>& apps, std::vector<GpuInfo>& gpus) {
  for (const NvidiaSmiApp& app : apps) {
    for (GpuInfo& gpu : gpus) {
      if (gpu.uuid == app.gpu_uuid) gpu.processes.push_back(app.process);
    }
  }
}

}  // namespace gpuscale::gpu
