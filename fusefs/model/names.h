// Paths and names in the namespace: a path's parts, and the escaping that
// makes any field, metadata key or member name a file name
// (docs/namespace.md "Names").
#pragma once

#include <string>
#include <vector>

namespace tiledbfs::fusefs {

// Splits "a/b/c" into parts (empty path: none).
std::vector<std::string> SplitPath(const std::string& path);
// File name <-> field/key/member name (docs/namespace.md "Names").
std::string EscapeName(const std::string& name);
std::string UnescapeName(const std::string& file_name);

}  // namespace tiledbfs::fusefs
