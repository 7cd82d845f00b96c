// Instants as names: history/<YYYY-MM-DDTHH:MM:SS.mmmZ>/ and the forms a
// lookup or -o timestamp=T accepts (docs/namespace.md "The view's timestamp").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/format/datatype.h"

namespace tiledbfs::fusefs {

// Milliseconds since the epoch as "2023-11-14T22:13:20.000Z" (UTC).
std::string FormatIso(int64_t ms);

// Parses raw milliseconds ("1700000002000") or ISO 8601 UTC with or without
// milliseconds and 'Z' ("2023-11-14T22:13:22", "2023-11-14T22:13:22.5Z",
// also a date alone). nullopt if the text is neither.
std::optional<int64_t> ParseInstant(std::string_view text);

// Parses a value of DATETIME type t as data.csv writes it (ISO 8601 as
// numpy.datetime_as_string prints it for t's unit: "2024", "2024-03",
// "2024-03-14T12:30:05.123", with or without 'Z'; coarser or finer forms
// too) into a count of t's unit: the unit holding the instant the text
// names (rounded down). nullopt if the text is not ISO or the count leaves
// int64.
std::optional<int64_t> ParseDatetime(std::string_view text, core::Datatype t);

}  // namespace tiledbfs::fusefs
