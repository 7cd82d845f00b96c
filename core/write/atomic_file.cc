#include "core/write/atomic_file.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

namespace tiledbfs::core {

namespace fs = std::filesystem;

Status WriteArrayFileAtomically(const std::string& array_dir, const std::string& rel_path,
                                Bytes data) {
  const fs::path root(array_dir);
  const fs::path target = root / rel_path;
  std::error_code ec;
  if (fs::exists(target, ec)) {
    return Error::InvalidArgument(fmt::format("{}: {} exists already", array_dir, rel_path));
  }
  fs::create_directories(target.parent_path(), ec);
  if (ec) {
    return Error::Io(
        fmt::format("cannot create {}: {}", target.parent_path().string(), ec.message()));
  }
  const fs::path tmp = root / (".tiledbfs-" + target.filename().string() + ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Error::Io(fmt::format("cannot create {}", tmp.string()));
    out.write(reinterpret_cast<const char*>(data.data()),
              static_cast<std::streamsize>(data.size()));
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      return Error::Io(fmt::format("cannot write {}", tmp.string()));
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return Error::Io(
        fmt::format("cannot rename {} to {}: {}", tmp.string(), target.string(), ec.message()));
  }
  return Ok();
}

}  // namespace tiledbfs::core
