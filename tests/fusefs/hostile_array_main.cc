// make_hostile_arrays DIR: writes DIR/dense and DIR/sparse, arrays whose
// strings are not all UTF-8, for the text rule of docs/namespace.md "Values"
// (tests/mount/hostile_strings_test.py reads every text file of them).
//   dense:  i INT32 [1, 16]; "ch" CHAR, "c4" CHAR[4], "a" STRING_ASCII var,
//           "u" STRING_UTF8 var nullable, "n\xe9" INT32 (a name that is not
//           UTF-8). Cells 1..6 and 11..14 written, 7..10 and 15..16 not:
//           the fill values (CHAR's is 0x80).
//   sparse: "s" STRING_ASCII var dimension (the hostile strings),
//           "ch" CHAR, "u" STRING_UTF8 var.
// Both have metadata values of every string type holding the same strings,
// and a key that is not UTF-8. Prints the strings, one hex per line, so the
// test knows what was written.
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "core/write/fragment_writer.h"
#include "core/write/metadata_writer.h"
#include "core/write/schema_writer.h"

using namespace tiledbfs::core;

namespace {

// Latin-1, lone continuation bytes, overlongs, encoded surrogates, values
// past U+10FFFF, truncated sequences, valid 4-byte emoji, NUL inside, CSV
// specials beside bad bytes, and plain text.
const std::vector<std::string> kHostile = {
    "caf\xe9",
    "\x80",
    "\xbf\xbf",
    "\xc0\xaf",
    "\xe0\x80\xaf",
    "\xf0\x80\x80\xaf",
    "\xed\xa0\x80",
    "\xed\xbf\xbf",
    "\xf0\x9f\x98",
    "x\xf0\x9f",
    "\xf0\x9f\x98\x80 emoji",
    std::string("a\0b", 3),
    "\xf4\x90\x80\x80",
    "\xff\xfe",
    "comma,\x80\"quote\"",
    "ok",
};

FieldCells Var(const std::vector<std::string>& v) {
  FieldCells c;
  for (const auto& s : v) {
    c.offsets.push_back(c.data.size());
    c.data.insert(c.data.end(), s.begin(), s.end());
  }
  return c;
}

Status Fail(const std::string& what, const Error& e) {
  std::fprintf(stderr, "make_hostile_arrays: %s: %s\n", what.c_str(), e.ToString().c_str());
  return e;
}

Status Metadata(const std::string& dir) {
  std::vector<MetadataEntry> entries;
  const char* types[] = {"STRING_UTF8", "STRING_ASCII", "CHAR"};
  for (size_t k = 0; k < kHostile.size(); ++k) {
    for (const char* t : types) {
      MetadataEntry e;
      e.key = std::string(t) + "_" + std::to_string(k);
      auto v = MetadataValueFromText(t, {kHostile[k]});
      if (!v.ok()) return Fail("metadata", v.error());
      e.value = *v;
      entries.push_back(e);
    }
  }
  MetadataEntry bad_key;
  bad_key.key = "key_caf\xe9";
  auto v = MetadataValueFromText("INT32", {"7"});
  if (!v.ok()) return Fail("metadata", v.error());
  bad_key.value = *v;
  entries.push_back(bad_key);
  auto name = WriteArrayMetadata(dir, 3000, entries, DefaultLimits());
  if (!name.ok()) return Fail(dir + " metadata", name.error());
  return Ok();
}

Status Dense(const std::string& dir) {
  auto s = SchemaFromJson(R"({"array_type":"dense","dims":[
      {"name":"i","type":"INT32","domain":[1,16],"tile_extent":4}],
      "attrs":[{"name":"ch","type":"CHAR"},
               {"name":"c4","type":"CHAR","cell_val_num":4},
               {"name":"a","type":"STRING_ASCII","var":true},
               {"name":"u","type":"STRING_UTF8","var":true,"nullable":true},
               {"name":"n\u00e9","type":"INT32"}]})",
                          DefaultLimits());
  if (!s.ok()) return Fail("dense schema", s.error());
  // The JSON name is UTF-8 "né"; the array's is Latin-1 "n\xe9".
  s->attributes[4].name = "n\xe9";
  auto schema_name = CreateArray(dir, *s, 1000, DefaultLimits());
  if (!schema_name.ok()) return Fail("dense create", schema_name.error());
  s->name = *schema_name;
  // Cells 1..6 and 11..14 in two fragments; 7..10 (inside the non-empty
  // domain) and 15..16 are never written.
  for (auto [first, count, t] : {std::tuple{1, 6, 2000}, std::tuple{11, 4, 2001}}) {
    WriteBatch b;
    std::vector<std::string> a, u;
    for (int c = first; c < first + count; ++c) {
      const size_t k = static_cast<size_t>(c - 1) % kHostile.size();
      b.fields["ch"].data.push_back(
          static_cast<uint8_t>("\x80\xe9\xff"
                               "A"[c % 4]));
      std::string four = (kHostile[k] + std::string(4, '\0')).substr(0, 4);
      b.fields["c4"].data.insert(b.fields["c4"].data.end(), four.begin(), four.end());
      a.push_back(kHostile[k]);
      u.push_back(kHostile[kHostile.size() - 1 - k]);
      b.fields["u"].validity.push_back(c % 5 == 4 ? 0 : 1);
      int32_t v = c * 10;
      uint8_t raw[4];
      std::memcpy(raw, &v, 4);
      b.fields["n\xe9"].data.insert(b.fields["n\xe9"].data.end(), raw, raw + 4);
    }
    FieldCells validity = std::move(b.fields["u"]);
    b.fields["a"] = Var(a);
    b.fields["u"] = Var(u);
    b.fields["u"].validity = std::move(validity.validity);
    const int32_t lo = first, hi = first + count - 1;
    Range r;
    r.lo =
        ByteVec(reinterpret_cast<const uint8_t*>(&lo), reinterpret_cast<const uint8_t*>(&lo) + 4);
    r.hi =
        ByteVec(reinterpret_cast<const uint8_t*>(&hi), reinterpret_cast<const uint8_t*>(&hi) + 4);
    b.subarray = {r};
    auto f = WriteFragment(dir, *s, static_cast<uint64_t>(t), b);
    if (!f.ok()) return Fail("dense write", f.error());
  }
  return Metadata(dir);
}

