// Internal to store/: retention of the two history tables (decisions, events), which grow
// with time while the others grow with the fleet. Both tables have an `at` column (seconds)
// and an INTEGER PRIMARY KEY `id` that grows with `at`, so "the oldest rows" are read and
// deleted by id: a range of the table's B-tree, never a scan of the whole table (`at` has no
// index; a scan of a 1 GB table would hold the control tick for seconds).
//
// Thread-safety: REQUIRES the caller holds db.mu().
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/clock.h"
#include "core/result.h"
#include "store/sqlite_db.h"

namespace gpuscale::store {

// `at` of the table's oldest row (lowest id); nullopt when the table is empty.
Result<std::optional<Seconds>> OldestAt(Database& db, std::string_view table);

// Deletes, among the table's `limit` oldest rows, those older than `before`; returns how many.
// Bounded so that one call's time is bounded: call again while it returns `limit`.
Result<int64_t> DeleteOldestBefore(Database& db, std::string_view table, Seconds before,
                                   int64_t limit);

}  // namespace gpuscale::store
