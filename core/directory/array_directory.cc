#include "core/directory/array_directory.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_set>

#include "core/directory/listing_util.h"
#include "core/util/byte_reader.h"

namespace tiledbfs::core {
namespace {

using directory_internal::Extension;
using directory_internal::ListFolder;
using directory_internal::ParseNameAt;
using directory_internal::ReadSmallFile;
using directory_internal::ReadUriList;
using directory_internal::ReadVacuumFile;

constexpr std::string_view kSchemaDir = "__schema";
constexpr std::string_view kFragmentsDir = "__fragments";
constexpr std::string_view kCommitsDir = "__commits";
constexpr std::string_view kMetaDir = "__meta";
constexpr std::string_view kFragmentMetaDir = "__fragment_meta";
constexpr std::string_view kLabelsDir = "__labels";
constexpr std::string_view kGroupDir = "__group";
constexpr std::string_view kEnumerationsDir = "__enumerations";
constexpr std::string_view kLegacySchemaFile = "__array_schema.tdb";
constexpr std::string_view kFragmentMetadataFile = "__fragment_metadata.tdb";

constexpr std::string_view kOkExt = ".ok";
constexpr std::string_view kWrtExt = ".wrt";
constexpr std::string_view kDelExt = ".del";
constexpr std::string_view kUpdExt = ".upd";
constexpr std::string_view kConExt = ".con";
constexpr std::string_view kIgnExt = ".ign";
constexpr std::string_view kVacExt = ".vac";
constexpr std::string_view kMetaExt = ".meta";

bool IsKnownArrayFolder(std::string_view name) {
  return name == kSchemaDir || name == kFragmentsDir || name == kCommitsDir || name == kMetaDir ||
         name == kFragmentMetaDir || name == kLabelsDir;
}

// Parents that ReduceToStoragePath keeps.
bool IsKeptParent(std::string_view name) {
  return name == kFragmentsDir || name == kCommitsDir || name == kMetaDir ||
         name == kFragmentMetaDir || name == kSchemaDir || name == kGroupDir;
}

std::string FragmentsPath(const std::string& name) {
  return std::string(kFragmentsDir) + "/" + name;
}

// Splits contents into lines at '\n'; the last newline is optional. Calls
// fn(line, line_offset, next_offset) where next_offset is just past the
// newline (or the end); fn returns the offset to continue from.
template <class Fn>
Status ForEachLine(Bytes contents, Fn&& fn) {
  std::string_view text = AsStringView(contents);
  uint64_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    bool has_newline = nl != std::string_view::npos;
    size_t end = has_newline ? nl : text.size();
    std::string_view line = text.substr(pos, end - pos);
    uint64_t next = has_newline ? end + 1 : end;
    ASSIGN_OR_RETURN(uint64_t cont, fn(line, pos, next, has_newline));
    pos = cont;
  }
  return Ok();
}

}  // namespace

bool IsImmutableFolder(std::string_view dir) {
  const std::string_view first = dir.substr(0, dir.find('/'));
  if (first == kFragmentsDir) return dir.size() > first.size() + 1;
  if (first.size() < 20 || first.rfind("__", 0) != 0) return false;
  return std::all_of(first.begin() + 2, first.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '_';
  });
}

bool IsMetadataFile(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return true;
  return !IsImmutableFolder(path.substr(0, slash)) ||
         path.substr(slash + 1) == kFragmentMetadataFile;
}

Result<std::string> ReduceToStoragePath(std::string_view uri) {
  std::string_view s = uri;
  if (!s.empty() && s.back() == '/') s.remove_suffix(1);
  size_t slash = s.rfind('/');
  std::string_view last = slash == std::string_view::npos ? s : s.substr(slash + 1);
  if (last.empty() || last == "." || last == "..") {
    return Error::Corrupt(fmt::format("entry \"{}\" names no file", uri));
  }
  if (slash != std::string_view::npos) {
    std::string_view head = s.substr(0, slash);
    size_t pslash = head.rfind('/');
    std::string_view parent = pslash == std::string_view::npos ? head : head.substr(pslash + 1);
    if (IsKeptParent(parent)) return std::string(parent) + "/" + std::string(last);
  }
  return std::string(last);
}

