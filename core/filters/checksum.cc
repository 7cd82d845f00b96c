// CHECKSUM_MD5 and CHECKSUM_SHA256 (tile.md "Checksum Filters"). The data is
// stored unchanged; the metadata starts with
//   uint32 metadata checksums, uint32 data checksums,
//   per checksum: uint64 bytes covered, digest (16 or 32 bytes)
// followed by the next stage's metadata, which the metadata checksums cover
// (consecutive ranges from its start); the data checksums cover consecutive
// ranges of the data. Every checksum is verified.
#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include "core/filters/filter_stage.h"

namespace tiledbfs::core::filters {

namespace {

std::string Hex(Bytes b) {
  std::string s;
  for (uint8_t c : b) s += fmt::format("{:02x}", c);
  return s;
}

std::string OpenSslError() {
  unsigned long e = ERR_get_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

}  // namespace

Result<StageOutput> ReverseChecksum(const StageContext& ctx, Bytes metadata, Bytes data) {
  const bool md5 = ctx.filter->type == FilterType::kChecksumMd5;
  const std::string name(FilterName(ctx.filter->type));
  const uint64_t digest_size = md5 ? 16 : 32;
  const EVP_MD* algo = md5 ? EVP_md5() : EVP_sha256();
  ByteReader md(metadata);
  ASSIGN_OR_RETURN(uint32_t md_parts, md.Read<uint32_t>(name + ": metadata checksums"));
  ASSIGN_OR_RETURN(uint32_t data_parts, md.Read<uint32_t>(name + ": data checksums"));
  const uint64_t parts = uint64_t{md_parts} + data_parts;
  if (parts > md.remaining() / (8 + digest_size)) {
    return md.Corrupt(name + ": checksums",
                      fmt::format("{} checksums cannot fit in {} bytes", parts, md.remaining()));
  }
  struct Sum {
    uint64_t bytes;
    Bytes digest;
  };
  std::vector<Sum> sums(parts);
  for (Sum& s : sums) {
    ASSIGN_OR_RETURN(s.bytes, md.Read<uint64_t>(name + ": bytes checksummed"));
    ASSIGN_OR_RETURN(s.digest, md.ReadBytes(digest_size, name + ": checksum"));
  }
  const Bytes rest = md.rest();
  ByteReader md_in(rest), data_in(data);
  for (uint64_t i = 0; i < parts; ++i) {
    const bool is_md = i < md_parts;
    const uint64_t part = is_md ? i : i - md_parts;
    ByteReader& src = is_md ? md_in : data_in;
    ASSIGN_OR_RETURN(Bytes covered,
                     src.ReadBytes(sums[i].bytes, fmt::format("{}: {} part {}", name,
                                                              is_md ? "metadata" : "data", part)));
    uint8_t computed[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    if (EVP_Digest(covered.data(), covered.size(), computed, &len, algo, nullptr) != 1) {
      return Error::Corrupt(fmt::format("{}: {}", name, OpenSslError()));
    }
    Bytes got(computed, len);
    if (len != digest_size || !std::equal(got.begin(), got.end(), sums[i].digest.begin())) {
      return Error::Corrupt(
          fmt::format("{}: checksum mismatch in {} part {}: stored {}, computed {}", name,
                      is_md ? "metadata" : "data", part, Hex(sums[i].digest), Hex(got)));
    }
  }
  if (data.size() > ctx.capacity) {
    return Error::Corrupt(
        fmt::format("{}: {} bytes exceed the expected {}", name, data.size(), ctx.capacity));
  }
  return StageOutput{CopyBytes(rest), CopyBytes(data)};
}

}  // namespace tiledbfs::core::filters
