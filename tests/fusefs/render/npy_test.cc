#include "fusefs/render/npy.h"

#include <gtest/gtest.h>

#include <cstring>

#include "tests/fusefs/render/render_test_util.h"

namespace tiledbfs::fusefs {
namespace {

using core::Datatype;

NpyFile Make(Datatype t, uint32_t k, std::vector<uint64_t> shape) {
  auto f = MakeNpyFile(t, k, shape);
  EXPECT_TRUE(f.ok()) << f.error().message();
  return f.ok() ? *f : NpyFile{};
}

TEST(NpyTest, DtypeForEveryType) {
  struct Case {
    Datatype t;
    uint32_t k;
    const char* descr;
    uint64_t item;
    uint32_t axis;
  };
  const Case cases[] = {
      {Datatype::kInt8, 1, "|i1", 1, 0},
      {Datatype::kUInt8, 1, "|u1", 1, 0},
      {Datatype::kInt16, 3, "<i2", 2, 3},
      {Datatype::kUInt16, 1, "<u2", 2, 0},
      {Datatype::kInt32, 1, "<i4", 4, 0},
      {Datatype::kUInt32, 1, "<u4", 4, 0},
      {Datatype::kInt64, 1, "<i8", 8, 0},
      {Datatype::kUInt64, 2, "<u8", 8, 2},
      {Datatype::kFloat32, 1, "<f4", 4, 0},
      {Datatype::kFloat64, 1, "<f8", 8, 0},
      {Datatype::kBool, 1, "|b1", 1, 0},
      {Datatype::kChar, 1, "|S1", 1, 0},
      {Datatype::kChar, 4, "|S4", 4, 0},
      {Datatype::kStringAscii, 7, "|S7", 7, 0},
      {Datatype::kStringUtf8, 2, "|S2", 2, 0},
      {Datatype::kStringUtf32, 3, "<U3", 12, 0},
      {Datatype::kStringUcs4, 1, "<U1", 4, 0},
      {Datatype::kStringUtf16, 5, "<u2", 2, 5},
      {Datatype::kStringUcs2, 1, "<u2", 2, 0},
      {Datatype::kBlob, 16, "|u1", 1, 16},
      {Datatype::kGeomWkb, 1, "|u1", 1, 0},
      {Datatype::kAny, 1, "|u1", 1, 0},
      {Datatype::kDatetimeYear, 1, "<M8[Y]", 8, 0},
      {Datatype::kDatetimeWeek, 1, "<M8[W]", 8, 0},
      {Datatype::kDatetimeMs, 2, "<M8[ms]", 8, 2},
      {Datatype::kDatetimeAs, 1, "<M8[as]", 8, 0},
      {Datatype::kTimeHr, 1, "<m8[h]", 8, 0},
      {Datatype::kTimeMin, 1, "<m8[m]", 8, 0},
      {Datatype::kTimeNs, 1, "<m8[ns]", 8, 0},
      {Datatype::kTimeAs, 1, "<m8[as]", 8, 0},
  };
  for (const auto& c : cases) {
    auto d = NpyDtypeFor(c.t, c.k);
    ASSERT_TRUE(d.ok()) << core::DatatypeName(c.t);
    EXPECT_EQ(d->descr, c.descr) << core::DatatypeName(c.t);
    EXPECT_EQ(d->item_size, c.item) << core::DatatypeName(c.t);
    EXPECT_EQ(d->last_axis, c.axis) << core::DatatypeName(c.t);
  }
  // Every type has a dtype for fixed cells.
  for (int t = 0; t <= static_cast<int>(Datatype::kGeomWkt); ++t) {
    EXPECT_TRUE(NpyDtypeFor(static_cast<Datatype>(t), 1).ok()) << t;
  }
}

TEST(NpyTest, HeaderIsWhatNpSaveWrites) {
  // np.save(f, np.zeros(20, '<i4')) with numpy 1.24.2: the first 128 bytes.
  std::string want = std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
                     "{'descr': '<i4', 'fortran_order': False, 'shape': (20,), }" +
                     std::string(21 - 2, ' ');
  want.append(128 - 1 - want.size(), ' ');
  want += '\n';
  NpyFile f = Make(Datatype::kInt32, 1, {20});
  EXPECT_EQ(f.header, want);
  EXPECT_EQ(f.header.size() % 64, 0u);
  EXPECT_EQ(f.data_size, 80u);
  EXPECT_EQ(f.total_size(), 208u);

  NpyFile g = Make(Datatype::kInt16, 3, {7, 8});
  EXPECT_NE(g.header.find("'shape': (7, 8, 3), }"), std::string::npos);
  EXPECT_EQ(g.data_size, 7u * 8 * 3 * 2);
  NpyFile s = Make(Datatype::kChar, 4, {0});
  EXPECT_NE(s.header.find("{'descr': '|S4', 'fortran_order': False, 'shape': (0,), }"),
            std::string::npos);
  EXPECT_EQ(s.data_size, 0u);
}

TEST(NpyTest, Errors) {
  auto var = MakeNpyFile(Datatype::kStringAscii, core::kVarNum, std::vector<uint64_t>{3});
  ASSERT_FALSE(var.ok());
  EXPECT_EQ(var.error().code(), core::ErrorCode::kInvalidArgument);
  EXPECT_NE(var.error().message().find("var-sized STRING_ASCII"), std::string::npos);
  EXPECT_EQ(NpyDtypeFor(Datatype::kInt32, 0).error().code(), core::ErrorCode::kInvalidArgument);
  EXPECT_EQ(MakeNpyFile(Datatype::kInt32, 1, {}).error().code(), core::ErrorCode::kInvalidArgument);
  auto big = MakeNpyFile(Datatype::kInt64, 1, std::vector<uint64_t>{uint64_t{1} << 62});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code(), core::ErrorCode::kOutOfMemory);
  auto many =
      MakeNpyFile(Datatype::kInt8, 1, std::vector<uint64_t>{uint64_t{1} << 32, uint64_t{1} << 32});
  EXPECT_EQ(many.error().code(), core::ErrorCode::kOutOfMemory);
  std::vector<uint64_t> dims(30000, 1);
  auto wide = MakeNpyFile(Datatype::kInt8, 1, dims);
  ASSERT_FALSE(wide.ok());
  EXPECT_EQ(wide.error().code(), core::ErrorCode::kUnsupported);
  EXPECT_NE(wide.error().message().find("does not fit format 1.0"), std::string::npos);
}

struct LiveCase {
  Datatype t;
  uint32_t k;
  std::vector<uint64_t> shape;
};

// Writes header + deterministic data for each case, then has numpy load it,
// check dtype, shape and bytes, and np.save the loaded array to compare the
// header byte for byte.
TEST(NpyTest, NumpyLoadsEveryDtypeAndShape) {
  SKIP_WITHOUT_NUMPY();
  std::vector<LiveCase> cases;
  for (int t = 0; t <= static_cast<int>(Datatype::kGeomWkt); ++t) {
    auto dt = static_cast<Datatype>(t);
    cases.push_back({dt, 1, {5}});
    cases.push_back({dt, 3, {2, 3}});
  }
  cases.push_back({Datatype::kInt32, 1, {0}});
  cases.push_back({Datatype::kFloat64, 2, {1, 2, 3}});
  cases.push_back({Datatype::kUInt8, 1, {123456789}});  // a wide first axis: fewer spare spaces
  cases.push_back({Datatype::kChar, 10, {4}});
  std::string list;
  std::vector<std::string> paths;
  for (size_t n = 0; n < cases.size(); ++n) {
    const auto& c = cases[n];
    auto f = MakeNpyFile(c.t, c.k, c.shape);
    ASSERT_TRUE(f.ok()) << f.error().message();
    auto dtype = *NpyDtypeFor(c.t, c.k);
    std::string bytes = f->header;
    uint64_t data_size = std::min<uint64_t>(f->data_size, 4096);  // the big one: header only
    for (uint64_t i = 0; i < data_size; ++i) {
      uint8_t b = static_cast<uint8_t>(i * 37 + n);
      if (c.t == Datatype::kBool) b &= 1;
      if (core::IsString(c.t) && c.t != Datatype::kChar && c.t != Datatype::kStringAscii &&
          c.t != Datatype::kStringUtf8) {
        b &= 0x3F;  // keep UTF-32 code points valid for numpy's 'U'
      }
      bytes += static_cast<char>(b);
    }
    std::string path = testing::TempPath("case" + std::to_string(n) + ".npy");
    ASSERT_TRUE(testing::WriteWholeFile(path, bytes));
    paths.push_back(path);
    std::string shape = "(";
    for (uint64_t e : c.shape) shape += std::to_string(e) + ",";
    if (dtype.last_axis) shape += std::to_string(dtype.last_axis) + ",";
    shape += ")";
    list += path + " " + dtype.descr + " " + shape + " " + std::to_string(f->header.size()) + " " +
            (data_size == f->data_size ? "1" : "0") + "\n";
  }
  std::string script =
      "import sys, io, numpy as np\n"
      "bad = 0\n"
      "for line in open(sys.argv[1]):\n"
      "    path, descr, shape, hsize, full = line.split()\n"
      "    raw = open(path, 'rb').read()\n"
      "    if full == '1':\n"
      "        a = np.load(path, allow_pickle=False)\n"
      "        ok = a.dtype.str == descr and a.shape == eval(shape) and\\\n"
      "             a.tobytes() == raw[int(hsize):]\n"
      "        buf = io.BytesIO(); np.save(buf, a)\n"
      "        ok = ok and buf.getvalue()[:int(hsize)] == raw[:int(hsize)]\n"
      "    else:\n"
      "        import numpy.lib.format as fm\n"
      "        f = open(path, 'rb'); v = fm.read_magic(f)\n"
      "        shp, fo, dt = fm.read_array_header_1_0(f)\n"
      "        buf = io.BytesIO(); fm.write_array_header_1_0(buf,\n"
      "            {'descr': fm.dtype_to_descr(dt), 'fortran_order': fo, 'shape': shp})\n"
      "        ok = v == (1, 0) and dt.str == descr and shp == eval(shape) and\\\n"
      "             buf.getvalue() == raw[:int(hsize)]\n"
      "    if not ok:\n"
      "        bad += 1; print('mismatch', line.strip(), raw[:int(hsize)])\n"
      "print('bad', bad)\n"
      "sys.exit(1 if bad else 0)\n";
  std::string py = testing::TempPath("npy.py");
  std::string lst = testing::TempPath("npy_cases.txt");
  ASSERT_TRUE(testing::WriteWholeFile(py, script));
  ASSERT_TRUE(testing::WriteWholeFile(lst, list));
  std::string out;
  int rc = testing::RunCommand(testing::PythonWithNumpy() + " " + py + " " + lst + " 2>&1", &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("bad 0"), std::string::npos) << out;
  for (const auto& p : paths) std::remove(p.c_str());
  std::remove(py.c_str());
  std::remove(lst.c_str());
}

// The corpus types view: every fixed-size field as a .npy loads in numpy
// with the values TileDB returned.
TEST(NpyTest, CorpusTypesLoadInNumpy) {
  SKIP_WITHOUT_NUMPY();
  std::string dir = testing::CorpusExpected() + "/types/views/latest";
  auto view = testing::LoadCorpusView(dir);
  std::string list;
  std::vector<std::string> paths;
  int n = 0;
  for (const auto& c : view.columns) {
    auto f = MakeNpyFile(c.type, c.cell_val_num, std::vector<uint64_t>{c.cell_count});
    if (c.var()) {
      EXPECT_FALSE(f.ok()) << c.name;
      continue;
    }
    ASSERT_TRUE(f.ok()) << c.name;
    ASSERT_EQ(f->data_size, c.data.size()) << c.name;
    std::string path = testing::TempPath(c.name + ".npy");
    ASSERT_TRUE(
        testing::WriteWholeFile(path, f->header + std::string(c.data.begin(), c.data.end())));
    paths.push_back(path);
    list += path + " " + dir + "/" + c.name + ".data " + c.name + "\n";
    ++n;
  }
  EXPECT_EQ(n, 18);
  std::string script =
      "import sys, numpy as np\n"
      "for line in open(sys.argv[1]):\n"
      "    npy, data, name = line.split()\n"
      "    a = np.load(npy)\n"
      "    assert a.tobytes() == open(data, 'rb').read(), npy\n"
      "    assert a.shape[0] == 20, npy\n"
      "    print(name + '.npy', a.dtype.str, a.shape, a.flat[0])\n";
  std::string py = testing::TempPath("corpus_npy.py");
  std::string lst = testing::TempPath("corpus_npy.txt");
  ASSERT_TRUE(testing::WriteWholeFile(py, script));
  ASSERT_TRUE(testing::WriteWholeFile(lst, list));
  std::string out;
  int rc = testing::RunCommand(testing::PythonWithNumpy() + " " + py + " " + lst + " 2>&1", &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ch4.npy |S4 (20,) b'w0'"), std::string::npos) << out;
  EXPECT_NE(out.find("i16x3.npy <i2 (20, 3) 0"), std::string::npos) << out;
  EXPECT_NE(out.find("dt_day.npy <M8[D] (20,) NaT"), std::string::npos) << out;
  for (const auto& p : paths) std::remove(p.c_str());
  std::remove(py.c_str());
  std::remove(lst.c_str());
}

}  // namespace
}  // namespace tiledbfs::fusefs
