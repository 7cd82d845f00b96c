// Reading an AES-256-GCM key file: the 32-byte key raw, or as 64 hex digits
// (surrounding whitespace and a final newline allowed). The key is never
// echoed in an error message.
#pragma once

#include <string>

#include "core/filters/filter_pipeline.h"

namespace tiledbfs::fusefs {

core::Result<core::EncryptionKey> ReadKeyFile(const std::string& path);
// The same from the file's bytes (for tests).
core::Result<core::EncryptionKey> ParseKey(std::string_view bytes);

}  // namespace tiledbfs::fusefs
