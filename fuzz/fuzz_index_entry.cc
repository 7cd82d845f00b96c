// Input: a file of the persistent index (core/index/index_store.h). Byte 0
// is the length of the key it is checked under, the next bytes that key,
// the rest the entry file. Its payload, if it checks, and the input itself
// are then read as what the index keeps of a view (LoadIndexedView), and
// the counts given to a windowed view of a small sparse corpus array
// (ArrayView::RestoreCounts), whose cells are then read through the
// windows. Any error is fine; a crash, hang or huge allocation is a
// finding.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/array/array.h"
#include "core/array/array_view.h"
#include "core/index/index_store.h"
#include "fusefs/model/streamed_file.h"
#include "fuzz/fuzz_common.h"

using namespace tiledbfs;

namespace {

// The latest view of sparse_2d from the corpus, cut into windows of 3 cells.
std::shared_ptr<const core::ArrayView> FreshWindowedView() {
  static const std::shared_ptr<core::Array> array = [] {
    auto storage = core::LocalStorage::Open(fuzz::CorpusArrays() + "/sparse_2d");
    if (!storage.ok()) std::abort();
    auto opened = core::Array::Open(*storage, std::nullopt, fuzz::FuzzLimits());
    if (!opened.ok()) std::abort();
    return *opened;
  }();
  auto view = array->ViewAt(UINT64_MAX);
  if (!view.ok()) std::abort();
  return (*view)->WithIndexWindow(3);
}

void TryView(std::string_view bytes) {
  auto saved = fusefs::LoadIndexedView(bytes);
  if (!saved.ok()) return;
  auto view = FreshWindowedView();
  if (!view->RestoreCounts(saved->counts).ok()) return;
  auto cells = view->CellCount();
  if (!cells.ok()) return;
  for (const auto& d : view->schema().dimensions) (void)view->ReadField(d.name);
  (void)view->NonEmptyDomain();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t key_size = std::min<size_t>(data[0], size - 1);
  const std::string_view key(reinterpret_cast<const char*>(data + 1), key_size);
  const core::Bytes file(data + 1 + key_size, size - 1 - key_size);
  if (auto payload = core::ParseIndexEntry(file, key); payload.ok()) {
    TryView(std::string_view(reinterpret_cast<const char*>(payload->data()), payload->size()));
  }
  TryView(std::string_view(reinterpret_cast<const char*>(file.data()), file.size()));
  return 0;
}
