#include "core/write/consolidation.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "core/array/array.h"
#include "core/array/array_view.h"
#include "core/util/byte_reader.h"
#include "core/util/byte_writer.h"
#include "core/write/atomic_file.h"
#include "core/write/filter_writer.h"
#include "core/write/fragment_writer.h"
#include "core/write/schema_writer.h"

namespace tiledbfs::core {
namespace {

namespace fs = std::filesystem;

// TileDB's ArraySchema::write_version: schemas older than
// back_compat_writes_min_format_version (7) are written at the library's
// version.
uint32_t WriteVersion(const ArraySchema& s) {
  return s.version < 7 ? kWriteFormatVersion : s.version;
}

// Fragment and commit folders exist from format 12 on (array_directory.cc
// get_fragment_metadata_dir, get_commits_dir).
bool HasArraySubfolders(uint32_t write_version) { return write_version >= 12; }

Result<std::shared_ptr<Array>> OpenArray(const std::string& array_dir, const Limits& limits) {
  std::error_code ec;
  if (!fs::is_directory(array_dir, ec)) return Error::NotFound(array_dir + " is not an array");
  ASSIGN_OR_RETURN(auto storage, LocalStorage::Open(array_dir));
  auto array = Array::Open(storage, std::nullopt, limits);
  if (!array.ok()) return array.error().WithContext(array_dir);
  return *array;
}

// The footer of a fragment as its __fragment_metadata.tdb stores it,
// without the trailing length field.
Result<ByteVec> ReadFooterBytes(const FragmentMetadata& m) {
  const Storage& storage = m.storage();
  const std::string path = m.metadata_file();
  ASSIGN_OR_RETURN(uint64_t size, storage.Size(path));
  bool var_dim = false;
  for (const Dimension& d : m.schema().dimensions) var_dim |= d.var();
  uint64_t length = 0, end = size;
  if (HasFooterLength(m.version()) || var_dim) {
    if (size < 8) return Error::Corrupt(path + ": shorter than its footer length field");
    ASSIGN_OR_RETURN(ByteVec tail, storage.Read(path, size - 8, 8));
    ByteReader r(tail, size - 8);
    ASSIGN_OR_RETURN(length, r.Read<uint64_t>("footer length"));
    end = size - 8;
  } else {
    length = m.footer().footer_size;
  }
  if (length > end || length < 4) {
    return Error::Corrupt(
        fmt::format("{}: footer length {} in a file of {} bytes", path, length, size));
  }
  ASSIGN_OR_RETURN(ByteVec footer, storage.Read(path, end - length, length));
  ByteReader r(footer, end - length);
  ASSIGN_OR_RETURN(uint32_t version, r.Read<uint32_t>("footer version"));
  if (version != m.version()) {
    return Error::Corrupt(fmt::format("{}: footer at offset {} has version {}, expected {}", path,
                                      end - length, version, m.version()));
  }
  return footer;
}

FieldCells ToFieldCells(Column c) {
  FieldCells f;
  f.data = std::move(c.data);
  if (c.var()) {
    f.offsets = std::move(c.offsets);
    if (!f.offsets.empty()) f.offsets.pop_back();  // the column's extra final offset
  }
  if (c.nullable) f.validity = std::move(c.validity);
  return f;
}

}  // namespace

Result<ByteVec> SerializeConsolidatedFragmentMeta(const std::vector<FooterEntry>& entries) {
  if (entries.size() > UINT32_MAX) return Error::InvalidArgument("too many fragments");
  // The footers start after the count and the name table.
  uint64_t offset = 4;
  for (const FooterEntry& e : entries) offset += 8 + e.name.size() + 8;
  ByteWriter w;
  w.Put<uint32_t>(static_cast<uint32_t>(entries.size()));
  for (const FooterEntry& e : entries) {
    w.Put<uint64_t>(e.name.size());
    w.PutString(e.name);
    w.Put<uint64_t>(offset);
    offset += e.footer.size();
  }
  for (const FooterEntry& e : entries) w.PutBytes(e.footer);
  return w.Take();
}

Result<FragmentMetaConsolidation> ConsolidateFragmentMetadata(const std::string& array_dir,
                                                              const Limits& limits) {
  ASSIGN_OR_RETURN(std::shared_ptr<Array> array, OpenArray(array_dir, limits));
  ASSIGN_OR_RETURN(std::shared_ptr<const ArrayView> view, array->ViewAt(UINT64_MAX));
  // TileDB takes the fragments of the array opened for reading at the
  // latest time that have a footer (format 3+), in timestamp order.
  std::vector<std::shared_ptr<FragmentMetadata>> frags;
  for (const auto& m : view->fragments()) {
    if (m->version() > 2) frags.push_back(m);
  }
  FragmentMetaConsolidation out;
  if (frags.size() < 2) return out;
  std::vector<FooterEntry> entries;
  for (const auto& m : frags) {
    ASSIGN_OR_RETURN(ByteVec footer, ReadFooterBytes(*m));
    entries.push_back({m->name().name, std::move(footer)});
    out.fragments.push_back(m->name().name);
  }
  ASSIGN_OR_RETURN(ByteVec payload, SerializeConsolidatedFragmentMeta(entries));
  ASSIGN_OR_RETURN(ByteVec tile, EncodeGenericTile(payload, kWriteFormatVersion));
  const uint32_t write_version = WriteVersion(*array->LatestSchema());
  const std::string name =
      NewTimestampedName(frags.front()->name().t1, frags.back()->name().t2, write_version);
  out.file = (HasArraySubfolders(write_version) ? "__fragment_meta/" : "") + name + ".meta";
  TRY(WriteArrayFileAtomically(array_dir, out.file, tile));
  return out;
}

Result<FragmentConsolidation> ConsolidateFragments(const std::string& array_dir,
                                                   const Limits& limits,
                                                   const ConsolidateOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<Array> array, OpenArray(array_dir, limits));
  const ArrayListing& listing = array->listing();
  if (!listing.conditions.empty()) {
    return Error::Unsupported(fmt::format(
        "{}: the array has {} delete/update commit(s) ({}); consolidating them needs delete "
        "metadata in the new fragment, which is not written",
        array_dir, listing.conditions.size(), listing.conditions.front().path));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const ArrayView> view, array->ViewAt(UINT64_MAX));
  const auto& frags = view->fragments();
  FragmentConsolidation out;
  if (frags.size() < 2) return out;
  const ArraySchema& schema = view->schema();
  if (schema.version != kWriteFormatVersion) {
    return Error::Unsupported(fmt::format(
        "{}: schema {} has format version {}; only arrays of format {} are consolidated", array_dir,
        schema.name, schema.version, kWriteFormatVersion));
  }
  {
    auto written = SerializeArraySchema(schema, limits);  // what the writer cannot write
    if (!written.ok()) return written.error().WithContext(array_dir + ": cannot consolidate");
  }
  std::map<std::string, const FragmentEntry*> entries;
  for (const FragmentEntry& e : listing.fragments) entries[e.dir] = &e;
  uint64_t t_first = UINT64_MAX, t_last = 0;
  for (const auto& m : frags) {
    const std::string& dir = m->dir();
    auto it = entries.find(dir);
    if (dir.rfind("__fragments/", 0) != 0 || m->version() < 12) {
      return Error::Unsupported(fmt::format(
          "{}: fragment {} is of format {}; only fragments under __fragments/ (12+) are "
          "consolidated",
          array_dir, dir, m->version()));
    }
    if (it == entries.end() || !it->second->dir_exists) {
      return Error::NotFound(fmt::format("{}: fragment folder {} is missing", array_dir, dir));
    }
    if (m->footer().has_delete_meta) {
      return Error::Unsupported(
          fmt::format("{}: fragment {} has delete metadata, which is not written", array_dir, dir));
    }
    if (view->dense() && !m->dense()) {
      return Error::Unsupported(fmt::format(
          "{}: dense array with a sparse fragment ({}); not consolidated", array_dir, dir));
    }
    t_first = std::min(t_first, m->name().t1);
    t_last = std::max(t_last, m->name().t2);
  }
  if (!view->dense() && t_first != t_last && !options.without_timestamps) {
    return Error::Unsupported(fmt::format(
        "{}: TileDB 2.30 consolidates sparse fragments with per-cell timestamps (so that views at "
        "instants in [{}, {}] stay as they were), which the fragment writer does not write; "
        "consolidate without timestamps (those views then show the consolidated cells) with "
        "--without-timestamps",
        array_dir, t_first, t_last));
  }

