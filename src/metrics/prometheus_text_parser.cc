// Single pass over the text: split into lines, each line parsed with a cursor over a
// string_view; only label values with escapes and the kept strings are copied.
#include "metrics/prometheus_text_parser.h"

#include <fmt/format.h>

#include <charconv>
#include <functional>
#include <string>
#include <unordered_map>

namespace gpuscale::metrics {
namespace {

constexpr size_t kNoFamily = static_cast<size_t>(-1);

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == ':';
}

// Input text for an error message: at most 40 bytes, non-printable bytes shown as '?', so a
// binary body cannot garble logs.
std::string Quote(std::string_view text) {
  constexpr size_t kMax = 40;
  std::string out = "'";
  for (char c : text.substr(0, kMax)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (text.size() > kMax) out += "...";
  out += "'";
  return out;
}

// A read position inside one line (without its line end).
class Cursor {
 public:
  explicit Cursor(std::string_view line) : rest_(line) {}
  bool AtEnd() const { return rest_.empty(); }
  char Peek() const { return rest_.empty() ? '\0' : rest_.front(); }
  std::string_view rest() const { return rest_; }
  // Returns whether at least one blank was skipped.
  bool SkipBlanks() {
    size_t n = 0;
    while (n < rest_.size() && IsBlank(rest_[n])) ++n;
    rest_.remove_prefix(n);
    return n > 0;
  }
  bool Consume(char c) {
    if (rest_.empty() || rest_.front() != c) return false;
    rest_.remove_prefix(1);
    return true;
  }
  void Skip(size_t n) { rest_.remove_prefix(n); }
  std::string_view TakeName() { return TakeWhile(IsNameChar); }
  std::string_view TakeToken() {
    return TakeWhile([](char c) { return !IsBlank(c); });
  }

 private:
  template <typename Pred>
  std::string_view TakeWhile(Pred pred) {
    size_t n = 0;
    while (n < rest_.size() && pred(rest_[n])) ++n;
    std::string_view taken = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return taken;
  }
  std::string_view rest_;
};

// Lets unordered_map<std::string, ...> be searched with a string_view without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

bool ParseType(std::string_view token, MetricType* type) {
  static constexpr MetricType kTypes[] = {MetricType::kCounter, MetricType::kGauge,
                                          MetricType::kHistogram, MetricType::kSummary,
                                          MetricType::kUntyped};
  for (MetricType t : kTypes) {
    if (token == MetricTypeName(t)) {
      *type = t;
      return true;
    }
  }
  return false;
}

// HELP text escapes: \\ and \n; any other backslash is kept as written.
std::string UnescapeHelp(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && (text[i + 1] == '\\' || text[i + 1] == 'n')) {
      out += text[i + 1] == 'n' ? '\n' : '\\';
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

// Whether sample `name` belongs to `family` by the format's naming rules.
bool Belongs(const MetricFamily& family, std::string_view name) {
  if (!name.starts_with(family.name)) return false;
  std::string_view suffix = name.substr(family.name.size());
  if (suffix.empty()) return true;
  switch (family.type) {
    case MetricType::kHistogram:
      return suffix == "_bucket" || suffix == "_sum" || suffix == "_count";
    case MetricType::kSummary:
      return suffix == "_sum" || suffix == "_count";
    case MetricType::kCounter:
      return suffix == "_total";  // OpenMetrics-style `# TYPE x counter` with samples x_total
    default:
      return false;
  }
}

class TextParser {
 public:
  explicit TextParser(const ParseOptions& options) : options_(options) {}
  Result<Exposition> Run(std::string_view text);

 private:
  Status ParseLine(std::string_view line);
  // Whether options_.only_families keeps `name` (a family's, or with `sample` a sample's).
  bool Wanted(std::string_view name, bool sample) const;
  Status ParseComment(Cursor cur);
  Status ParseHelp(Cursor cur);
  Status ParseTypeLine(Cursor cur);
  Status ParseSample(Cursor cur);
  Status ParseLabels(Cursor& cur, Sample& sample);
  Status ParseLabelValue(Cursor& cur, std::string_view label_name, std::string* value);
  Status CheckBucket(const MetricFamily& family, const Sample& sample) const;
  size_t FamilyFor(std::string_view sample_name);
  size_t GetOrCreateFamily(std::string_view name);

  const ParseOptions& options_;
  Exposition out_;
  std::unordered_map<std::string, size_t, StringHash, std::equal_to<>> index_;
  std::vector<bool> type_declared_;  // per family: whether a `# TYPE` line was seen
  size_t current_ = kNoFamily;       // family of the previous sample (the common case)
  // The previous sample line's name (a view into the text) and whether only_families wants it.
  std::string_view last_sample_name_;
  bool last_sample_wanted_ = false;
};

Result<Exposition> TextParser::Run(std::string_view text) {
  int64_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // CRLF tolerance
    Status status = ParseLine(line);
    if (status) continue;
    Error error = std::move(status).error();
    error.field = fmt::format("line {}", line_number);
    if (!options_.skip_bad_lines) return Unexpected<Error>(std::move(error));
    ++out_.skipped_lines;
    if (out_.line_errors.size() < options_.max_kept_errors) {
      out_.line_errors.push_back(std::move(error));
    }
  }
  return std::move(out_);
}

Status TextParser::ParseLine(std::string_view line) {
  Cursor cur(line);
  cur.SkipBlanks();
  if (cur.AtEnd()) return OkStatus();
  if (cur.Consume('#')) return ParseComment(cur);
  if (options_.only_families != nullptr) {
    // A histogram's bucket lines come in runs of one name (20-odd in vLLM's): the set is
    // asked once per run, not once per line.
    const std::string_view name = Cursor(cur).TakeName();
    if (name != last_sample_name_) {
      last_sample_name_ = name;
      last_sample_wanted_ = Wanted(name, true);
    }
    if (!last_sample_wanted_) return OkStatus();
  }
  return ParseSample(cur);
}

bool TextParser::Wanted(std::string_view name, bool sample) const {
  const auto& wanted = *options_.only_families;
  if (wanted.contains(name)) return true;
  if (!sample) return false;
  for (std::string_view suffix : {"_bucket", "_sum", "_count", "_total", "_created"}) {
    if (name.ends_with(suffix) && wanted.contains(name.substr(0, name.size() - suffix.size()))) {
      return true;
    }
  }
  return false;
}

Status TextParser::ParseComment(Cursor cur) {
  cur.SkipBlanks();
  std::string_view keyword = cur.TakeToken();
  if (options_.only_families != nullptr && (keyword == "HELP" || keyword == "TYPE")) {
    Cursor name = cur;
    name.SkipBlanks();
    if (!Wanted(name.TakeToken(), false)) return OkStatus();
  }
  if (keyword == "HELP") return ParseHelp(cur);
  if (keyword == "TYPE") return ParseTypeLine(cur);
  return OkStatus();  // any other comment
}

Status TextParser::ParseHelp(Cursor cur) {
  cur.SkipBlanks();
  std::string_view name = cur.TakeToken();
  if (!IsValidMetricName(name)) {
    return InvalidArgument(
        fmt::format("expected a metric name after '# HELP', found {}", Quote(name)));
  }
  cur.SkipBlanks();
  size_t family = GetOrCreateFamily(name);
  if (!out_.families[family].help.empty()) {
    return InvalidArgument(fmt::format("second HELP line for {}", Quote(name)));
  }
  out_.families[family].help = UnescapeHelp(cur.rest());
  current_ = family;  // samples that follow belong to it first (what the writer relies on)
  return OkStatus();
}

Status TextParser::ParseTypeLine(Cursor cur) {
  cur.SkipBlanks();
  std::string_view name = cur.TakeToken();
  if (!IsValidMetricName(name)) {
    return InvalidArgument(
        fmt::format("expected a metric name after '# TYPE', found {}", Quote(name)));
  }
  cur.SkipBlanks();
  std::string_view token = cur.TakeToken();
  MetricType type;
  if (!ParseType(token, &type)) {
    return InvalidArgument(fmt::format(
        "unknown metric type {} for {} (expected counter, gauge, histogram, summary or untyped)",
        Quote(token), Quote(name)));
  }
  cur.SkipBlanks();
  if (!cur.AtEnd()) {
    return InvalidArgument(
        fmt::format("unexpected text {} after the type of {}", Quote(cur.rest()), Quote(name)));
  }
  size_t family = GetOrCreateFamily(name);
  if (type_declared_[family]) {
    return InvalidArgument(fmt::format("second TYPE line for {}", Quote(name)));
  }
  if (!out_.families[family].samples.empty()) {
    return InvalidArgument(
        fmt::format("TYPE line for {} must come before its samples", Quote(name)));
  }
  type_declared_[family] = true;
  out_.families[family].type = type;
  current_ = family;
  return OkStatus();
}

// Grammar: name [ '{' labels '}' ] value [ timestamp ], tokens separated by blanks. Just over
// 40 lines: each step's error message is spelled out here, where the context is.
Status TextParser::ParseSample(Cursor cur) {
  std::string_view name = cur.TakeName();
  if (name.empty()) {
    return InvalidArgument(fmt::format("expected a metric name, found {}", Quote(cur.rest())));
  }
  if (!IsValidMetricName(name)) {
    return InvalidArgument(
        fmt::format("invalid metric name {} (must match [a-zA-Z_:][a-zA-Z0-9_:]*)", Quote(name)));
  }
  Sample sample;
  sample.name = name;
  bool blank = cur.SkipBlanks();
  if (cur.Consume('{')) {
    GS_RETURN_IF_ERROR(ParseLabels(cur, sample));
    blank = cur.SkipBlanks();
  }
  if (cur.AtEnd()) return InvalidArgument(fmt::format("missing value for {}", Quote(name)));
  if (!blank) {
    return InvalidArgument(fmt::format("unexpected character {} after {} (expected a space)",
                                       Quote(cur.rest().substr(0, 1)), Quote(name)));
  }
  std::string_view value_token = cur.TakeToken();
  Result<double> value = ParsePrometheusValue(value_token);
  if (!value) {
    return InvalidArgument(fmt::format("{} for {}", value.error().message, Quote(name)));
  }
  sample.value = *value;
  cur.SkipBlanks();
  if (!cur.AtEnd()) {
    std::string_view ts = cur.TakeToken();
    int64_t ms = 0;
    auto [ptr, ec] = std::from_chars(ts.data(), ts.data() + ts.size(), ms);
    if (ec != std::errc() || ptr != ts.data() + ts.size()) {
      return InvalidArgument(fmt::format(
          "invalid timestamp {} for {} (expected integer milliseconds)", Quote(ts), Quote(name)));
    }
    sample.timestamp_ms = ms;
    cur.SkipBlanks();
    if (!cur.AtEnd()) {
      return InvalidArgument(fmt::format("unexpected text {} after the timestamp of {}",
                                         Quote(cur.rest()), Quote(name)));
    }
  }
  size_t family = FamilyFor(name);
  GS_RETURN_IF_ERROR(CheckBucket(out_.families[family], sample));
  out_.families[family].samples.push_back(std::move(sample));
  return OkStatus();
}

// After '{': label="value" pairs separated by ',', optional trailing ',', then '}'.
Status TextParser::ParseLabels(Cursor& cur, Sample& sample) {
  while (true) {
    cur.SkipBlanks();
    if (cur.Consume('}')) return OkStatus();
    std::string_view label = cur.TakeName();
    if (!IsValidLabelName(label)) {
      return InvalidArgument(fmt::format("expected a label name or '}}' in {}, found {}",
                                         Quote(sample.name),
                                         Quote(label.empty() ? cur.rest() : label)));
    }
    cur.SkipBlanks();
    if (!cur.Consume('=')) {
      return InvalidArgument(fmt::format("expected '=' after label name {}", Quote(label)));
    }
    if (sample.FindLabel(label) != nullptr) {
      return InvalidArgument(
          fmt::format("duplicate label {} in {}", Quote(label), Quote(sample.name)));
    }
    cur.SkipBlanks();
    Label& added = sample.labels.emplace_back(Label{std::string(label), {}});
    GS_RETURN_IF_ERROR(ParseLabelValue(cur, label, &added.value));
    cur.SkipBlanks();
    if (cur.Consume(',')) continue;
    if (cur.Peek() != '}') {
      return InvalidArgument(
          fmt::format("expected ',' or '}}' after the value of label {}, found {}", Quote(label),
                      Quote(cur.rest())));
    }
  }
}

Status TextParser::ParseLabelValue(Cursor& cur, std::string_view label, std::string* value) {
  if (!cur.Consume('"')) {
    return InvalidArgument(
        fmt::format("expected '\"' to open the value of label {}", Quote(label)));
  }
  std::string_view rest = cur.rest();
  size_t stop = rest.find_first_of("\"\\");
  if (stop != std::string_view::npos && rest[stop] == '"') {  // fast path: no escapes
    value->assign(rest.substr(0, stop));
    cur.Skip(stop + 1);
    return OkStatus();
  }
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '"') {
      cur.Skip(i + 1);
      return OkStatus();
    }
    if (rest[i] != '\\') {
      *value += rest[i];
      continue;
    }
    char next = i + 1 < rest.size() ? rest[i + 1] : '\0';
    if (next != '\\' && next != '"' && next != 'n') {
      return InvalidArgument(
          fmt::format("invalid escape {} in the value of label {} (expected \\\\, \\\" or \\n)",
                      Quote(rest.substr(i, 2)), Quote(label)));
    }
    *value += next == 'n' ? '\n' : next;
    ++i;
  }
  return InvalidArgument(
      fmt::format("unterminated value of label {} (missing closing '\"')", Quote(label)));
}

