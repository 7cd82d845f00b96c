// Delete commits of an array as rules the sparse reader applies per cell.
#pragma once

#include "core/array/array.h"
#include "core/read/cell_index.h"

namespace tiledbfs::core {

// Loads a .del or .upd commit (or its bytes from a .con file) and makes the rule:
// a cell is deleted when the user's condition holds for it (TileDB stores
// the condition negated; core/metadata/query_condition.h evaluates it).
Result<DeleteRule> LoadDeleteRule(const Array& array, const ConditionCommit& commit);

}  // namespace tiledbfs::core
