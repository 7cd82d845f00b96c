#include "fusefs/render/column_files.h"

#include <gtest/gtest.h>

namespace tiledbfs::fusefs {
namespace {

using core::Datatype;
using F = ColumnFile;

TEST(ColumnFilesTest, WhichFilesAFieldShows) {
  EXPECT_EQ(ColumnFiles(Datatype::kInt32, 1, false), (std::vector<F>{F::kBin, F::kNpy, F::kTxt}));
  EXPECT_EQ(ColumnFiles(Datatype::kInt16, 3, true),
            (std::vector<F>{F::kBin, F::kValidity, F::kNpy, F::kTxt}));
  EXPECT_EQ(ColumnFiles(Datatype::kStringUtf8, core::kVarNum, false),
            (std::vector<F>{F::kBin, F::kOffsets, F::kTxt}));
  EXPECT_EQ(ColumnFiles(Datatype::kStringUtf8, core::kVarNum, true),
            (std::vector<F>{F::kBin, F::kOffsets, F::kValidity, F::kTxt}));
  core::Column c;
  c.type = Datatype::kChar;
  c.cell_val_num = 4;
  EXPECT_EQ(ColumnFiles(c), (std::vector<F>{F::kBin, F::kNpy, F::kTxt}));
}

TEST(ColumnFilesTest, ExtensionsAndNames) {
  EXPECT_EQ(ColumnFileExtension(F::kBin), ".bin");
  EXPECT_EQ(ColumnFileExtension(F::kOffsets), ".offsets");
  EXPECT_EQ(ColumnFileExtension(F::kValidity), ".validity");
  EXPECT_EQ(ColumnFileExtension(F::kNpy), ".npy");
  EXPECT_EQ(ColumnFileExtension(F::kTxt), ".txt");
  std::string_view stem;
  EXPECT_EQ(ColumnFileFromName("a%2Fb.offsets", &stem), F::kOffsets);
  EXPECT_EQ(stem, "a%2Fb");
  EXPECT_EQ(ColumnFileFromName("x.bin.npy", &stem), F::kNpy);
  EXPECT_EQ(stem, "x.bin");
  EXPECT_EQ(ColumnFileFromName(".bin", &stem), std::nullopt);
  EXPECT_EQ(ColumnFileFromName("a.csv", &stem), std::nullopt);
  EXPECT_EQ(ColumnFileFromName("%00.txt", nullptr), F::kTxt);
}

}  // namespace
}  // namespace tiledbfs::fusefs