// Histogram buckets must say which bucket they are; the lookup helpers rely on it.
Status TextParser::CheckBucket(const MetricFamily& family, const Sample& sample) const {
  if (family.type != MetricType::kHistogram || sample.name.size() != family.name.size() + 7 ||
      !sample.name.ends_with("_bucket")) {
    return OkStatus();
  }
  const std::string* le = sample.FindLabel("le");
  if (le == nullptr) {
    return InvalidArgument(
        fmt::format("histogram bucket {} has no 'le' label", Quote(sample.name)));
  }
  if (!ParsePrometheusValue(*le)) {
    return InvalidArgument(fmt::format("invalid 'le' value {} in {} (expected a number or +Inf)",
                                       Quote(*le), Quote(sample.name)));
  }
  return OkStatus();
}

size_t TextParser::FamilyFor(std::string_view sample_name) {
  if (current_ != kNoFamily && Belongs(out_.families[current_], sample_name)) return current_;
  if (auto it = index_.find(sample_name); it != index_.end()) return current_ = it->second;
  for (std::string_view suffix : {"_bucket", "_sum", "_count", "_total"}) {
    if (!sample_name.ends_with(suffix)) continue;
    auto it = index_.find(sample_name.substr(0, sample_name.size() - suffix.size()));
    if (it != index_.end() && Belongs(out_.families[it->second], sample_name)) {
      return current_ = it->second;
    }
  }
  return current_ = GetOrCreateFamily(sample_name);
}