  ASSIGN_OR_RETURN(uint64_t cells, view->CellCount());
  if (cells == 0) {
    return Error::Unsupported(fmt::format("{}: the latest view has no cells", array_dir));
  }
  WriteBatch batch;
  if (!view->dense()) {
    for (const Dimension& d : schema.dimensions) {
      ASSIGN_OR_RETURN(Column c, view->ReadField(d.name));
      batch.fields[d.name] = ToFieldCells(std::move(c));
    }
  } else {
    ASSIGN_OR_RETURN(batch.subarray, view->NonEmptyDomain());
  }
  for (const Attribute& a : schema.attributes) {
    ASSIGN_OR_RETURN(Column c, view->ReadField(a.name));
    batch.fields[a.name] = ToFieldCells(std::move(c));
  }
  ASSIGN_OR_RETURN(out.fragment, WriteFragment(array_dir, schema, t_first, t_last, batch));
  out.cell_count = cells;

  // The vacuum file, written after the new fragment's commit (as TileDB's
  // consolidate_internal: finalize, then write_vacuum_file).
  std::string lines;
  for (const auto& m : frags) {
    lines += "/" + m->dir() + "\n";
    out.consolidated.push_back(m->name().name);
  }
  out.vacuum_file = "__commits/" + out.fragment + ".vac";
  Status st = WriteArrayFileAtomically(array_dir, out.vacuum_file, AsBytes(lines));
  if (!st.ok()) {
    std::error_code ec;
    fs::remove(fs::path(array_dir) / "__commits" / (out.fragment + ".wrt"), ec);
    fs::remove_all(fs::path(array_dir) / "__fragments" / out.fragment, ec);
    return st.error();
  }
  return out;
}