Result<std::vector<std::string>> ParseUriList(Bytes contents, uint64_t file_offset) {
  std::vector<std::string> out;
  TRY(ForEachLine(
      contents, [&](std::string_view line, uint64_t at, uint64_t next, bool) -> Result<uint64_t> {
        if (line.empty()) {
          return Error::Corrupt(fmt::format("offset {}: URI list: empty line", file_offset + at));
        }
        auto reduced = ReduceToStoragePath(line);
        if (!reduced.ok()) {
          return reduced.error().WithContext(fmt::format("offset {}: URI list", file_offset + at));
        }
        out.push_back(std::move(reduced).value());
        return next;
      }));
  return out;
}

Result<std::vector<ConsolidatedCommit>> ParseConsolidatedCommits(Bytes contents,
                                                                 uint64_t file_offset) {
  std::vector<ConsolidatedCommit> out;
  TRY(ForEachLine(
      contents,
      [&](std::string_view line, uint64_t at, uint64_t next, bool has_newline) -> Result<uint64_t> {
        auto ctx = [&] { return fmt::format("offset {}: consolidated commits", file_offset + at); };
        if (line.empty()) return Error::Corrupt(ctx() + ": empty line");
        ConsolidatedCommit entry;
        auto reduced = ReduceToStoragePath(line);
        if (!reduced.ok()) return reduced.error().WithContext(ctx());
        entry.path = std::move(reduced).value();
        std::string_view last = entry.path;
        if (size_t slash = last.rfind('/'); slash != std::string_view::npos) {
          last = last.substr(slash + 1);
        }
        auto name = ParseTimestampedName(last);
        if (!name.ok()) return name.error().WithContext(ctx());
        entry.name = std::move(name).value();
        const std::string& ext = entry.name.extension;
        uint64_t cont = next;
        if (ext == kDelExt || ext == kUpdExt) {
          // The commit's whole file follows: uint64 size, then the bytes.
          if (!has_newline) return Error::Corrupt(ctx() + ": condition entry without its newline");
          ByteReader r(contents.subspan(next), file_offset + next);
          ASSIGN_OR_RETURN(uint64_t size, r.Read<uint64_t>("consolidated commits: condition size"));
          entry.condition_offset = r.offset();
          ASSIGN_OR_RETURN(Bytes cond, r.ReadBytes(size, "consolidated commits: condition"));
          entry.condition.assign(cond.begin(), cond.end());
          cont = next + r.position();
        } else if (ext != kWrtExt && ext != kOkExt) {
          return Error::Corrupt(
              fmt::format("{}: entry \"{}\" is not a .wrt, .ok, .del or .upd commit", ctx(), line));
        }
        out.push_back(std::move(entry));
        return cont;
      }));
  return out;
}