size_t TextParser::GetOrCreateFamily(std::string_view name) {
  if (auto it = index_.find(name); it != index_.end()) return it->second;
  size_t family = out_.families.size();
  out_.families.emplace_back().name = name;
  type_declared_.push_back(false);
  index_.emplace(std::string(name), family);
  return family;
}

}  // namespace

const MetricFamily* Exposition::FindFamily(std::string_view name) const {
  for (const MetricFamily& family : families) {
    if (family.name == name) return &family;
  }
  return nullptr;
}

size_t Exposition::SampleCount() const {
  size_t n = 0;
  for (const MetricFamily& family : families) n += family.samples.size();
  return n;
}

Result<Exposition> ParsePrometheusText(std::string_view text, const ParseOptions& options) {
  return TextParser(options).Run(text);
}

Result<double> ParsePrometheusValue(std::string_view token) {
  std::string_view digits = token;
  // from_chars takes no '+' sign; the format writes "+Inf".
  if (digits.size() > 1 && digits[0] == '+' && digits[1] != '-' && digits[1] != '+') {
    digits.remove_prefix(1);
  }
  double value = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) {
    return InvalidArgument(
        fmt::format("invalid value {} (expected a number, NaN, +Inf or -Inf)", Quote(token)));
  }
  return value;
}

}  // namespace gpuscale::metrics
