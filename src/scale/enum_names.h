// One spelling table for each enum that config files, API bodies, the store and the CLI write
// as text (comparators, metric sources, aggregations). Parsers and printers all read these
// tables, so a name is spelled in one place and an error lists exactly the names accepted.
//
// Pure constants and lookups; thread-safe.
#pragma once

#include <string_view>

#include "core/name_table.h"
#include "scale/policy.h"
#include "scale/rules_policy.h"

namespace gpuscale::scale {

// Rows and tables of core/name_table.h: read with ValueIn, NameIn and NamesIn.
template <typename E>
using Spelling = NameRow<E>;
template <typename E>
using Spellings = NameTable<E>;

Spellings<Comparator> ComparatorSpellings();      // LESS_THAN, ... (Backend.AI's spelling)
Spellings<MetricSource> MetricSourceSpellings();  // inference_framework, kernel, ...
Spellings<Aggregation> AggregationSpellings();    // average, max, min, sum

std::string_view ComparatorName(Comparator comparator);     // "GREATER_THAN"
std::string_view MetricSourceName(MetricSource source);     // "inference_framework"
std::string_view AggregationName(Aggregation aggregation);  // "average", "max", ...

}  // namespace gpuscale::scale
