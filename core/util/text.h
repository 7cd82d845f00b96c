// Small text helpers shared by the JSON, CSV and value renderers.
#pragma once

#include <cstdint>
#include <string>

#include "core/util/bytes.h"

namespace tiledbfs::core {

// Lowercase hex of the bytes, appended to out.
void AppendHex(std::string& out, Bytes b);
// A code point as UTF-8; surrogates and values past U+10FFFF become U+FFFD.
void AppendUtf8(std::string& out, uint32_t code_point);
// Whether the bytes are well-formed UTF-8 (no overlongs, no surrogates).
bool ValidUtf8(Bytes b);

}  // namespace tiledbfs::core
