// Consolidated fragment metadata: __fragment_meta/<timestamped name>.meta
// (legacy: <name>.meta in the array folder), one generic tile whose payload
// gathers the footers of several fragments.
// Spec: format_spec/consolidated_fragment_metadata_file.md.
//
//   field                 type       note
//   fragment num          uint32     (missing from the spec's table)
//   per fragment:
//     name size           uint64
//     name                char[]     folder name (9+); absolute URI before 9
//     footer offset       uint64     from the start of the payload
//   footers               Footer[]   each without its length field
//
// Fragments older than 3 have no footer and are never listed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/filters/filter_pipeline.h"
#include "core/storage/storage.h"
#include "core/util/limits.h"

namespace tiledbfs::core {

// One entry of the payload. Its views point into the payload it was parsed
// from, which must outlive it.
struct ConsolidatedFooter {
  std::string_view name;           // as stored (an absolute URI before format 9)
  std::string_view fragment_name;  // its last path component: the fragment folder name
  uint64_t offset = 0;             // of the footer in the payload
  // The footer: from `offset` up to the next footer's offset (or the end of
  // the payload). FragmentMetadata::FromFooter parses it.
  Bytes footer;
};

// Parses the unfiltered payload. Errors: kCorrupt (truncated, a count or a
// name larger than the bytes present, an offset inside the name table or
// past the end, trailing garbage is allowed only as part of the last footer).
// No copy is made: an array of 10,000 fragments opens with one such file
// (issue 5), where copies of the footers and names took 20,000 allocations
// (6.6 MB).
Result<std::vector<ConsolidatedFooter>> ParseConsolidatedFragmentMeta(Bytes payload,
                                                                      uint64_t file_offset,
                                                                      const Limits& limits);

// A decoded .meta file: its payload and the entries that point into it.
// Movable (the payload's bytes stay where they are), not copyable.
class ConsolidatedFragmentMeta {
 public:
  ConsolidatedFragmentMeta(ByteVec payload, std::vector<ConsolidatedFooter> footers)
      : payload_(std::move(payload)), footers_(std::move(footers)) {}
  ConsolidatedFragmentMeta(ConsolidatedFragmentMeta&&) = default;
  ConsolidatedFragmentMeta& operator=(ConsolidatedFragmentMeta&&) = default;
  ConsolidatedFragmentMeta(const ConsolidatedFragmentMeta&) = delete;
  ConsolidatedFragmentMeta& operator=(const ConsolidatedFragmentMeta&) = delete;

  size_t size() const { return footers_.size(); }
  const ConsolidatedFooter& operator[](size_t i) const { return footers_[i]; }
  auto begin() const { return footers_.begin(); }
  auto end() const { return footers_.end(); }

 private:
  ByteVec payload_;
  std::vector<ConsolidatedFooter> footers_;
};

// Reads and decodes the generic tile at `path`, then parses it. Errors carry
// the path.
Result<ConsolidatedFragmentMeta> LoadConsolidatedFragmentMeta(const Storage& storage,
                                                              const std::string& path,
                                                              const EncryptionKey* key,
                                                              const Limits& limits);

}  // namespace tiledbfs::core
