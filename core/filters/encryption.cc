// AES-256-GCM (tile.md "Encryption Filters"; TileDB's
// EncryptionAES256GCMFilter and its OpenSSL backend). The metadata is
//   uint32 metadata parts, uint32 data parts,
//   per part: uint32 plaintext length, uint32 encrypted length,
//             12-byte IV, 16-byte tag
// and nothing else: the previous stage's metadata was encrypted as the
// metadata parts. The data holds the encrypted metadata parts, then the
// encrypted data parts. Each part is encrypted on its own with its own random
// IV, no additional authenticated data, and the default 12-byte IV length;
// GCM ciphertext is as long as the plaintext.
//
// Where it applies: data tiles of an encrypted array get it as an implicit
// last filter (never serialized in the schema); generic tiles list it in
// their own pipeline (type 11, no options) and say so with encryption type 1.
#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include <memory>

#include "core/filters/filter_stage.h"

namespace tiledbfs::core::filters {

namespace {

constexpr uint64_t kIvBytes = 12;
constexpr uint64_t kTagBytes = 16;

std::string OpenSslError(std::string_view what) {
  unsigned long e = ERR_get_error();
  std::string detail = "no detail";
  if (e != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    detail = buf;
  }
  ERR_clear_error();
  return fmt::format("AES_256_GCM: {} ({})", what, detail);
}

Status Decrypt(const EncryptionKey& key, Bytes iv, Bytes tag, Bytes in, uint8_t* out) {
  std::unique_ptr<EVP_CIPHER_CTX, void (*)(EVP_CIPHER_CTX*)> c(EVP_CIPHER_CTX_new(),
                                                               EVP_CIPHER_CTX_free);
  if (!c) return Error::OutOfMemory(OpenSslError("cannot allocate a cipher context"));
  if (EVP_DecryptInit_ex(c.get(), EVP_aes_256_gcm(), nullptr, key.bytes.data(), iv.data()) != 1) {
    return Error::Corrupt(OpenSslError("cannot initialise the cipher"));
  }
  int n = 0;
  if (!in.empty() &&
      EVP_DecryptUpdate(c.get(), out, &n, in.data(), static_cast<int>(in.size())) != 1) {
    return Error::Corrupt(OpenSslError("cannot decrypt"));
  }
  if (EVP_CIPHER_CTX_ctrl(c.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(kTagBytes),
                          const_cast<uint8_t*>(tag.data())) != 1) {
    return Error::Corrupt(OpenSslError("cannot set the tag"));
  }
  int tail = 0;
  if (EVP_DecryptFinal_ex(c.get(), out + n, &tail) != 1) {
    ERR_clear_error();
    return Error::Key("AES_256_GCM: authentication failed: wrong key or corrupt data");
  }
  return Ok();
}

}  // namespace

Result<StageOutput> ReverseEncryption(const StageContext& ctx, Bytes metadata, Bytes data) {
  if (ctx.key == nullptr) return Error::Key("AES_256_GCM: the tile is encrypted; no key given");
  ByteReader md(metadata);
  ASSIGN_OR_RETURN(uint32_t md_parts, md.Read<uint32_t>("AES_256_GCM: metadata parts"));
  ASSIGN_OR_RETURN(uint32_t data_parts, md.Read<uint32_t>("AES_256_GCM: data parts"));
  const uint64_t parts = uint64_t{md_parts} + data_parts;
  constexpr uint64_t kPartBytes = 8 + kIvBytes + kTagBytes;
  if (parts > md.remaining() / kPartBytes || md.remaining() != parts * kPartBytes) {
    return md.Corrupt("AES_256_GCM: parts", fmt::format("{} parts need {} bytes, {} present", parts,
                                                        parts * kPartBytes, md.remaining()));
  }
  ByteReader in(data);
  StageOutput out;
  uint64_t md_total = 0, data_total = 0;
  for (uint64_t i = 0; i < parts; ++i) {
    const bool is_md = i < md_parts;
    ASSIGN_OR_RETURN(uint32_t plain, md.Read<uint32_t>("AES_256_GCM: plaintext length"));
    ASSIGN_OR_RETURN(uint32_t enc, md.Read<uint32_t>("AES_256_GCM: encrypted length"));
    ASSIGN_OR_RETURN(Bytes iv, md.ReadBytes(kIvBytes, "AES_256_GCM: IV"));
    ASSIGN_OR_RETURN(Bytes tag, md.ReadBytes(kTagBytes, "AES_256_GCM: tag"));
    if (plain != enc) {
      return Error::Corrupt(fmt::format(
          "AES_256_GCM: part {} has {} encrypted bytes for {} plaintext bytes", i, enc, plain));
    }
    uint64_t& total = is_md ? md_total : data_total;
    total += plain;
    if (total > ctx.capacity) {
      return Error::Corrupt(
          fmt::format("AES_256_GCM: parts exceed the expected {} bytes", ctx.capacity));
    }
    ASSIGN_OR_RETURN(Bytes cipher, in.ReadBytes(enc, "AES_256_GCM: encrypted part"));
    ByteVec& dst = is_md ? out.metadata : out.data;
    const size_t at = dst.size();
    dst.resize(at + plain);
    TRY(Decrypt(*ctx.key, iv, tag, cipher, dst.data() + at));
  }
  if (!in.empty()) {
    return in.Corrupt("AES_256_GCM",
                      fmt::format("{} bytes after the encrypted parts", in.remaining()));
  }
  return out;
}

}  // namespace tiledbfs::core::filters
