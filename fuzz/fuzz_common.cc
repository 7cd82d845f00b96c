#include "fuzz/fuzz_common.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>

namespace tiledbfs::fuzz {

namespace fs = std::filesystem;

const std::vector<std::pair<std::string, core::ByteVec>>& CorpusFiles(const std::string& array) {
  static std::mutex mu;
  static std::map<std::string, std::vector<std::pair<std::string, core::ByteVec>>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(array);
  if (it != cache.end()) return it->second;
  std::vector<std::pair<std::string, core::ByteVec>> files;
  const fs::path root = fs::path(CorpusArrays()) / array;
  std::error_code ec;
  for (auto i = fs::recursive_directory_iterator(root, ec); !ec && i != fs::end(i);
       i.increment(ec)) {
    if (!i->is_regular_file()) continue;
    std::ifstream in(i->path(), std::ios::binary);
    core::ByteVec bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    files.emplace_back(fs::relative(i->path(), root).generic_string(), std::move(bytes));
  }
  if (files.empty()) {
    std::fprintf(stderr, "fuzz: corpus array %s missing\n", root.c_str());
    std::abort();
  }
  std::sort(files.begin(), files.end());
  return cache.emplace(array, std::move(files)).first->second;
}

std::shared_ptr<const core::ArraySchema> CorpusSchema(const std::string& array) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const core::ArraySchema>> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(array);
    if (it != cache.end()) return it->second;
  }
  auto storage = std::make_shared<core::MemoryStorage>();
  std::string schema_path;
  for (const auto& [path, bytes] : CorpusFiles(array)) {
    storage->Put(path, bytes);
    if (schema_path.empty() && path.rfind("__schema/__", 0) == 0 &&
        path.find("__enumerations") == std::string::npos) {
      schema_path = path;
    }
  }
  auto schema = core::LoadArraySchema(*storage, schema_path, nullptr, core::DefaultLimits());
  if (!schema.ok()) {
    std::fprintf(stderr, "fuzz: cannot load the schema of corpus array %s\n", array.c_str());
    std::abort();
  }
  auto ptr = std::make_shared<const core::ArraySchema>(std::move(schema).value());
  std::lock_guard<std::mutex> lock(mu);
  return cache.emplace(array, ptr).first->second;
}

}  // namespace tiledbfs::fuzz
