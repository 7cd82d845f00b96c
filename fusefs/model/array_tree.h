// The namespace of one array (NAMESPACE.md "An array"): the root view (live
// or pinned), history/<instant>/ views, fragments/<name>/ on their own.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/array/array.h"
#include "core/array/array_view.h"
#include "fusefs/model/render_cache.h"
#include "fusefs/model/tree.h"

namespace tiledbfs::fusefs {

// The byte budget of a mount (-o cache_size), shared by every array of it:
// half for decoded tiles, a quarter each for rendered files and columns.
struct TreeCaches {
  explicit TreeCaches(uint64_t budget)
      : tiles(std::make_shared<core::TileCache>(budget / 2)),
        files(budget / 4),
        columns(budget / 4) {}
  std::shared_ptr<core::TileCache> tiles;
  LruCache<std::string> files;
  LruCache<core::Column> columns;
};

class ArrayTree final : public Tree {
 public:
  // Opens and checks the array (schemas parse, key works, latest view's
  // fragment footers load).
  static Result<std::unique_ptr<ArrayTree>> Open(std::shared_ptr<const core::Storage> storage,
                                                 const TreeOptions& options,
                                                 std::shared_ptr<TreeCaches> caches);

  Result<NodeAttr> GetAttr(const std::string& path) override;
  Result<std::vector<DirEntryAttr>> List(const std::string& path) override;
  Result<std::unique_ptr<OpenFile>> Open(const std::string& path) override;

  struct Scope;  // a view and where in the namespace it is shown

 private:
  ArrayTree() = default;

  // The array as last opened; with `recheck` (opening a file, listing a
  // directory) reopened first if the folder changed, unless pinned.
  Result<std::shared_ptr<core::Array>> CurrentArray(bool recheck);
  // Resolves a path to (scope, rest of the path inside that scope).
  Result<std::pair<std::shared_ptr<Scope>, std::vector<std::string>>> Resolve(
      const std::string& path, bool recheck);
  // Enumerations of a schema, loaded once per schema.
  std::shared_ptr<const std::vector<core::Enumeration>> Enumerations(
      const core::Array& array, const core::ArraySchema& schema);
  Result<std::shared_ptr<const std::string>> Render(const Scope& scope,
                                                    const std::vector<std::string>& rest);
  // A fixed-size field's .bin or .npy, read on demand tile by tile: its
  // size comes from the cell count, not from decoding. nullptr for other files.
  Result<std::unique_ptr<OpenFile>> FieldFile(const Scope& scope,
                                              const std::vector<std::string>& rest);
  Result<std::vector<std::string>> Names(const Scope& scope, const std::vector<std::string>& rest);
  Result<NodeAttr> Attr(const Scope& scope, const std::vector<std::string>& rest);
  Result<std::shared_ptr<const core::Column>> Column(const Scope& scope, const std::string& name);

  std::shared_ptr<const core::Storage> storage_;
  TreeOptions options_;
  std::shared_ptr<TreeCaches> caches_;
  std::mutex mu_;
  std::shared_ptr<core::Array> array_;
  uint64_t id_ = 0;          // unique per tree: caches are shared by a group's members
  uint64_t generation_ = 0;  // bumps at each reopen: part of cache keys
  std::map<std::string, std::shared_ptr<const std::vector<core::Enumeration>>> enums_;
};

// Splits "a/b/c" into parts (empty path: none).
std::vector<std::string> SplitPath(const std::string& path);
// File name <-> field/key/member name (NAMESPACE.md "Names").
std::string EscapeName(const std::string& name);
std::string UnescapeName(const std::string& file_name);

}  // namespace tiledbfs::fusefs
