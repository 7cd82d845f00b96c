// Writing one small file of an array folder so that no reader ever sees part
// of it: the bytes go to a temporary file in the array folder, named so that
// neither TileDB nor ListArray takes it for anything (".tiledbfs-<name>.tmp":
// not a timestamped name, no known extension), which is then renamed into
// place (atomic within one file system).
#pragma once

#include <string>

#include "core/util/bytes.h"
#include "core/util/result.h"

namespace tiledbfs::core {

// Writes `data` to `array_dir`/`rel_path` (its folder is created if
// missing). kInvalidArgument if the file exists already; kIo otherwise. On
// failure nothing is left behind.
Status WriteArrayFileAtomically(const std::string& array_dir, const std::string& rel_path,
                                Bytes data);

}  // namespace tiledbfs::core
