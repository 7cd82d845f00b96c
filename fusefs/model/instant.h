// Instants as names: history/<YYYY-MM-DDTHH:MM:SS.mmmZ>/ and the forms a
// lookup or -o timestamp=T accepts (NAMESPACE.md "The view's timestamp").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tiledbfs::fusefs {

// Milliseconds since the epoch as "2023-11-14T22:13:20.000Z" (UTC).
std::string FormatIso(int64_t ms);

// Parses raw milliseconds ("1700000002000") or ISO 8601 UTC with or without
// milliseconds and 'Z' ("2023-11-14T22:13:22", "2023-11-14T22:13:22.5Z",
// also a date alone). nullopt if the text is neither.
std::optional<int64_t> ParseInstant(std::string_view text);

}  // namespace tiledbfs::fusefs
