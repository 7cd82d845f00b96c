// Whole-array target over MemoryStorage. Input: byte 0 picks a small corpus
// array, byte 1 one of its files; the rest replaces that file's bytes. Then
// Array::Open, Instants, ViewAt(UINT64_MAX) and ReadField of every field,
// then the same through windows of the sparse index (WithIndexWindow).
// Any error is fine; a crash, hang or huge allocation is a finding.
#include <cstdint>
#include <memory>

#include "core/array/array.h"
#include "core/array/array_view.h"
#include "fuzz/fuzz_common.h"

using namespace tiledbfs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  static const char* const kArrays[] = {"dense_1d",
                                        "sparse_2d",
                                        "sparse_strdim",
                                        "deletes",
                                        "metadata",
                                        "consolidated_vacuumed",
                                        "commits_consolidated",
                                        "enumerations"};
  const auto& files = fuzz::CorpusFiles(kArrays[data[0] % std::size(kArrays)]);
  const size_t victim = data[1] % files.size();
  auto storage = std::make_shared<core::MemoryStorage>();
  for (size_t i = 0; i < files.size(); ++i) {
    if (i == victim) {
      storage->Put(files[i].first, core::ByteVec(data + 2, data + size));
    } else {
      storage->Put(files[i].first, files[i].second);
    }
  }
  auto array = core::Array::Open(storage, std::nullopt, fuzz::FuzzLimits());
  if (!array.ok()) return 0;
  (void)(*array)->Instants();
  auto view = (*array)->ViewAt(UINT64_MAX);
  if (!view.ok()) return 0;
  const core::ArraySchema& schema = (*view)->schema();
  (void)(*view)->CellCount();
  (void)(*view)->NonEmptyDomain();
  for (const auto& d : schema.dimensions) (void)(*view)->ReadField(d.name);
  for (const auto& a : schema.attributes) (void)(*view)->ReadField(a.name);
  // The same view, its sparse index cut into windows of 2 cells.
  auto windowed = (*view)->WithIndexWindow(2);
  (void)windowed->CellCount();
  (void)windowed->NonEmptyDomain();
  for (const auto& d : schema.dimensions) (void)windowed->ReadField(d.name);
  for (const auto& a : schema.attributes) (void)windowed->ReadField(a.name);
  return 0;
}
