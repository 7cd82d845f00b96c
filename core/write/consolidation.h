// Array maintenance as TileDB 2.30 does it: fragment metadata consolidation,
// fragment consolidation and fragment vacuum. The reference is TileDB's
// tiledb/sm/consolidator/fragment_meta_consolidator.cc and
// fragment_consolidator.cc; the files written are those of
// format_spec/consolidated_fragment_metadata_file.md and vacuum_file.md.
//
// Files written, each complete before it appears (atomic_file.h):
//   __fragment_meta/__<t1>_<t2>_<uuid>_<v>.meta  (v < 12: in the array folder)
//       one generic tile: uint32 fragment count; per fragment uint64 name
//       size, name (folder name), uint64 offset of its footer in the
//       payload; then the footers (each as in __fragment_metadata.tdb,
//       without the trailing length). t1 is the first fragment's, t2 the
//       last's; v the latest schema's write version.
//   __commits/<consolidated fragment>.vac
//       one line "/__fragments/<name>" per consolidated fragment (paths
//       relative to the array, as TileDB writes from format 19 on), written
//       after the consolidated fragment's commit file.
//   __commits/__<t1>_<t2>_<uuid>_22.ign  (vacuum only)
//       "__commits/<name>.wrt" lines for vacuumed fragments whose commit is
//       inside a consolidated commits file (.con), which cannot be deleted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/util/bytes.h"
#include "core/util/limits.h"
#include "core/util/result.h"

namespace tiledbfs::core {

// One fragment's entry of a consolidated fragment metadata file.
struct FooterEntry {
  std::string name;  // fragment folder name
  ByteVec footer;    // the footer fields, without the length field
};

// The unfiltered payload of a .meta file (header comment). kInvalidArgument
// for a fragment count or offsets that do not fit their fields.
Result<ByteVec> SerializeConsolidatedFragmentMeta(const std::vector<FooterEntry>& entries);

struct FragmentMetaConsolidation {
  std::string file;                    // path relative to the array; "" if not written
  std::vector<std::string> fragments;  // folder names, in file order
};

// Writes the footers of every fragment of the array's latest view (format
// 3 and newer, oldest first) into one .meta file, as TileDB's
// FragmentMetaConsolidator::consolidate. With fewer than two such fragments
// nothing is written (TileDB does the same). Footers are copied from each
// fragment's __fragment_metadata.tdb. Errors: kNotFound (not an array, or a
// fragment folder missing), kKey (encrypted: not written), errors of
// opening the array and reading the footers, kIo. The array is opened
// under `limits`.
Result<FragmentMetaConsolidation> ConsolidateFragmentMetadata(const std::string& array_dir,
                                                              const Limits& limits);

struct ConsolidateOptions {
  // Sparse arrays: write the consolidated fragment without per-cell
  // timestamps (see ConsolidateFragments). Without it, sparse fragments of
  // more than one instant are refused.
  bool without_timestamps = false;
};

struct FragmentConsolidation {
  std::string fragment;                   // the new fragment's name; "" if nothing was done
  std::string vacuum_file;                // "__commits/<fragment>.vac"
  std::vector<std::string> consolidated;  // folder names of the fragments it replaces
  uint64_t cell_count = 0;                // cells written
};

// Consolidates every fragment of the array's latest view into one fragment
// named for [smallest t1, largest t2], then writes its .vac file listing
// them. The cells are the latest view's: dense, the bounding box of the
// fragments' non-empty domains in row-major order, cells no fragment wrote
// holding fill values (as TileDB's dense consolidation writes them); sparse,
// every cell the view shows (duplicates kept when allowed, overwritten
// cells gone).
//
// TileDB 2.30 always consolidates sparse fragments with per-cell timestamps,
// so that views at instants inside the range stay as they were; the
// fragment writer stores no timestamps yet, so a sparse consolidation of
// fragments spanning more than one instant is refused unless
// options.without_timestamps (then the latest view is unchanged but views
// at instants in [t1, t2) show the consolidated cells, as TileDB's
// consolidation without timestamps did).
//
// With fewer than two fragments nothing is done. Refused (kUnsupported,
// nothing written): delete or update commits, fragments with delete meta
// or timestamps (unless without_timestamps), dense arrays holding sparse
// fragments, fragments older than format 12 or whose folder is missing,
// schemas the writer does not write (format other than 22, dimension
// labels, enumerations, a current domain), encrypted arrays (kKey).
// kNotFound if `array_dir` is not an array. On a failure after the
// fragment is committed, the fragment is removed again. The array is
// opened under `limits`.
Result<FragmentConsolidation> ConsolidateFragments(const std::string& array_dir,
                                                   const Limits& limits,
                                                   const ConsolidateOptions& options = {});

struct FragmentVacuum {
  std::vector<std::string> removed_fragments;  // storage paths ("__fragments/<name>")
  std::vector<std::string> removed_vacuum_files;
  std::string ignore_file;  // written .ign, or ""
};

// TileDB's fragment vacuum: every committed fragment named in a .vac file
// goes, then the .vac files. Order, for concurrent readers: first an .ign
// file for fragments committed by a .con file; then per fragment its commit
// file (.wrt / .ok) and after it the folder, so a listing never finds a
// commit without its fragment; the .vac files last, so until then a reader
// that still lists a vacuumed fragment also finds the .vac that hides it.
// kNotFound if not an array; kCorrupt for malformed commit or vacuum files
// (nothing removed); kIo. The array is listed under `limits`.
Result<FragmentVacuum> VacuumFragments(const std::string& array_dir, const Limits& limits);

}  // namespace tiledbfs::core
