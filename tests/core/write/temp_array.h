// A temporary array for tests of the writer and the reader: a folder under
// the system's temp dir named after the running test, an array made there
// from schema JSON (created at timestamp 1000), and the folder removed when
// the object goes. Failures are reported to gtest where they happen.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "core/array/array.h"
#include "core/array/array_view.h"
#include "core/read/tile_cache.h"
#include "core/storage/storage.h"
#include "core/write/fragment_writer.h"
#include "core/write/schema_writer.h"
#include "core/write/synthetic.h"

namespace tiledbfs::core {

class TempArray {
 public:
  // The folder: <temp>/tiledbfs_<tag>_<pid>_<test name>, emptied.
  explicit TempArray(const std::string& tag) {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = std::filesystem::temp_directory_path() /
            ("tiledbfs_" + tag + "_" + std::to_string(::getpid()) +
             (test != nullptr ? std::string("_") + test->name() : std::string()));
    std::filesystem::remove_all(root_);
  }
  ~TempArray() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  TempArray(const TempArray&) = delete;
  TempArray& operator=(const TempArray&) = delete;

  const std::filesystem::path& root() const { return root_; }

  // Creates the array from `json`; returns its schema with the schema file's
  // name set.
  ArraySchema Create(const std::string& json) {
    std::filesystem::create_directories(root_);
    auto s = SchemaFromJson(json, DefaultLimits());
    EXPECT_TRUE(s.ok()) << s.error().ToString();
    if (!s.ok()) return ArraySchema{};
    auto name = CreateArray(root_.string(), *s, 1000, DefaultLimits());
    EXPECT_TRUE(name.ok()) << name.error().ToString();
    ArraySchema out = *s;
    if (name.ok()) out.name = *name;
    return out;
  }

  // Create, then the synthetic fragments of `spec` written at timestamp `t`.
  ArraySchema CreateSynthetic(const std::string& json, const SyntheticSpec& spec, uint64_t t = 10) {
    ArraySchema s = Create(json);
    auto w = WriteSyntheticFragments(root_.string(), s, t, spec);
    EXPECT_TRUE(w.ok()) << w.error().ToString();
    return s;
  }

  // The view at `t` of the array opened afresh; with `cache`, its tiles go
  // through that cache.
  std::shared_ptr<const ArrayView> View(uint64_t t = UINT64_MAX,
                                        std::shared_ptr<TileCache> cache = nullptr) {
    auto storage = LocalStorage::Open(root_.string());
    EXPECT_TRUE(storage.ok());
    if (!storage.ok()) return nullptr;
    return ViewOver(*storage, t, std::move(cache));
  }

  // The same through `storage` (a test's wrapper over this folder's).
  std::shared_ptr<const ArrayView> ViewOver(std::shared_ptr<const Storage> storage, uint64_t t,
                                            std::shared_ptr<TileCache> cache) {
    auto array = Array::Open(std::move(storage), std::nullopt, DefaultLimits());
    EXPECT_TRUE(array.ok()) << array.error().ToString();
    if (!array.ok()) return nullptr;
    if (cache) (*array)->set_tile_cache(std::move(cache));
    auto view = (*array)->ViewAt(t);
    EXPECT_TRUE(view.ok()) << view.error().ToString();
    return view.ok() ? *view : nullptr;
  }

 private:
  std::filesystem::path root_;
};

}  // namespace tiledbfs::core