Status Sparse(const std::string& dir) {
  auto s = SchemaFromJson(R"({"array_type":"sparse","capacity":4,"dims":[
      {"name":"s","type":"STRING_ASCII","var":true}],
      "attrs":[{"name":"ch","type":"CHAR"},
               {"name":"u","type":"STRING_UTF8","var":true}]})",
                          DefaultLimits());
  if (!s.ok()) return Fail("sparse schema", s.error());
  auto schema_name = CreateArray(dir, *s, 1000, DefaultLimits());
  if (!schema_name.ok()) return Fail("sparse create", schema_name.error());
  s->name = *schema_name;
  WriteBatch b;
  std::vector<std::string> u;
  for (size_t i = 0; i < kHostile.size(); ++i) {
    b.fields["ch"].data.push_back(static_cast<uint8_t>(kHostile[i][0]));
    u.push_back(kHostile[(i + 3) % kHostile.size()]);
  }
  b.fields["s"] = Var(kHostile);
  b.fields["u"] = Var(u);
  auto f = WriteFragment(dir, *s, 2000, b);
  if (!f.ok()) return Fail("sparse write", f.error());
  return Metadata(dir);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_hostile_arrays DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  if (!Dense(dir + "/dense").ok() || !Sparse(dir + "/sparse").ok()) return 1;
  for (const auto& h : kHostile) {
    for (unsigned char c : h) std::printf("%02x", c);
    std::printf("\n");
  }
  return 0;
}
