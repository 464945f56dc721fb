#include "alloc/model_size.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>
#include <vector>

namespace gpuscale::alloc {
namespace {

// Share of a dense model's parameters that sits in the FFN, i.e. is replicated per expert
// in a mixture-of-experts model (see the header for the fit).
constexpr double kExpertFfnShare = 0.81;

std::vector<std::string_view> Tokens(std::string_view name) {
  std::vector<std::string_view> tokens;
  size_t start = 0;
  for (size_t i = 0; i <= name.size(); ++i) {
    const bool cut =
        i == name.size() || name[i] == '-' || name[i] == '_' || name[i] == ':' || name[i] == ' ';
    if (!cut) continue;
    if (i > start) tokens.push_back(name.substr(start, i - start));
    start = i + 1;
  }
  return tokens;
}

// Parses a leading unsigned decimal ("1.5" of "1.5B"); advances `text` past it.
std::optional<double> LeadingNumber(std::string_view& text) {
  size_t end = 0;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) || (text[end] == '.' && end > 0))) {
    ++end;
  }
  if (end == 0 || text[end - 1] == '.') return std::nullopt;
  double value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + end, value);
  if (ec != std::errc() || ptr != text.data() + end) return std::nullopt;
  text.remove_prefix(end);
  return value;
}

struct SizeToken {
  double params = 0;
  bool billions = false;
};

// "70B", "500M", "8x7B"; nullopt for anything else.
std::optional<SizeToken> ParseSizeToken(std::string_view token) {
  std::optional<double> experts;
  std::optional<double> size = LeadingNumber(token);
  if (!size) return std::nullopt;
  if (!token.empty() && (token.front() == 'x' || token.front() == 'X')) {
    token.remove_prefix(1);
    experts = size;
    size = LeadingNumber(token);
    if (!size) return std::nullopt;
  }
  if (token.size() != 1) return std::nullopt;
  const char unit = static_cast<char>(std::tolower(static_cast<unsigned char>(token[0])));
  if (unit != 'b' && unit != 'm') return std::nullopt;
  double params = *size * (unit == 'b' ? 1e9 : 1e6);
  if (experts) params *= (1.0 - kExpertFfnShare) + *experts * kExpertFfnShare;
  if (params <= 0) return std::nullopt;
  return SizeToken{params, unit == 'b'};
}

std::string Lower(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

}  // namespace

std::optional<double> ParamCountFromModelName(std::string_view model) {
  const size_t slash = model.find_last_of('/');
  if (slash != std::string_view::npos) model.remove_prefix(slash + 1);
  std::optional<double> first_millions;
  for (std::string_view token : Tokens(model)) {
    const std::optional<SizeToken> size = ParseSizeToken(token);
    if (!size) continue;
    if (size->billions) return size->params;
    if (!first_millions) first_millions = size->params;
  }
  return first_millions;
}

std::optional<double> BytesPerParameter(std::string_view dtype) {
  const std::string name = Lower(dtype);
  auto starts = [&name](std::string_view prefix) { return name.starts_with(prefix); };
  if (name == "fp32" || name == "float32" || name == "float") return 4.0;
  if (name == "bf16" || name == "bfloat16" || name == "fp16" || name == "float16" ||
      name == "half" || name == "auto") {
    return 2.0;
  }
  if (starts("fp8") || starts("float8") || name == "int8" || name == "w8a8") return 1.0;
  if (name == "int4" || starts("awq") || starts("gptq") || name == "w4a16" || name == "nf4" ||
      name == "bitsandbytes") {
    return 0.5;
  }
  return std::nullopt;
}

std::string_view KnownDtypesText() {
  return "fp32, float32, bf16, bfloat16, fp16, float16, half, auto, fp8, int8, w8a8, int4, "
         "awq, gptq, w4a16, nf4, bitsandbytes";
}

}  // namespace gpuscale::alloc