Result<FragmentVacuum> VacuumFragments(const std::string& array_dir, const Limits& limits) {
  std::error_code ec;
  if (!fs::is_directory(array_dir, ec)) return Error::NotFound(array_dir + " is not an array");
  ASSIGN_OR_RETURN(auto storage, LocalStorage::Open(array_dir));
  auto listed = ListArray(*storage, limits);
  if (!listed.ok()) return listed.error().WithContext(array_dir);
  const ArrayListing& listing = *listed;

  std::map<std::string, const FragmentEntry*> committed;
  for (const FragmentEntry& e : listing.fragments) committed[e.dir] = &e;
  // Every vacuum file counts when vacuuming over [0, UINT64_MAX]; fragments
  // it names that are not committed (already gone) need nothing.
  std::vector<const FragmentEntry*> victims;
  std::set<std::string> seen;
  for (const VacuumFile& v : listing.fragment_vacuums) {
    for (const std::string& path : v.entries) {
      auto it = committed.find(path);
      if (it != committed.end() && seen.insert(path).second) victims.push_back(it->second);
    }
  }
  std::sort(victims.begin(), victims.end(),
            [](const FragmentEntry* a, const FragmentEntry* b) { return a->name < b->name; });

  FragmentVacuum out;
  // Commits inside a .con file cannot be deleted: an .ign file drops them.
  std::vector<const FragmentEntry*> ignored;
  for (const FragmentEntry* e : victims) {
    if (e->commit == CommitKind::kConsolidated) ignored.push_back(e);
  }
  if (!ignored.empty()) {
    std::string lines;
    // Relative to the array URI with its trailing slash (ArrayDirectory's
    // uri_), so unlike .vac lines these have no leading '/'.
    for (const FragmentEntry* e : ignored) lines += "__commits/" + e->name.name + ".wrt\n";
    out.ignore_file =
        "__commits/" +
        NewTimestampedName(ignored.front()->name.t1, ignored.back()->name.t2, kWriteFormatVersion) +
        ".ign";
    TRY(WriteArrayFileAtomically(array_dir, out.ignore_file, AsBytes(lines)));
  }
  const fs::path root(array_dir);
  for (const FragmentEntry* e : victims) {
    if (e->commit == CommitKind::kWrt || e->commit == CommitKind::kOk) {
      fs::remove(root / e->commit_file, ec);
      if (ec) return Error::Io(fmt::format("cannot remove {}: {}", e->commit_file, ec.message()));
    }
    fs::remove_all(root / e->dir, ec);
    if (ec) return Error::Io(fmt::format("cannot remove {}: {}", e->dir, ec.message()));
    out.removed_fragments.push_back(e->dir);
  }
  for (const VacuumFile& v : listing.fragment_vacuums) {
    fs::remove(root / v.path, ec);
    if (ec) return Error::Io(fmt::format("cannot remove {}: {}", v.path, ec.message()));
    out.removed_vacuum_files.push_back(v.path);
  }
  return out;
}

}  // namespace tiledbfs::core
