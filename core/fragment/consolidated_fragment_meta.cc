#include "core/fragment/consolidated_fragment_meta.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/tile/generic_tile.h"
#include "core/util/byte_reader.h"

namespace tiledbfs::core {

Result<std::vector<ConsolidatedFooter>> ParseConsolidatedFragmentMeta(Bytes payload,
                                                                      uint64_t file_offset,
                                                                      const Limits& limits) {
  ByteReader r(payload, file_offset);
  ASSIGN_OR_RETURN(uint32_t count, r.Read<uint32_t>("consolidated fragment metadata: count"));
  // Each entry takes at least 16 bytes.
  if (count > r.remaining() / 16) {
    return r.Corrupt(
        "consolidated fragment metadata: count",
        fmt::format("{} entries cannot fit in the {} bytes left", count, r.remaining()));
  }
  if (count > limits.max_files) {
    return Error::OutOfMemory(
        fmt::format("consolidated fragment metadata: {} fragments exceed the limit of {}", count,
                    limits.max_files));
  }
  std::vector<ConsolidatedFooter> out;
  out.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    ConsolidatedFooter e;
    ASSIGN_OR_RETURN(uint64_t size, r.Read<uint64_t>("consolidated fragment metadata: name size"));
    if (size == 0) return r.Corrupt("consolidated fragment metadata: name size", "is zero");
    ASSIGN_OR_RETURN(Bytes name, r.ReadBytes(size, "consolidated fragment metadata: name"));
    e.name = AsStringView(name);
    ASSIGN_OR_RETURN(e.offset, r.Read<uint64_t>("consolidated fragment metadata: footer offset"));
    std::string_view n = e.name;
    while (!n.empty() && n.back() == '/') n.remove_suffix(1);
    const size_t slash = n.find_last_of('/');
    e.fragment_name = slash == std::string_view::npos ? n : n.substr(slash + 1);
    if (e.fragment_name.empty()) {
      return Error::Corrupt(fmt::format(
          "offset {}: consolidated fragment metadata: entry {} names no fragment ({:?})",
          r.offset(), i, e.name));
    }
    out.push_back(std::move(e));
  }
  const uint64_t table_end = r.position();
  // Footer i runs to the next larger offset (footers are stored in order).
  std::vector<uint64_t> starts;
  starts.reserve(out.size());
  for (const auto& e : out) {
    if (e.offset < table_end || e.offset >= payload.size()) {
      return Error::Corrupt(fmt::format(
          "consolidated fragment metadata: footer of {} at payload offset {} is outside "
          "[{}, {})",
          e.name, e.offset, table_end, payload.size()));
    }
    starts.push_back(e.offset);
  }
  std::sort(starts.begin(), starts.end());
  for (auto& e : out) {
    auto next = std::upper_bound(starts.begin(), starts.end(), e.offset);
    const uint64_t end = next == starts.end() ? payload.size() : *next;
    e.footer = payload.subspan(e.offset, end - e.offset);
  }
  return out;
}

Result<ConsolidatedFragmentMeta> LoadConsolidatedFragmentMeta(const Storage& storage,
                                                              const std::string& path,
                                                              const EncryptionKey* key,
                                                              const Limits& limits) {
  ASSIGN_OR_RETURN(GenericTile tile, ReadGenericTile(storage, path, 0, key, limits));
  ASSIGN_OR_RETURN_CTX(auto footers, ParseConsolidatedFragmentMeta(tile.data, 0, limits), path);
  // Moving the vector keeps its bytes where the views point.
  return ConsolidatedFragmentMeta(std::move(tile.data), std::move(footers));
}

}  // namespace tiledbfs::core
