#include "daemon/family_values.h"

namespace gpuscale::daemon {

namespace {

bool HasFamilyValue(const metrics::MetricFamily& family) {
  return family.type != metrics::MetricType::kHistogram &&
         family.type != metrics::MetricType::kSummary && !family.samples.empty();
}

double FamilyValue(const metrics::MetricFamily& family) {
  double sum = 0;
  for (const metrics::Sample& sample : family.samples) sum += sample.value;
  return sum;
}

}  // namespace

uint32_t FamilySlots::Find(std::string_view name) const {
  for (uint32_t slot = 0; slot < names_.size(); ++slot) {
    if (names_[slot] == name) return slot;
  }
  return kNone;
}

uint32_t FamilySlots::Intern(std::string_view name) {
  if (const uint32_t slot = Find(name); slot != kNone) return slot;
  names_.emplace_back(name);
  return size() - 1;
}

std::vector<uint32_t> FamilySlots::Compact(const std::vector<bool>& used) {
  std::vector<uint32_t> remap(names_.size(), kNone);
  uint32_t kept = 0;
  for (uint32_t slot = 0; slot < names_.size(); ++slot) {
    if (!used[slot]) continue;
    if (kept != slot) names_[kept] = std::move(names_[slot]);
    remap[slot] = kept++;
  }
  names_.resize(kept);
  return remap;
}

void ReplicaFamilyValues::Update(const metrics::Exposition& exposition, FamilySlots& slots,
                                 FamilyAliases aliases) {
  if (!SameLayout(exposition, slots)) {
    Rebuild(exposition, slots, aliases);
    return;
  }
  Entry* entries = data();
  for (size_t i = 0; i < by_position_; ++i) {
    if (entries[i].valued) entries[i].value = FamilyValue(exposition.families[i]);
  }
  for (size_t i = by_position_; i < size_; ++i)
    entries[i].value = entries[entries[i].alias_of].value;
}

bool ReplicaFamilyValues::SameLayout(const metrics::Exposition& exposition,
                                     const FamilySlots& slots) const {
  if (by_position_ == 0 || by_position_ != exposition.families.size()) return false;
  const Entry* entries = data();
  for (size_t i = 0; i < by_position_; ++i) {
    const metrics::MetricFamily& family = exposition.families[i];
    if (entries[i].valued != HasFamilyValue(family) || slots.name(entries[i].slot) != family.name) {
      return false;
    }
  }
  return true;
}

void ReplicaFamilyValues::Rebuild(const metrics::Exposition& exposition, FamilySlots& slots,
                                  FamilyAliases aliases) {
  spilled_.clear();
  size_ = 0;
  bool repeated = false;
  std::vector<uint32_t> entry_of_slot;  // kNone: no entry yet
  for (const metrics::MetricFamily& family : exposition.families) {
    const uint32_t slot = slots.Intern(family.name);
    if (slot >= entry_of_slot.size()) entry_of_slot.resize(slot + 1, FamilySlots::kNone);
    uint32_t& index = entry_of_slot[slot];
    if (index == FamilySlots::kNone) {
      index = static_cast<uint32_t>(size_);
      Add({.slot = slot, .declared = true});
    } else {
      repeated = true;
    }
    if (!HasFamilyValue(family)) continue;
    Entry& entry = data()[index];
    if (!entry.valued) entry.value = 0;
    entry.valued = true;
    entry.value += FamilyValue(family);
  }
  by_position_ = repeated ? 0 : size_;
  FillAliases(slots, aliases);
}

void ReplicaFamilyValues::Add(const Entry& entry) {
  if (size_ == kInlineEntries) spilled_.assign(inline_.begin(), inline_.end());
  if (size_ >= kInlineEntries) {
    spilled_.push_back(entry);
  } else {
    inline_[size_] = entry;
  }
  ++size_;
}

void ReplicaFamilyValues::FillAliases(FamilySlots& slots, FamilyAliases aliases) {
  auto valued_entry = [&](std::string_view name) {
    const uint32_t slot = slots.Find(name);
    for (uint32_t i = 0; i < size_; ++i) {
      if (data()[i].slot == slot && data()[i].valued) return i;
    }
    return FamilySlots::kNone;
  };
  for (const auto& [current, former] : aliases) {
    const uint32_t a = valued_entry(current), b = valued_entry(former);
    if ((a == FamilySlots::kNone) == (b == FamilySlots::kNone)) continue;  // both or neither
    const uint32_t from = a != FamilySlots::kNone ? a : b;
    Add({.slot = slots.Intern(from == a ? former : current),
         .valued = true,
         .alias_of = from,
         .value = data()[from].value});
  }
}

bool ReplicaFamilyValues::declared(uint32_t slot) const {
  for (const Entry& entry : entries()) {
    if (entry.slot == slot && entry.declared) return true;
  }
  return false;
}

void ReplicaFamilyValues::MarkUsed(std::vector<bool>& used) const {
  for (const Entry& entry : entries()) used[entry.slot] = true;
}

void ReplicaFamilyValues::Remap(const std::vector<uint32_t>& remap) {
  for (size_t i = 0; i < size_; ++i) data()[i].slot = remap[data()[i].slot];
}

}  // namespace gpuscale::daemon
