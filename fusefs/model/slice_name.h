// The name of a slice folder, slice/<ranges>/ (docs/namespace.md "Slices"):
// `<dim>=<lo>..<hi>` or `<dim>=<value>`, joined by ',', at most one range
// per dimension; `%25 %2F %2C %3D %2E` (and any `%HH`) escape a name or a
// value; values as data.csv writes them (DATETIME also as the raw count).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/read/subarray.h"
#include "core/util/result.h"

namespace tiledbfs::fusefs {

using core::Result;

// The subarray `name` names over `schema`'s dimensions. Dimensions not named
// are left open (nullopt). kNotFound, with the reason, for a name that does
// not parse, names an unknown dimension twice or at all, has lo > hi, or
// leaves a fixed-size dimension's domain.
Result<core::Subarray> ParseSliceName(std::string_view name, const core::ArraySchema& schema);

// The bytes of one value of dimension `dim` written as data.csv writes it
// (already unescaped). kNotFound with the reason where it does not parse.
Result<core::ByteVec> ParseDimensionValue(std::string_view text, const core::Dimension& dim);

// Undoes the %HH escapes of a slice or diff name; nullopt for a '%' not
// followed by two hex digits.
std::optional<std::string> UnescapePercent(std::string_view text);

}  // namespace tiledbfs::fusefs