Result<ArrayListing> ListArray(const Storage& storage, const Limits& limits) {
  ArrayListing out;
  const std::string schema_dir(kSchemaDir), commits_dir(kCommitsDir), fragments_dir(kFragmentsDir),
      meta_dir(kMetaDir), fragment_meta_dir(kFragmentMetaDir);

  ASSIGN_OR_RETURN(std::vector<DirEntry> root, ListFolder(storage, "", limits));

  // Schemas: the legacy file counts as older than every __schema one.
  for (const DirEntry& e : root) {
    if (!e.is_dir && e.name == kLegacySchemaFile) {
      out.schemas.push_back({e.name, e.name, 0, 0});
    }
  }
  ASSIGN_OR_RETURN(std::vector<DirEntry> schema_entries, ListFolder(storage, schema_dir, limits));
  for (const DirEntry& e : schema_entries) {
    if (e.is_dir) {
      if (e.name == kEnumerationsDir) out.has_enumerations_dir = true;
      continue;
    }
    if (!Extension(e.name).empty()) continue;
    std::string path = JoinPath(schema_dir, e.name);
    ASSIGN_OR_RETURN(TimestampedName n, ParseNameAt(path, e.name));
    out.schemas.push_back({path, e.name, n.t1, n.t2});
  }
  if (out.schemas.empty()) {
    return Error::NotFound(fmt::format("{}: not an array (no schema)", storage.root()));
  }
  std::sort(out.schemas.begin(), out.schemas.end(), [](const SchemaFile& a, const SchemaFile& b) {
    return std::tie(a.t1, a.t2, a.name) < std::tie(b.t1, b.t2, b.name);
  });

  // __commits: classify by extension.
  ASSIGN_OR_RETURN(std::vector<DirEntry> commit_entries, ListFolder(storage, commits_dir, limits));
  std::vector<std::pair<std::string, TimestampedName>> wrt_files, condition_files;
  std::vector<std::string> con_files, vac_files;
  for (const DirEntry& e : commit_entries) {
    if (e.is_dir) continue;
    std::string_view ext = Extension(e.name);
    std::string path = JoinPath(commits_dir, e.name);
    if (ext == kWrtExt || ext == kDelExt || ext == kUpdExt) {
      ASSIGN_OR_RETURN(TimestampedName n, ParseNameAt(path, e.name));
      (ext == kWrtExt ? wrt_files : condition_files).emplace_back(path, std::move(n));
    } else if (ext == kConExt || ext == kIgnExt) {
      TRY(ParseNameAt(path, e.name));
      (ext == kConExt ? con_files : out.ignore_files).push_back(path);
    } else if (ext == kVacExt) {
      vac_files.push_back(e.name);
    }
  }

  // Ignore files name .con entries to skip (relative paths, compared after
  // the same reduction as the .con entries).
  std::set<std::string> ignored_entries;
  std::set<std::string> ignored_dirs;
  for (const std::string& path : out.ignore_files) {
    ASSIGN_OR_RETURN(std::vector<std::string> entries, ReadUriList(storage, path, limits));
    for (std::string& entry : entries) {
      std::string_view last = entry;
      if (size_t slash = last.rfind('/'); slash != std::string_view::npos) {
        last = last.substr(slash + 1);
      }
      std::string_view ext = Extension(last);
      std::string stem(last.substr(0, last.size() - ext.size()));
      if (ext == kWrtExt) ignored_dirs.insert(FragmentsPath(stem));
      if (ext == kOkExt) ignored_dirs.insert(stem);
      ignored_entries.insert(std::move(entry));
    }
  }

  // Consolidated commits: fragment commits (first .con wins) and conditions.
  std::map<std::string, std::pair<std::string, TimestampedName>> con_wrt;  // dir -> (.con, name)
  std::map<std::string, std::string> con_ok;                               // legacy dir -> .con
  std::set<std::string> con_paths;  // non-ignored entries: their standalone files are duplicates
  for (const std::string& path : con_files) {
    ASSIGN_OR_RETURN(ByteVec bytes, ReadSmallFile(storage, path, limits));
    ASSIGN_OR_RETURN_CTX(std::vector<ConsolidatedCommit> entries, ParseConsolidatedCommits(bytes),
                         path);
    for (ConsolidatedCommit& c : entries) {
      bool ignored = ignored_entries.count(c.path) != 0;
      const std::string ext = c.name.extension;
      if (ext == kDelExt || ext == kUpdExt) {
        // TileDB applies conditions of .con files even when ignored.
        ConditionCommit cc;
        cc.path = path;
        cc.is_update = ext == kUpdExt;
        cc.in_consolidated_file = true;
        cc.offset = c.condition_offset;
        cc.contents = std::move(c.condition);
        cc.ignored = ignored;
        cc.name = std::move(c.name);
        out.conditions.push_back(std::move(cc));
      } else if (!ignored) {
        if (ext == kWrtExt) {
          con_wrt.try_emplace(FragmentsPath(c.name.name), path, c.name);
        } else {
          con_ok.try_emplace(c.name.name, path);
        }
      }
      if (!ignored) con_paths.insert(c.path);
    }
  }
  out.consolidated_commit_files = con_files;

  // Fragment folders that exist under __fragments, by name (ListFolder
  // sorts them). Their names are parsed only for the folders no commit
  // names: issue 5's array (c) has 10,000 of them, all committed.
  ASSIGN_OR_RETURN(std::vector<DirEntry> fragment_entries,
                   ListFolder(storage, fragments_dir, limits));
  std::vector<std::string_view> fragment_folders;
  fragment_folders.reserve(fragment_entries.size());
  for (const DirEntry& e : fragment_entries) {
    if (e.is_dir && Extension(e.name).empty()) fragment_folders.push_back(e.name);
  }
  auto folder_exists = [&](std::string_view name) {
    return std::binary_search(fragment_folders.begin(), fragment_folders.end(), name);
  };

  std::unordered_set<std::string> committed;
  committed.reserve(fragment_folders.size() + wrt_files.size() + con_wrt.size());
  auto add_fragment = [&](std::string dir, TimestampedName name, CommitKind kind,
                          std::string commit_file, bool dir_exists) {
    if (!committed.insert(dir).second) return;
    out.fragments.push_back(
        {std::move(dir), std::move(name), kind, std::move(commit_file), dir_exists});
  };
  for (auto& [dir, con] : con_wrt) {
    TimestampedName n = con.second;
    n.extension.clear();
    const bool exists = folder_exists(n.name);
    add_fragment(dir, std::move(n), CommitKind::kConsolidated, con.first, exists);
  }
  for (auto& [path, n] : wrt_files) {
    if (con_paths.count(path) != 0) continue;
    std::string dir = FragmentsPath(n.name);
    n.extension.clear();
    const bool exists = folder_exists(n.name);
    add_fragment(std::move(dir), std::move(n), CommitKind::kWrt, std::move(path), exists);
  }
  for (auto& [path, n] : condition_files) {
    if (con_paths.count(path) != 0) continue;
    ConditionCommit cc;
    cc.path = path;
    cc.is_update = n.extension == kUpdExt;
    cc.name = std::move(n);
    out.conditions.push_back(std::move(cc));
  }

  // The array root: legacy fragments, .ok commits, vacuum files, fragment meta.
  std::set<std::string> ok_names;
  std::vector<std::string> root_vacs, root_meta;
  std::vector<const DirEntry*> candidates;
  // Fragment folders no commit names, by (name, folder).
  std::vector<std::pair<TimestampedName, std::string>> loose;
  for (const DirEntry& e : root) {
    std::string_view ext = Extension(e.name);
    if (e.is_dir) {
      if (e.name == kLabelsDir) out.has_labels_dir = true;
      if (IsKnownArrayFolder(e.name) || !ext.empty()) continue;
      candidates.push_back(&e);
    } else if (ext == kOkExt) {
      ASSIGN_OR_RETURN(TimestampedName n, ParseNameAt(e.name, e.name));
      ok_names.insert(n.name);
    } else if (ext == kVacExt) {
      root_vacs.push_back(e.name);
    } else if (ext == kMetaExt) {
      TRY(ParseNameAt(e.name, e.name));
      root_meta.push_back(e.name);
    }
  }
  for (const DirEntry* e : candidates) {
    auto parsed = ParseTimestampedName(e->name);
    if (!parsed.ok()) continue;  // not a fragment folder (user data, nested objects)
    TimestampedName n = std::move(parsed).value();
    if (auto it = con_ok.find(e->name); it != con_ok.end()) {
      add_fragment(e->name, std::move(n), CommitKind::kConsolidated, it->second, true);
    } else if (ok_names.count(e->name) != 0) {
      add_fragment(e->name, std::move(n), CommitKind::kOk, e->name + std::string(kOkExt), true);
    } else if (std::string md = JoinPath(e->name, std::string(kFragmentMetadataFile));
               !HasCommitFiles(n.ImpliedFormatVersion()) && storage.Exists(md)) {
      add_fragment(e->name, std::move(n), CommitKind::kImplicit, md, true);
    } else {
      loose.emplace_back(std::move(n), e->name);
    }
  }
  std::string probe = std::string(kFragmentsDir) + "/";  // "__fragments/<name>", reused
  const size_t prefix = probe.size();
  for (std::string_view f : fragment_folders) {
    probe.resize(prefix);
    probe += f;
    if (committed.count(probe) != 0) continue;
    auto n = ParseTimestampedName(f);
    if (!n.ok()) continue;  // never reachable through a commit file, as in TileDB
    loose.emplace_back(std::move(n).value(), probe);
  }
  std::sort(loose.begin(), loose.end());
  for (auto& [name, d] : loose) out.uncommitted.push_back(std::move(d));
  // Only what the ignore files actually decommit: a fragment whose own
  // .wrt/.ok is still present stays committed, as in TileDB.
  for (const std::string& dir : ignored_dirs) {
    if (committed.count(dir) == 0) out.ignored.push_back(dir);
  }

  // Fragment vacuum files: __commits/*.vac and legacy root *.vac.
  for (const std::string& f : vac_files) {
    ASSIGN_OR_RETURN(VacuumFile v, ReadVacuumFile(storage, commits_dir, f, limits));
    out.fragment_vacuums.push_back(std::move(v));
  }
  for (const std::string& f : root_vacs) {
    ASSIGN_OR_RETURN(VacuumFile v, ReadVacuumFile(storage, "", f, limits));
    out.fragment_vacuums.push_back(std::move(v));
  }

  // Consolidated fragment metadata: legacy root first, then __fragment_meta.
  out.fragment_meta_files = root_meta;
  ASSIGN_OR_RETURN(std::vector<DirEntry> fmeta_entries,
                   ListFolder(storage, fragment_meta_dir, limits));
  for (const DirEntry& e : fmeta_entries) {
    if (e.is_dir || Extension(e.name) != kMetaExt) continue;
    std::string path = JoinPath(fragment_meta_dir, e.name);
    TRY(ParseNameAt(path, e.name));
    out.fragment_meta_files.push_back(std::move(path));
  }

  // Array metadata.
  ASSIGN_OR_RETURN(std::vector<DirEntry> meta_entries, ListFolder(storage, meta_dir, limits));
  for (const DirEntry& e : meta_entries) {
    if (e.is_dir) continue;
    std::string_view ext = Extension(e.name);
    if (ext.empty()) {
      ASSIGN_OR_RETURN(TimestampedName n, ParseNameAt(JoinPath(meta_dir, e.name), e.name));
      out.metadata_files.push_back(std::move(n));
    } else if (ext == kVacExt) {
      ASSIGN_OR_RETURN(VacuumFile v, ReadVacuumFile(storage, meta_dir, e.name, limits));
      out.metadata_vacuums.push_back(std::move(v));
    }
  }

  // Sort.
  std::sort(out.fragments.begin(), out.fragments.end(),
            [](const FragmentEntry& a, const FragmentEntry& b) {
              return std::tie(a.name, a.dir) < std::tie(b.name, b.dir);
            });
  std::sort(out.conditions.begin(), out.conditions.end(),
            [](const ConditionCommit& a, const ConditionCommit& b) {
              return std::tie(a.name, a.path, a.offset) < std::tie(b.name, b.path, b.offset);
            });
  auto by_name = [](const VacuumFile& a, const VacuumFile& b) {
    return std::tie(a.name, a.path) < std::tie(b.name, b.path);
  };
  std::sort(out.fragment_vacuums.begin(), out.fragment_vacuums.end(), by_name);
  std::sort(out.metadata_vacuums.begin(), out.metadata_vacuums.end(), by_name);
  std::sort(out.metadata_files.begin(), out.metadata_files.end());
  return out;
}

