// A main for GCC builds (no libFuzzer): runs LLVMFuzzerTestOneInput once on
// every file named on the command line, recursing into directories, so ctest
// replays the seeds and the regression inputs. Exit status 0 when every input
// ran (a crash aborts the process, which is the failure signal).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool RunFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", p.c_str());
    return false;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  // A copy of exactly `size` bytes, so reads past the end are caught by ASan.
  std::vector<uint8_t> exact(bytes);
  LLVMFuzzerTestOneInput(exact.empty() ? nullptr : exact.data(), exact.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  size_t runs = 0;
  bool ok = true;
  for (int i = 1; i < argc; ++i) {
    fs::path arg(argv[i]);
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      std::vector<fs::path> files;
      for (auto it = fs::recursive_directory_iterator(arg, ec); !ec && it != fs::end(it);
           it.increment(ec)) {
        if (it->is_regular_file()) files.push_back(it->path());
      }
      std::sort(files.begin(), files.end());
      for (const auto& f : files) {
        ok = RunFile(f) && ok;
        ++runs;
      }
    } else if (fs::exists(arg, ec)) {
      ok = RunFile(arg) && ok;
      ++runs;
    }  // a missing path (e.g. no regressions yet) is not an error
  }
  std::printf("replay: %zu inputs run\n", runs);
  return ok ? 0 : 1;
}
