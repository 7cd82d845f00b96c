// Small text helpers shared by the JSON, CSV and value renderers.
//
// Every text file of the namespace is valid UTF-8 (docs/namespace.md "Values"):
// a byte that is not part of valid UTF-8 is written `\xHH`, two lowercase
// hex digits, as Python's bytes.decode("utf-8", "backslashreplace") writes
// it. Valid is what Python's strict decoder accepts: no overlong forms, no
// encoded surrogates (ED A0..BF), nothing past U+10FFFF, no truncated
// sequence, no lone continuation byte. NUL and other controls are valid.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/util/bytes.h"

namespace tiledbfs::core {

// Lowercase hex of the bytes, appended to out.
void AppendHex(std::string& out, Bytes b);
// A code point as UTF-8; surrogates and values past U+10FFFF become U+FFFD.
void AppendUtf8(std::string& out, uint32_t code_point);
// Whether the bytes are valid UTF-8 (the rule above): 16 bytes at a time
// with SSSE3 where the CPU has it (32 bytes and more), else ASCII runs 8
// bytes at a time and the rest byte by byte.
bool ValidUtf8(Bytes b);
inline bool ValidUtf8(std::string_view s) {
  return ValidUtf8(Bytes(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

// Appends b with every byte that is not part of valid UTF-8 written `\xHH`
// (the rule above); valid bytes are copied as they are.
void AppendUtf8Escaped(std::string& out, Bytes b);
inline void AppendUtf8Escaped(std::string& out, std::string_view s) {
  AppendUtf8Escaped(out, Bytes(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}
// The number of bytes AppendUtf8Escaped appends for b: b.size() plus 3 per
// byte that is not part of valid UTF-8.
uint64_t Utf8EscapedSize(Bytes b);
// s as AppendUtf8Escaped writes it (s itself, moved, when already valid).
std::string Utf8Escaped(std::string s);

// A JSON document (nlohmann::json or ordered_json) as text: dump(indent),
// indent -1 for one line, with every string and object key escaped by the
// rule above first, so the text is valid UTF-8 and `\x80` reads back as
// the four characters \ x 8 0 (written "\\x80" in the JSON).
template <class Json>
std::string DumpJsonText(const Json& j, int indent);

// ---- implementation

namespace text_internal {
template <class Json>
bool AllValid(const Json& j) {
  if (j.is_string()) return ValidUtf8(j.template get_ref<const std::string&>());
  if (j.is_array()) {
    for (const auto& x : j) {
      if (!AllValid(x)) return false;
    }
  }
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!ValidUtf8(it.key()) || !AllValid(it.value())) return false;
    }
  }
  return true;
}
template <class Json>
Json Escaped(const Json& j) {
  if (j.is_string()) return Json(Utf8Escaped(j.template get<std::string>()));
  if (j.is_array()) {
    Json out = Json::array();
    for (const auto& x : j) out.push_back(Escaped(x));
    return out;
  }
  if (j.is_object()) {
    Json out = Json::object();
    for (auto it = j.begin(); it != j.end(); ++it) out[Utf8Escaped(it.key())] = Escaped(it.value());
    return out;
  }
  return j;
}
}  // namespace text_internal

template <class Json>
std::string DumpJsonText(const Json& j, int indent) {
  // Nothing is left for the handler to replace; strict would throw.
  constexpr auto kReplace = Json::error_handler_t::replace;
  if (text_internal::AllValid(j)) return j.dump(indent, ' ', false, kReplace);
  return text_internal::Escaped(j).dump(indent, ' ', false, kReplace);
}

}  // namespace tiledbfs::core
