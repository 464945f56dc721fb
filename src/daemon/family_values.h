// FamilySlots and ReplicaFamilyValues: the latest value of every family in each replica's
// scrapes of one service, for ServiceMetricView. Replicas of a service export the same
// families, so their names are kept once per service, each at a slot (FamilySlots), and a
// replica keeps its values by slot. Every replica's scrape is then matched against the same
// few names, warm in the cache after the service's first replica, instead of against its own
// copies of them: 10,000 replicas per tick at fleet scale, where the control tick's time went
// to cache misses on each replica's own name strings and map nodes.
//
// A value is the sum over a family's label sets (a family split in two by another, its name
// twice in one scrape, adds up); histograms and summaries have none (their samples mix
// buckets, sums and counts), nor has a family declared without samples.
//
// Pure; plain values. Ownership: a ReplicaFamilyValues refers to its service's FamilySlots by
// slot number only, so every replica of a service must use one FamilySlots, and after
// FamilySlots::Compact every replica must be Remapped. Thread-safety: none.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "metrics/prometheus_text_parser.h"

namespace gpuscale::daemon {

class FamilySlots {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // The slot of `name`, kNone when it has none.
  uint32_t Find(std::string_view name) const;
  // The slot of `name`, added when it has none.
  uint32_t Intern(std::string_view name);
  const std::string& name(uint32_t slot) const { return names_[slot]; }
  uint32_t size() const { return static_cast<uint32_t>(names_.size()); }

  // Keeps only the names whose `used` is true; returns each old slot's new one (kNone for a
  // dropped name). REQUIRES: used.size() == size().
  std::vector<uint32_t> Compact(const std::vector<bool>& used);

 private:
  // Linear lookups: a service's replicas export a handful of families (the daemon parses only
  // those some view or policy reads), and new names are seen only when a layout changes.
  std::vector<std::string> names_;
};

// Names filled from each other ({current, former}) when a scrape has a value for only one:
// gauges vLLM renamed, so a policy written with either name reads old and new engines alike.
using FamilyAliases = std::span<const std::pair<std::string_view, std::string_view>>;

class ReplicaFamilyValues {
 public:
  // One family of the latest scrape, or a name filled from its alias.
  struct Entry {
    uint32_t slot = FamilySlots::kNone;
    bool declared = false;  // the scrape declared it (any type, samples or not)
    bool valued = false;    // it has a value (samples, and not a histogram or summary)
    uint32_t alias_of = 0;  // a filled alias (after by_position_): the entry its value copies
    double value = 0;
  };

  // Sets the entries to the scrape's, adding names new to the service to `slots`. A replica's
  // scrapes list the same families in the same order, scrape after scrape: when this one does,
  // as the last did, the values are written by position, with no lookup and no allocation.
  void Update(const metrics::Exposition& exposition, FamilySlots& slots, FamilyAliases aliases);

  // One entry per slot: the scrape's families in its order, then the aliases filled.
  std::span<const Entry> entries() const { return {data(), size_}; }
  // Whether the latest scrape declared the family at `slot` (kNone: false).
  bool declared(uint32_t slot) const;

  // Marks in `used` (sized to the service's slots) the slots this replica holds.
  void MarkUsed(std::vector<bool>& used) const;
  // Moves every slot to `remap[slot]` (FamilySlots::Compact's result).
  void Remap(const std::vector<uint32_t>& remap);

 private:
  bool SameLayout(const metrics::Exposition& exposition, const FamilySlots& slots) const;
  void Rebuild(const metrics::Exposition& exposition, FamilySlots& slots, FamilyAliases aliases);
  void FillAliases(FamilySlots& slots, FamilyAliases aliases);
  Entry* data() { return spilled_.empty() ? inline_.data() : spilled_.data(); }
  const Entry* data() const { return spilled_.empty() ? inline_.data() : spilled_.data(); }
  void Add(const Entry& entry);

  // The entries lie in the object while they fit (a replica's scrape keeps a few families:
  // those some view or policy reads), and in spilled_ (then not empty) once they do not: a
  // tick reads 10,000 replicas' entries at fleet scale, and each pointer to follow to a block
  // of its own was a cache miss.
  static constexpr size_t kInlineEntries = 8;
  std::array<Entry, kInlineEntries> inline_ = {};
  std::vector<Entry> spilled_;
  size_t size_ = 0;
  // How many entries are the scrape's families, position by position; 0 when they are not (a
  // family split in two by another, its name twice, adds up into one entry).
  size_t by_position_ = 0;
};

}  // namespace gpuscale::daemon
