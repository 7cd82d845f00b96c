// Helpers shared by the render tests: reading corpus views into columns and
// running python3 with numpy (tests that need it skip when it is missing).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/read/column.h"
#include "core/schema/array_schema.h"

namespace tiledbfs::fusefs::testing {

inline std::string CorpusExpected() { return std::string(TILEDBFS_TEST_DATA) + "/corpus/expected"; }
// The expected/ folders of both fixture corpora: the public one and the
// oracle corpus (tests/data/oracle_corpus/README.md).
inline std::vector<std::string> AllCorpusExpected() {
  return {CorpusExpected(), std::string(TILEDBFS_TEST_DATA) + "/oracle_corpus/expected"};
}
// Every view.json of both corpora (one per view, groups' members included),
// sorted.
inline std::vector<std::filesystem::path> ExpectedViews() {
  std::vector<std::filesystem::path> out;
  for (const std::string& dir : AllCorpusExpected()) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
      if (e.path().filename() == "view.json") out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}
inline std::string RenderTestData() {
  // tests/data/../fusefs/render/testdata: this folder's fixtures.
  return std::string(TILEDBFS_TEST_DATA) + "/../fusefs/render/testdata";
}

inline std::optional<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline bool WriteWholeFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

// Runs a shell command; returns its exit status and stdout.
inline int RunCommand(const std::string& cmd, std::string* out) {
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  if (out) out->clear();
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) {
    if (out) out->append(buf, n);
  }
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A python3 that can import numpy ("python3" on PATH, else the system one),
// or "" if there is none.
inline const std::string& PythonWithNumpy() {
  static const std::string found = [] {
    for (const char* py : {"python3", "/usr/bin/python3"}) {
      std::string cmd = std::string(py) + " -c 'import numpy' >/dev/null 2>&1";
      if (RunCommand(cmd, nullptr) == 0) return std::string(py);
    }
    return std::string();
  }();
  return found;
}

#define SKIP_WITHOUT_NUMPY()                                                   \
  if (::tiledbfs::fusefs::testing::PythonWithNumpy().empty()) {                \
    GTEST_SKIP() << "python3 with numpy not found: numpy cross-check skipped"; \
  }

inline std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/tiledbfs_render_" + std::to_string(getpid()) + "_" +
         name;
}

// A corpus view (expected/<array>/views/<T>/) as columns, in view.json's
// field order (dimensions then attributes), and the enumeration of each
// field that has one.
struct CorpusView {
  std::vector<core::Column> columns;
  std::vector<std::optional<core::Enumeration>> enumerations;
};

inline CorpusView LoadCorpusView(const std::string& dir) {
  CorpusView v;
  auto meta_text = ReadWholeFile(dir + "/view.json");
  if (!meta_text) return v;
  auto meta = nlohmann::json::parse(*meta_text);
  uint64_t n = meta["cell_count"];
  std::map<std::string, core::Enumeration> enums;
  for (const auto& e : meta["schema"].value("enumerations", nlohmann::json::array())) {
    core::Enumeration en;
    en.name = e["name"];
    en.type = *core::DatatypeFromName(e["type"].get<std::string>());
    en.cell_val_num = e["cell_val_num"];
    for (const auto& value : e["values"]) {
      if (value.is_string()) {
        std::string s = value.get<std::string>();
        en.offsets.push_back(en.data.size());
        en.data.insert(en.data.end(), s.begin(), s.end());
        continue;
      }
      // A number of a fixed-size enumeration, stored in its type.
      const size_t at = en.data.size();
      en.data.resize(at + core::DatatypeSize(en.type), 0);
      uint8_t* out = en.data.data() + at;
      if (en.type == core::Datatype::kFloat64) {
        const double d = value.get<double>();
        std::memcpy(out, &d, 8);
      } else if (en.type == core::Datatype::kFloat32) {
        const float f = value.get<float>();
        std::memcpy(out, &f, 4);
      } else {
        const int64_t i = value.is_number_unsigned() ? static_cast<int64_t>(value.get<uint64_t>())
                                                     : value.get<int64_t>();
        std::memcpy(out, &i, core::DatatypeSize(en.type));  // little-endian: the low bytes
      }
    }
    enums[en.name] = en;
  }
  std::map<std::string, std::string> attr_enum;
  for (const auto& a : meta["schema"]["attrs"]) {
    if (a.contains("enumeration")) attr_enum[a["name"]] = a["enumeration"];
  }
  for (const auto& f : meta["fields"]) {
    core::Column c;
    c.name = f["name"];
    c.type = *core::DatatypeFromName(f["type"].get<std::string>());
    c.cell_val_num = f["cell_val_num"];
    c.nullable = f["nullable"];
    c.cell_count = n;
    std::string data = *ReadWholeFile(dir + "/" + c.name + ".data");
    c.data.assign(data.begin(), data.end());
    if (c.var()) {
      std::string offs = *ReadWholeFile(dir + "/" + c.name + ".offsets");
      c.offsets.resize(offs.size() / 8);
      std::memcpy(c.offsets.data(), offs.data(), c.offsets.size() * 8);
    }
    if (c.nullable) {
      std::string val = *ReadWholeFile(dir + "/" + c.name + ".validity");
      c.validity.assign(val.begin(), val.end());
    }
    v.columns.push_back(std::move(c));
    auto it = attr_enum.find(v.columns.back().name);
    if (it != attr_enum.end()) {
      v.enumerations.push_back(enums.at(it->second));
    } else {
      v.enumerations.push_back(std::nullopt);
    }
  }
  return v;
}

}  // namespace tiledbfs::fusefs::testing
