#include "gpu/gpu_type.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <vector>

namespace gpuscale::gpu {
namespace {

std::string Upper(std::string_view word) {
  std::string out(word);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

// Words that say who made the card or how it is mounted, not which GPU it is: two H100s
// that differ only here run the same engines at the same speed for our purposes.
bool Dropped(std::string_view word) {
  constexpr std::array<std::string_view, 5> kExact = {"NVIDIA", "TESLA", "GEFORCE", "QUADRO",
                                                      "PCIE"};
  const std::string upper = Upper(word);
  if (std::find(kExact.begin(), kExact.end(), upper) != kExact.end()) return true;
  return upper.starts_with("SXM") || upper.starts_with("HBM");
}

// "80GB", "141GB": digits then GB.
bool IsMemorySize(std::string_view word) {
  const std::string upper = Upper(word);
  if (upper.size() < 3 || !upper.ends_with("GB")) return false;
  return std::all_of(upper.begin(), upper.end() - 2,
                     [](unsigned char c) { return std::isdigit(c) != 0; });
}

std::vector<std::string_view> Words(std::string_view name) {
  std::vector<std::string_view> words;
  size_t start = 0;
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i == name.size() || name[i] == ' ' || name[i] == '-') {
      if (i > start) words.push_back(name.substr(start, i - start));
      start = i + 1;
    }
  }
  return words;
}

}  // namespace

std::string GpuTypeKey(std::string_view product_name) {
  std::string key;
  std::string memory;
  for (std::string_view word : Words(product_name)) {
    if (Dropped(word)) continue;
    if (IsMemorySize(word)) {
      if (memory.empty()) memory = Upper(word);
      continue;
    }
    if (!key.empty()) key += '-';
    key += word;
  }
  if (key.empty()) return "";  // a size alone names no GPU
  if (!memory.empty()) key += "-" + memory;
  return key;
}

void LabelTypesAndPrices(GpuSnapshot& snapshot, const PriceTable& prices) {
  for (GpuInfo& gpu : snapshot.gpus) {
    if (gpu.type.empty()) gpu.type = GpuTypeKey(gpu.name);
    if (gpu.price_per_hour) continue;
    if (auto it = prices.find(gpu.type); it != prices.end()) gpu.price_per_hour = it->second;
  }
}

}  // namespace gpuscale::gpu
