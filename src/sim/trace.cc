// Trace readers. Parsing is hand-written over std::string_view with std::from_chars (no
// streams, regex or JSON library): from_chars is locale-independent, never allocates and is an
// order of magnitude faster than istream/strtod, so the 19k-row Azure trace parses in a few ms
// and a fuzzer can drive the code without third-party parsers in the way. Every read is bounds
// checked against the view; nothing is recursive, so deep nesting cannot overflow the stack.
#include "sim/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "sim/trace_json.h"

namespace gpuscale::sim {
namespace {

// Bad values are echoed in messages shortened and printable (trace_json.h).
std::string Echo(std::string_view value) { return EchoValue(value); }

Unexpected<Error> LineError(int64_t line, std::string message) {
  return InvalidArgument(std::move(message), fmt::format("line {}", line));
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A token count: a non-negative integer that fits int32 (from_chars rejects '+' and spaces
// inside, and reports overflow, which we treat as "not a count").
bool ParseCount(std::string_view s, int32_t* out) {
  s = Trim(s);
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && ptr == end && *out >= 0;
}

// A finite, non-negative decimal number.
bool ParseNonNegativeNumber(std::string_view s, double* out) {
  s = Trim(s);
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out, std::chars_format::general);
  return ec == std::errc() && ptr == end && std::isfinite(*out) && *out >= 0;
}

bool ParseDigits(std::string_view s, size_t pos, size_t count, int* out) {
  if (pos + count > s.size()) return false;
  int value = 0;
  for (size_t i = pos; i < pos + count; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    value = value * 10 + (s[i] - '0');
  }
  *out = value;
  return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// A point in time as whole seconds since the epoch plus nanoseconds: integers keep Azure's
// 100 ns resolution exact, and (unlike one int64 of nanoseconds) cannot overflow for any
// four-digit year.
struct WallTime {
  int64_t seconds = 0;
  int64_t nanos = 0;
};

// `YYYY-MM-DD HH:MM:SS[.f…]` (up to 9 fractional digits; Azure writes 7), no zone.
bool ParseAzureTimestamp(std::string_view s, WallTime* out) {
  s = Trim(s);
  int year, month, day, hour, minute, second;
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') ||
      s[13] != ':' || s[16] != ':' || !ParseDigits(s, 0, 4, &year) ||
      !ParseDigits(s, 5, 2, &month) || !ParseDigits(s, 8, 2, &day) ||
      !ParseDigits(s, 11, 2, &hour) || !ParseDigits(s, 14, 2, &minute) ||
      !ParseDigits(s, 17, 2, &second) || month < 1 || month > 12 || day < 1 || day > 31 ||
      hour > 23 || minute > 59 || second > 60) {
    return false;
  }
  int64_t fraction_ns = 0;
  if (s.size() > 19) {
    const size_t digits = s.size() - 20;
    if (s[19] != '.' || digits < 1 || digits > 9) return false;
    int value;
    if (!ParseDigits(s, 20, digits, &value)) return false;
    fraction_ns = value;
    for (size_t i = digits; i < 9; ++i) fraction_ns *= 10;
  }
  out->seconds = DaysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second;
  out->nanos = fraction_ns;
  return true;
}

// Yields the non-blank lines of a text without their "\n" / "\r\n" and counts physical lines
// (1-based) so errors can name them. A missing final newline is fine.
class LineReader {
 public:
  explicit LineReader(std::string_view text) : text_(text) {}

  bool Next(std::string_view* line) {
    while (pos_ < text_.size()) {
      size_t end = text_.find('\n', pos_);
      if (end == std::string_view::npos) end = text_.size();
      std::string_view current = text_.substr(pos_, end - pos_);
      pos_ = end + 1;
      ++line_number_;
      if (!current.empty() && current.back() == '\r') current.remove_suffix(1);
      if (!Trim(current).empty()) {
        *line = current;
        return true;
      }
    }
    return false;
  }
  int64_t line_number() const { return line_number_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int64_t line_number_ = 0;
};

// Where a row's three values live and how to read the arrival time.
struct Schema {
  TraceFormat format;
  std::array<std::string_view, 3> names;  // arrival, input tokens, output tokens
  bool azure_timestamp;                   // else a number of seconds times seconds_per_unit
  double seconds_per_unit;
};

constexpr Schema kAzureSchema{
    TraceFormat::kAzureCsv, {"TIMESTAMP", "ContextTokens", "GeneratedTokens"}, true, 1.0};
constexpr Schema kPlainCsvSchema{
    TraceFormat::kPlainCsv, {"arrival_s", "input_tokens", "output_tokens"}, false, 1.0};
constexpr Schema kMooncakeSchema{
    TraceFormat::kMooncakeJsonl, {"timestamp", "input_length", "output_length"}, false, 1e-3};
constexpr Schema kPlainJsonlSchema{
    TraceFormat::kPlainJsonl, {"arrival_s", "input_tokens", "output_tokens"}, false, 1.0};

// Optional fields of every format with named fields (trace.h).
constexpr std::string_view kPriorityKey = "priority";
constexpr std::string_view kTenantKey = "tenant";

// A row's values: arrival, input and output tokens, then the optional priority and tenant
// (data() == nullptr when the row has none).
using RowValues = std::array<std::string_view, 5>;

// Mooncake's per-request block hashes, and the block size they were taken over (its README:
// "hash_ids ... each block 512 tokens").
constexpr std::string_view kHashIdsKey = "hash_ids";
constexpr int32_t kMooncakeBlockTokens = 512;

const Schema& SchemaFor(TraceFormat format) {
  switch (format) {
    case TraceFormat::kAzureCsv:
      return kAzureSchema;
    case TraceFormat::kPlainCsv:
      return kPlainCsvSchema;
    case TraceFormat::kMooncakeJsonl:
      return kMooncakeSchema;
    default:
      return kPlainJsonlSchema;
  }
}

bool IsCsv(TraceFormat format) {
  return format == TraceFormat::kAzureCsv || format == TraceFormat::kPlainCsv;
}

// Parse state shared by the CSV and JSONL readers.
struct RowSink {
  const Schema& schema;
  bool skip_bad_rows;
  Trace* trace;
  std::optional<WallTime> base;  // Azure: first row's timestamp; arrivals are relative to it
  std::map<std::string, uint32_t, std::less<>> tenant_index = {{"", 0}};

  // Converts the raw values of one row and keeps the request, or reports why not.
  Status Add(int64_t line, const RowValues& values) {
    TraceRequest request;
    if (schema.azure_timestamp) {
      WallTime time;
      if (!ParseAzureTimestamp(values[0], &time)) {
        return LineError(line, fmt::format("{}: expected 'YYYY-MM-DD HH:MM:SS.fffffff', got '{}'",
                                           schema.names[0], Echo(values[0])));
      }
      if (!base) base = time;
      request.arrival_s = static_cast<double>(time.seconds - base->seconds) +
                          static_cast<double>(time.nanos - base->nanos) * 1e-9;
    } else if (!ParseNonNegativeNumber(values[0], &request.arrival_s)) {
      return LineError(line, fmt::format("{}: expected a non-negative number, got '{}'",
                                         schema.names[0], Echo(values[0])));
    }
    request.arrival_s *= schema.seconds_per_unit;
    int32_t* counts[2] = {&request.input_tokens, &request.output_tokens};
    for (int i = 0; i < 2; ++i) {
      if (!ParseCount(values[i + 1], counts[i])) {
        return LineError(line, fmt::format("{}: expected a non-negative integer, got '{}'",
                                           schema.names[i + 1], Echo(values[i + 1])));
      }
    }
    GS_RETURN_IF_ERROR(ReadClass(line, values, request));
    trace->requests.push_back(request);
    return OkStatus();
  }

  // The optional priority and tenant of a row.
  Status ReadClass(int64_t line, const RowValues& values, TraceRequest& request) {
    if (values[3].data() != nullptr && !Trim(values[3]).empty()) {
      request.priority = route::ParsePriority(Trim(values[3]));
      if (!request.priority) {
        return LineError(line, fmt::format("{}: expected critical, standard or sheddable, got '{}'",
                                           kPriorityKey, Echo(values[3])));
      }
    }
    if (values[4].data() == nullptr) return OkStatus();
    const std::string_view name = Trim(values[4]);
    auto it = tenant_index.find(name);
    if (it == tenant_index.end()) {
      it = tenant_index.emplace(std::string(name), static_cast<uint32_t>(trace->tenants.size()))
               .first;
      trace->tenants.emplace_back(name);
    }
    request.tenant = it->second;
    return OkStatus();
  }

  // Applies the skip policy to a row's outcome.
  Status Settle(Status row) {
    if (row || !skip_bad_rows) return row;
    if (trace->skipped_rows++ == 0) {
      trace->first_skipped_row = fmt::format("{}: {}", row.error().field, row.error().message);
    }
    return OkStatus();
  }
};

// ---- CSV ----

struct CsvLayout {
  std::array<size_t, 5> index;  // column of each RowValues entry; SIZE_MAX: absent
  size_t num_columns;
};

Result<CsvLayout> ReadCsvHeader(std::string_view header, int64_t line, const Schema& schema) {
  CsvLayout layout{{SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX}, 0};
  const std::array<std::string_view, 5> names = {schema.names[0], schema.names[1], schema.names[2],
                                                 kPriorityKey, kTenantKey};
  for (size_t start = 0;; ++layout.num_columns) {
    const size_t comma = std::min(header.find(',', start), header.size());
    const std::string_view name = Trim(header.substr(start, comma - start));
    for (size_t k = 0; k < names.size(); ++k) {
      if (name == names[k] && layout.index[k] == SIZE_MAX) {
        layout.index[k] = layout.num_columns;
      }
    }
    if (comma == header.size()) break;
    start = comma + 1;
  }
  ++layout.num_columns;
  for (size_t k = 0; k < 3; ++k) {
    if (layout.index[k] == SIZE_MAX) {
      return LineError(line, fmt::format("header lacks column '{}': expected {},{},{}, got '{}'",
                                         schema.names[k], schema.names[0], schema.names[1],
                                         schema.names[2], Echo(header)));
    }
  }
  return layout;
}

Status ReadCsvRow(std::string_view row, int64_t line, const CsvLayout& layout, RowSink& sink) {
  RowValues values;
  size_t column = 0;
  for (size_t start = 0;; ++column) {
    const size_t comma = std::min(row.find(',', start), row.size());
    for (size_t k = 0; k < values.size(); ++k) {
      if (layout.index[k] == column) values[k] = row.substr(start, comma - start);
    }
    if (comma == row.size()) break;
    start = comma + 1;
  }
  if (column + 1 != layout.num_columns) {
    return LineError(line, fmt::format("expected {} comma-separated fields, got {}",
                                       layout.num_columns, column + 1));
  }
  return sink.Add(line, values);
}

Status ReadCsv(LineReader& reader, std::string_view header, RowSink& sink) {
  GS_ASSIGN_OR_RETURN(const CsvLayout layout,
                      ReadCsvHeader(header, reader.line_number(), sink.schema));
  std::string_view row;
  while (reader.Next(&row)) {
    GS_RETURN_IF_ERROR(sink.Settle(ReadCsvRow(row, reader.line_number(), layout, sink)));
  }
  return OkStatus();
}

// ---- JSONL ----

// Mooncake's block hashes (kept for the simulator's prefix cache): at most as many blocks
// as the prompt fills, counting a partial last block. Appends to the trace's flat list.
Status AddHashIds(int64_t line, std::string_view text, int32_t block_tokens, Trace* trace) {
  TraceRequest& request = trace->requests.back();
  const size_t begin = trace->hash_ids.size();
  if (auto error = ParseHashIdArray(text, &trace->hash_ids)) {
    return LineError(line, fmt::format("{}: {}", kHashIdsKey, *error));
  }
  const size_t count = trace->hash_ids.size() - begin;
  const int64_t blocks = (int64_t{request.input_tokens} + block_tokens - 1) / block_tokens;
  if (static_cast<int64_t>(count) > blocks || trace->hash_ids.size() > UINT32_MAX) {
    trace->hash_ids.resize(begin);
    return LineError(line, fmt::format("{}: {} block hashes, but {} = {} fills at most {} "
                                       "blocks of {} tokens",
                                       kHashIdsKey, count, kMooncakeSchema.names[1],
                                       request.input_tokens, blocks, block_tokens));
  }
  request.hash_begin = static_cast<uint32_t>(begin);
  request.hash_count = static_cast<uint32_t>(count);
  return OkStatus();
}

Status ReadJsonRow(std::string_view row, int64_t line, RowSink& sink) {
  const bool mooncake = sink.schema.format == TraceFormat::kMooncakeJsonl;
  const std::array<std::string_view, 6> keys = {
      sink.schema.names[0], sink.schema.names[1], sink.schema.names[2],
      kPriorityKey,         kTenantKey,           mooncake ? kHashIdsKey : std::string_view()};
  std::array<std::string_view, 6> found;
  if (auto error = JsonObjectScanner(row).Scan(keys, found)) {
    return LineError(line, fmt::format("malformed JSON: {}", *error));
  }
  const RowValues values = {found[0], found[1], found[2], found[3], found[4]};
  for (size_t k = 0; k < 3; ++k) {
    if (values[k].data() == nullptr) {
      return LineError(line, fmt::format("missing key \"{}\"", sink.schema.names[k]));
    }
  }
  GS_RETURN_IF_ERROR(sink.Add(line, values));
  if (!mooncake || found[5].data() == nullptr) return OkStatus();
  Status hashes = AddHashIds(line, found[5], sink.trace->hash_block_tokens, sink.trace);
  if (!hashes) sink.trace->requests.pop_back();
  return hashes;
}

Status ReadJsonl(LineReader& reader, std::string_view first, RowSink& sink) {
  std::string_view row = first;
  do {
    GS_RETURN_IF_ERROR(sink.Settle(ReadJsonRow(row, reader.line_number(), sink)));
  } while (reader.Next(&row));
  return OkStatus();
}

// ---- detection, ordering ----

Result<TraceFormat> DetectFormat(std::string_view first, int64_t line) {
  const std::string_view t = Trim(first);
  if (!t.empty() && t.front() == '{') {
    if (t.find("\"input_length\"") != std::string_view::npos) return TraceFormat::kMooncakeJsonl;
    if (t.find("\"input_tokens\"") != std::string_view::npos) return TraceFormat::kPlainJsonl;
  } else {
    if (ReadCsvHeader(t, line, kAzureSchema)) return TraceFormat::kAzureCsv;
    if (ReadCsvHeader(t, line, kPlainCsvSchema)) return TraceFormat::kPlainCsv;
  }
  return LineError(
      line, fmt::format("cannot detect the trace format from '{}': expected an Azure CSV header "
                        "(TIMESTAMP,ContextTokens,GeneratedTokens), a plain CSV header ({}), or "
                        "JSON lines with timestamp/input_length/output_length (Mooncake) or "
                        "arrival_s/input_tokens/output_tokens",
                        Echo(t), kPlainCsvHeader));
}

}  // namespace

std::string_view TraceFormatName(TraceFormat format) {
  switch (format) {
    case TraceFormat::kAuto:
      return "auto";
    case TraceFormat::kAzureCsv:
      return "azure_csv";
    case TraceFormat::kMooncakeJsonl:
      return "mooncake_jsonl";
    case TraceFormat::kPlainCsv:
      return "plain_csv";
    case TraceFormat::kPlainJsonl:
      return "plain_jsonl";
  }
  return "auto";
}

TraceStats SummarizeTrace(const Trace& trace) {
  TraceStats stats;
  stats.requests = static_cast<int64_t>(trace.requests.size());
  if (trace.requests.empty()) return stats;
  stats.span_s = trace.requests.back().arrival_s - trace.requests.front().arrival_s;
  if (stats.span_s > 0) stats.rate_per_s = static_cast<double>(stats.requests) / stats.span_s;
  double input = 0, output = 0;
  for (const TraceRequest& r : trace.requests) {
    input += r.input_tokens;
    output += r.output_tokens;
  }
  stats.mean_input_tokens = input / static_cast<double>(stats.requests);
  stats.mean_output_tokens = output / static_cast<double>(stats.requests);
  return stats;
}

Result<TraceFormat> ParseTraceFormat(std::string_view name) {
  for (TraceFormat f : {TraceFormat::kAuto, TraceFormat::kAzureCsv, TraceFormat::kMooncakeJsonl,
                        TraceFormat::kPlainCsv, TraceFormat::kPlainJsonl}) {
    if (name == TraceFormatName(f)) return f;
  }
  return InvalidArgument(
      fmt::format("unknown trace format '{}': expected auto, azure_csv, mooncake_jsonl, "
                  "plain_csv or plain_jsonl",
                  Echo(name)),
      "format");
}

Result<Trace> ParseTrace(std::string_view text, const TraceReadOptions& options) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // UTF-8 byte order mark
  LineReader reader(text);
  std::string_view first;
  if (!reader.Next(&first)) {
    return LineError(1, "trace is empty: expected a header line or one JSON object per line");
  }
  TraceFormat format = options.format;
  if (format == TraceFormat::kAuto) {
    GS_ASSIGN_OR_RETURN(format, DetectFormat(first, reader.line_number()));
  }
  Trace trace;
  trace.format = std::string(TraceFormatName(format));
  if (format == TraceFormat::kMooncakeJsonl) {
    trace.hash_block_tokens =
        options.hash_block_tokens > 0 ? options.hash_block_tokens : kMooncakeBlockTokens;
  }
  RowSink sink{SchemaFor(format), options.skip_bad_rows, &trace, std::nullopt, {{"", 0}}};
  GS_RETURN_IF_ERROR(IsCsv(format) ? ReadCsv(reader, first, sink) : ReadJsonl(reader, first, sink));
  SortAndRebase(&trace.requests);
  return trace;
}

void SortAndRebase(std::vector<TraceRequest>* requests) {
  auto by_arrival = [](const TraceRequest& a, const TraceRequest& b) {
    return a.arrival_s < b.arrival_s;
  };
  if (!std::is_sorted(requests->begin(), requests->end(), by_arrival)) {
    std::stable_sort(requests->begin(), requests->end(), by_arrival);
  }
  if (requests->empty()) return;
  const double origin = requests->front().arrival_s;
  for (TraceRequest& r : *requests) r.arrival_s -= origin;
}

}  // namespace gpuscale::sim
