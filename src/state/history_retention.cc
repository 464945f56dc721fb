#include "state/history_retention.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace gpuscale::state {
namespace {

constexpr Seconds kAgeCheckEvery{3600};
constexpr Seconds kSizeCheckEvery{60};
// After a failed store call: the next try, not every tick (a broken disk logs once a minute).
constexpr Seconds kRetryAfter{60};

}  // namespace

Result<HistoryRetention::Trimmed> HistoryRetention::Run(const RetentionConfig& config,
                                                        Seconds now) {
  Trimmed trimmed;
  if (next_age_check_ < Seconds{0} || now >= next_age_check_) {
    Result<AgeRound> round = TrimAge(now - config.max_age);
    if (!round) {
      next_age_check_ = now + kRetryAfter;
      return Unexpected<Error>(round.error());
    }
    trimmed.by_age = round->deleted;
    // A full batch from a table: more may be left, go on next tick.
    next_age_check_ = round->more ? now : now + kAgeCheckEvery;
  }
  if (config.max_bytes <= 0) {
    trimming_size_ = false;
    return trimmed;
  }
  if (!trimming_size_ && next_size_check_ >= Seconds{0} && now < next_size_check_) return trimmed;
  Result<int64_t> deleted = TrimSize(config, now, trimmed.stuck);
  if (!deleted) {
    trimming_size_ = false;
    next_size_check_ = now + kRetryAfter;
    return Unexpected<Error>(deleted.error());
  }
  trimmed.by_size = *deleted;
  return trimmed;
}

Result<HistoryRetention::AgeRound> HistoryRetention::TrimAge(Seconds before) {
  GS_ASSIGN_OR_RETURN(const int64_t d, store_.decisions().DeleteBefore(before, kBatch));
  GS_ASSIGN_OR_RETURN(const int64_t e, store_.events().DeleteBefore(before, kBatch));
  return AgeRound{d + e, d == kBatch || e == kBatch};
}

Result<int64_t> HistoryRetention::TrimSize(const RetentionConfig& config, Seconds now,
                                           std::string& stuck) {
  GS_ASSIGN_OR_RETURN(const int64_t used, store_.UsedBytes());
  // Hysteresis: once over the cap, trim to 90 % of it, so that the next few rows do not
  // start another round at once.
  const int64_t goal = trimming_size_ ? config.max_bytes / 10 * 9 : config.max_bytes;
  if (used <= goal) {
    trimming_size_ = false;
    stuck_reported_ = false;
    next_size_check_ = now + kSizeCheckEvery;
    return 0;
  }
  GS_ASSIGN_OR_RETURN(const std::optional<Seconds> decisions, store_.decisions().OldestAt());
  GS_ASSIGN_OR_RETURN(const std::optional<Seconds> events, store_.events().OldestAt());
  if (!decisions && !events) {
    trimming_size_ = false;
    next_size_check_ = now + kSizeCheckEvery;
    if (!stuck_reported_) {
      stuck_reported_ = true;
      stuck = fmt::format(
          "the state database uses {} MiB, over retention.max_megabytes ({}), with no decision "
          "or event left to delete: the rest is services, replicas and tasks; raise "
          "retention.max_megabytes or delete finished tasks",
          used >> 20, config.max_bytes >> 20);
    }
    return 0;
  }
  const Seconds oldest = std::min(decisions.value_or(now), events.value_or(now));
  // The oldest tenth of the history's span, the same cut for both tables (at least a second,
  // so that rows stamped ahead of the clock still go).
  const Seconds cut = oldest + std::max((now - oldest) / 10, Seconds{1});
  GS_ASSIGN_OR_RETURN(const int64_t d, store_.decisions().DeleteBefore(cut, kBatch));
  GS_ASSIGN_OR_RETURN(const int64_t e, store_.events().DeleteBefore(cut, kBatch));
  trimming_size_ = true;  // checked again next call, until under the goal
  return d + e;
}

}  // namespace gpuscale::state