bool OnlyAppended(const ArrayListing& before, uint64_t latest, const ArrayListing& after) {
  bool ok = true;
  // Every key of `before` is in `after`; keys new in `after` start after
  // `latest`.
  auto check = [&](const auto& old_items, const auto& new_items, auto key_of, auto t1_of) {
    std::set<std::string> old_keys;
    for (const auto& x : old_items) old_keys.insert(key_of(x));
    size_t kept = 0;
    for (const auto& x : new_items) {
      if (old_keys.count(key_of(x)) != 0) {
        ++kept;
      } else if (t1_of(x) <= latest) {
        ok = false;
      }
    }
    if (kept != old_keys.size()) ok = false;
  };
  check(
      before.schemas, after.schemas, [](const SchemaFile& f) { return f.path; },
      [](const SchemaFile& f) { return f.t1; });
  check(
      before.fragments, after.fragments, [](const FragmentEntry& f) { return f.dir; },
      [](const FragmentEntry& f) { return f.name.t1; });
  check(
      before.conditions, after.conditions,
      [](const ConditionCommit& c) { return c.name.name + c.name.extension; },
      [](const ConditionCommit& c) { return c.name.t1; });
  check(
      before.metadata_files, after.metadata_files,
      [](const TimestampedName& m) { return m.name + m.extension; },
      [](const TimestampedName& m) { return m.t1; });
  auto vac_paths = [](const std::vector<VacuumFile>& v) {
    std::vector<std::string> out;
    for (const auto& f : v) out.push_back(f.path);
    return out;
  };
  if (vac_paths(before.fragment_vacuums) != vac_paths(after.fragment_vacuums) ||
      vac_paths(before.metadata_vacuums) != vac_paths(after.metadata_vacuums) ||
      before.ignore_files != after.ignore_files) {
    ok = false;
  }
  return ok;
}

}  // namespace tiledbfs::core
