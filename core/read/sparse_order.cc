#include "core/read/sparse_order.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <memory>
#include <thread>

#include "core/read/coords.h"
#include "core/util/parallel.h"

namespace tiledbfs::core {
namespace {

// A coordinate as a uint64 in the type's order (signed values offset by 2^63).
template <class T>
uint64_t Ordered(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  if constexpr (std::is_signed_v<T>) {
    return static_cast<uint64_t>(static_cast<int64_t>(v)) ^ (uint64_t{1} << 63);
  } else {
    return static_cast<uint64_t>(v);
  }
}

using OrderedFn = uint64_t (*)(const uint8_t*);

// The order-preserving load for an integer-like type (CompareValues'
// order), or null for other types.
OrderedFn OrderedFor(Datatype t) {
  switch (t) {
    case Datatype::kInt8:
      return &Ordered<int8_t>;
    case Datatype::kUInt8:
    case Datatype::kBool:
      return &Ordered<uint8_t>;
    case Datatype::kInt16:
      return &Ordered<int16_t>;
    case Datatype::kUInt16:
      return &Ordered<uint16_t>;
    case Datatype::kInt32:
      return &Ordered<int32_t>;
    case Datatype::kUInt32:
      return &Ordered<uint32_t>;
    case Datatype::kUInt64:
      return &Ordered<uint64_t>;
    default:
      break;
  }
  if ((IsInteger(t) || IsDatetime(t) || IsTime(t)) && DatatypeSize(t) == 8) {
    return &Ordered<int64_t>;
  }
  return nullptr;
}

class Cells {
 public:
  explicit Cells(const OrderInput& in)
      : in_(in), mask_((uint64_t{1} << in.pos_bits) - 1), shift_(in.pos_bits) {}
  const OrderTile& Tile(uint64_t ord) const { return in_.tiles[ord >> shift_]; }
  uint64_t Pos(uint64_t ord) const { return ord & mask_; }
  uint64_t Stamp(uint64_t ord) const {
    const OrderTile& t = Tile(ord);
    if (t.stamps == nullptr) return t.stamp;
    uint64_t s;
    std::memcpy(&s, t.stamps->fixed.data() + Pos(ord) * 8, 8);
    return s;
  }
  // True if a (equal coordinates with b) comes first: the newer.
  bool Newer(uint64_t a, uint64_t b) const {
    uint64_t sa = Stamp(a), sb = Stamp(b);
    if (sa != sb) return sa > sb;
    const OrderTile &ta = Tile(a), &tb = Tile(b);
    if (ta.fragment != tb.fragment) return ta.fragment > tb.fragment;
    if (Pos(a) != Pos(b)) return Pos(a) > Pos(b);
    return (a >> shift_) > (b >> shift_);
  }
  int CompareCoords(uint64_t a, uint64_t b) const {
    const OrderTile &ta = Tile(a), &tb = Tile(b);
    for (size_t d = 0; d < in_.types.size(); ++d) {
      int c = CompareValues(in_.types[d], ta.dims[d]->cell(Pos(a)), tb.dims[d]->cell(Pos(b)));
      if (c != 0) return c;
    }
    return 0;
  }
  // True if a and b hold the same coordinate bytes (so equal coordinates
  // too). TileDB drops a cell as a duplicate of the one kept before it only
  // then: -0.0 and 0.0 sort as equal yet are two cells.
  bool SameBytes(uint64_t a, uint64_t b) const {
    const OrderTile &ta = Tile(a), &tb = Tile(b);
    for (size_t d = 0; d < in_.types.size(); ++d) {
      if (!std::ranges::equal(ta.dims[d]->cell(Pos(a)), tb.dims[d]->cell(Pos(b)))) return false;
    }
    return true;
  }

 private:
  const OrderInput& in_;
  uint64_t mask_;
  int shift_;
};

// The packed path; false (cells untouched) when the coordinates do not pack.
bool SortPacked(const OrderInput& in, std::vector<uint64_t>& cells) {
  const size_t dims = in.types.size();
  std::vector<OrderedFn> fn(dims);
  for (size_t d = 0; d < dims; ++d) {
    fn[d] = OrderedFor(in.types[d]);
    if (fn[d] == nullptr) return false;
  }
  for (const OrderTile& t : in.tiles) {
    if (t.dims.size() != dims) return false;
    for (size_t d = 0; d < dims; ++d) {
      if (!t.dims[d]->offsets.empty() || t.dims[d]->cell_size != DatatypeSize(in.types[d])) {
        return false;
      }
    }
  }
  if (cells.empty()) return true;
  const int shift = in.pos_bits;
  const uint64_t mask = (uint64_t{1} << shift) - 1;
  // Ranges of each dimension over the cells.
  std::vector<uint64_t> lo(dims, UINT64_MAX), hi(dims, 0);
  for (size_t d = 0; d < dims; ++d) {
    const OrderedFn f = fn[d];
    const uint64_t size = DatatypeSize(in.types[d]);
    uint64_t mn = UINT64_MAX, mx = 0;
    for (size_t i = 0; i < cells.size();) {
      const uint64_t tile = cells[i] >> shift;
      const uint8_t* base = in.tiles[tile].dims[d]->fixed.data();
      for (; i < cells.size() && (cells[i] >> shift) == tile; ++i) {
        uint64_t v = f(base + (cells[i] & mask) * size);
        mn = std::min(mn, v);
        mx = std::max(mx, v);
      }
    }
    lo[d] = mn, hi[d] = mx;
  }
  auto plan = KeyPacking::Plan(lo, hi, BitsFor(cells.back()));
  if (!plan) return false;
  const KeyPacking& k = *plan;
  for (size_t i = 0; i < cells.size();) {
    const uint64_t tile = cells[i] >> shift;
    const OrderTile& t = in.tiles[tile];
    for (; i < cells.size() && (cells[i] >> shift) == tile; ++i) {
      const uint64_t pos = cells[i] & mask;
      uint64_t key = 0;
      for (size_t d = 0; d < dims; ++d) {
        const uint64_t size = DatatypeSize(in.types[d]);
        const uint64_t v = fn[d](t.dims[d]->fixed.data() + pos * size) - k.lo[d];
        if (k.shift[d] < 64) key |= v << k.shift[d];
      }
      if (k.key_bits > 0) cells[i] |= key << k.ord_bits;
    }
  }
  SortPackedCells(in, k, cells);
  for (uint64_t& c : cells) c = k.OrdinalOf(c);
  return true;
}

}  // namespace

int BitsFor(uint64_t max) { return max == 0 ? 0 : 64 - std::countl_zero(max); }

bool Packable(Datatype t) { return OrderedFor(t) != nullptr; }

uint64_t OrderedValue(Datatype t, const uint8_t* value) { return OrderedFor(t)(value); }

OrderedLoad OrderedLoadFor(Datatype t) { return OrderedFor(t); }

void FromOrdered(Datatype t, uint64_t v, uint8_t* out) {
  bool is_signed = t == Datatype::kInt8 || t == Datatype::kInt16 || t == Datatype::kInt32 ||
                   (OrderedFor(t) == &Ordered<int64_t>);
  if (is_signed) v ^= uint64_t{1} << 63;
  // Little-endian two's complement: the low bytes are the narrower value.
  std::memcpy(out, &v, std::min<uint64_t>(DatatypeSize(t), 8));
}

uint64_t WindowKey::operator()(Bytes value) const {
  if (Packable(type))
    return value.size() == DatatypeSize(type) ? OrderedValue(type, value.data()) : 0;
  auto ordered_bits = [](uint64_t bits, int width) {
    const uint64_t sign = uint64_t{1} << (width - 1);
    const uint64_t all = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
    return (bits & sign) ? ~bits & all : bits | sign;
  };
  if (type == Datatype::kFloat64 && value.size() == 8) {
    double v;
    std::memcpy(&v, value.data(), 8);
    if (v == 0) v = 0;  // -0.0
    return ordered_bits(std::bit_cast<uint64_t>(v), 64);
  }
  if (type == Datatype::kFloat32 && value.size() == 4) {
    float v;
    std::memcpy(&v, value.data(), 4);
    if (v == 0) v = 0;
    return ordered_bits(std::bit_cast<uint32_t>(v), 32);
  }
  uint64_t key = 0;
  for (size_t i = 0; i < 8; ++i) {
    key = key << 8 | (skip + i < value.size() ? value[skip + i] : 0);
  }
  return key;
}

std::optional<KeyPacking> KeyPacking::Plan(std::vector<uint64_t> lo, std::vector<uint64_t> hi,
                                           int ord_bits) {
  KeyPacking k;
  const size_t dims = lo.size();
  k.shift.resize(dims);
  k.mask.resize(dims);
  int total = 0;
  for (size_t d = dims; d-- > 0;) {
    if (hi[d] < lo[d]) return std::nullopt;
    const int bits = BitsFor(hi[d] - lo[d]);
    k.shift[d] = total;
    k.mask[d] = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    total += bits;
    if (total > 64) return std::nullopt;
  }
  if (ord_bits >= 64 || total + ord_bits > 64) return std::nullopt;
  k.lo = std::move(lo);
  k.hi = std::move(hi);
  k.ord_bits = ord_bits;
  k.key_bits = total;
  return k;
}

void RadixSortKeys(std::vector<uint64_t>& values, int lo, int hi) {
  const int width = hi - lo;
  const size_t n = values.size();
  std::vector<uint64_t> scratch;
  if (width <= 11 || n < (size_t{1} << 16)) return RadixSortBits(values, lo, hi, scratch);
  // In place by the top digit (no copy of the whole array), then each
  // bucket on the rest.
  const int top = 11;
  const int at = hi - top;
  const size_t buckets = size_t{1} << top;
  auto digit = [&](uint64_t v) { return static_cast<size_t>((v >> at) & (buckets - 1)); };
  std::vector<size_t> next(buckets + 1, 0), end(buckets, 0);
  for (uint64_t v : values) ++next[digit(v) + 1];
  for (size_t b = 0; b < buckets; ++b) next[b + 1] += next[b];
  for (size_t b = 0; b < buckets; ++b) end[b] = next[b + 1];
  std::vector<size_t> first(next.begin(), next.end());
  uint64_t* a = values.data();
  for (size_t b = 0; b < buckets; ++b) {
    while (next[b] < end[b]) {
      uint64_t v = a[next[b]];
      size_t db = digit(v);
      while (db != b) {
        std::swap(v, a[next[db]++]);
        db = digit(v);
      }
      a[next[b]++] = v;
    }
  }
  // The buckets are disjoint: sorted on every core, each worker taking the
  // next bucket with buffers of its own.
  std::atomic<size_t> next_bucket{0};
  ParallelFor(UsableCores(), [&](size_t) {
    std::vector<uint64_t> bucket, bucket_scratch;
    for (size_t b = next_bucket++; b < buckets; b = next_bucket++) {
      const size_t from = first[b], to = first[b + 1];
      if (to - from < 2) continue;
      bucket.assign(a + from, a + to);
      RadixSortBits(bucket, lo, at, bucket_scratch);
      std::copy(bucket.begin(), bucket.end(), a + from);
    }
  });
}

namespace {

// MergeSortedRuns' limits. On average a segment (values copied from one
// run before another run's head comes first) must hold at least
// kMergeMinSegment values, else the heap and galloping cost more per value
// than radix sorting. The merge is in place but for at most 2 * runs + 2
// blocks of kMergeBlock values (below), at most 64 MiB with kMergeMaxRuns,
// and the list of segments, 8 bytes each (a quarter of the values' bytes
// at the most).
constexpr size_t kMergeMinSegment = 32;
constexpr int kMergeRunBits = 12;
constexpr size_t kMergeMaxRuns = size_t{1} << kMergeRunBits;
constexpr size_t kMergeBlock = 1024;

struct RunHead {
  uint64_t head;  // *p
  const uint64_t* p;
  const uint64_t* end;
  size_t run;
};

// The first value of the ascending [p, end) above bound, given *p < bound:
// probes 1, 2, 4, ... ahead, then binary search within the last step.
const uint64_t* GallopPast(const uint64_t* p, const uint64_t* end, uint64_t bound) {
  const size_t n = static_cast<size_t>(end - p);
  size_t lo = 0, step = 1;  // p[lo] < bound
  size_t hi = n;
  while (lo + step < n) {
    if (p[lo + step] > bound) {
      hi = lo + step;
      break;
    }
    lo += step;
    step *= 2;
  }
  return std::upper_bound(p + lo + 1, p + hi, bound);
}

// Restores the min-heap below heap[i] (by head).
void SiftDown(std::vector<RunHead>& heap, size_t i) {
  const size_t m = heap.size();
  const RunHead x = heap[i];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= m) break;
    if (c + 1 < m && heap[c + 1].head < heap[c].head) ++c;
    if (heap[c].head > x.head) break;
    heap[i] = heap[c];
    i = c;
  }
  heap[i] = x;
}

// Calls emit(run, p, e) for each segment of the merged order, in order; false
// as soon as there would be more than max_segments. `heap` is a min-heap.
template <class Emit>
bool MergeRuns(std::vector<RunHead> heap, size_t max_segments, Emit&& emit) {
  size_t segments = 0;
  while (heap.size() > 1) {
    RunHead& top = heap[0];
    uint64_t bound = heap[1].head;
    if (heap.size() > 2) bound = std::min(bound, heap[2].head);
    const uint64_t* e = GallopPast(top.p, top.end, bound);
    if (++segments > max_segments) return false;
    emit(top.run, top.p, e);
    if (e == top.end) {
      top = heap.back();
      heap.pop_back();
    } else {
      top.p = e;
      top.head = *e;
    }
    SiftDown(heap, 0);
  }
  if (heap.empty()) return true;
  if (++segments > max_segments) return false;
  emit(heap[0].run, heap[0].p, heap[0].end);
  return true;
}

// The merged order written back over the values it is read from, a block
// (kMergeBlock values) at a time: each output block goes to an array block
// whose values have all been read, or, while there is none, to a block of
// its own (at most one per run start and one per run head, as only blocks
// holding one of those can be partly read); then the blocks are put in
// place. A fresh buffer of n values costs more than the merge saves where
// first touching memory is slow (page faults on a VM), which made a merge
// into one slower than the radix sort.
class BlockMerge {
 public:
  BlockMerge(uint64_t* a, size_t n)
      : a_(a), n_(n), full_(n / kMergeBlock), remaining_(full_, kMergeBlock) {}

  void Emit(const uint64_t* p, const uint64_t* e) {
    while (p < e) {
      if (fill_ == kMergeBlock) Open();
      const size_t k = std::min(static_cast<size_t>(e - p), kMergeBlock - fill_);
      std::memcpy(dest_ + fill_, p, k * sizeof(uint64_t));
      fill_ += k;
      Consumed(static_cast<size_t>(p - a_), k);
      p += k;
    }
  }

  void Finish() {
    if (loc_.empty()) return;
    // The last block, if short, goes to the array's short last block.
    if (n_ % kMergeBlock != 0) {
      std::memcpy(a_ + full_ * kMergeBlock, Where(loc_.back()), fill_ * sizeof(uint64_t));
      if (loc_.back() < full_) occupant_[loc_.back()] = kNone;
      loc_.pop_back();
    }
    // Output block o is at loc_[o], to go to array block o. Chains end at
    // array blocks left free: fill each free one from where its block is,
    // which frees that place in turn, until it is a spare block.
    for (size_t j = 0; j < full_; ++j) {
      if (occupant_[j] == kNone) Chain(j);
    }
    // What is left are cycles among array blocks: one block of each aside.
    std::unique_ptr<uint64_t[]> temp;
    for (size_t t = 0; t < full_; ++t) {
      if (loc_[t] == t) continue;
      if (!temp) temp = std::make_unique_for_overwrite<uint64_t[]>(kMergeBlock);
      std::memcpy(temp.get(), Block(t), kMergeBlock * sizeof(uint64_t));
      const size_t o = occupant_[t];
      spare_.push_back(std::move(temp));
      loc_[o] = full_ + spare_.size() - 1;
      occupant_[t] = kNone;
      Chain(t);
      temp = std::move(spare_.back());
      spare_.pop_back();
    }
  }

 private:
  static constexpr size_t kNone = ~size_t{0};

  uint64_t* Block(size_t j) { return a_ + j * kMergeBlock; }
  // A place: an array block (below full_) or a spare block.
  uint64_t* Where(size_t place) {
    return place < full_ ? Block(place) : spare_[place - full_].get();
  }

  void Open() {
    if (occupant_.empty()) occupant_.assign(full_, kNone);
    if (!free_.empty()) {
      loc_.push_back(free_.back());
      occupant_[free_.back()] = loc_.size() - 1;
      free_.pop_back();
    } else {
      spare_.push_back(std::make_unique_for_overwrite<uint64_t[]>(kMergeBlock));
      loc_.push_back(full_ + spare_.size() - 1);
    }
    dest_ = Where(loc_.back());
    fill_ = 0;
  }

  // Values [at, at + k) of the array have been read.
  void Consumed(size_t at, size_t k) {
    const size_t end = at + k;
    for (size_t j = at / kMergeBlock; j < full_ && j * kMergeBlock < end; ++j) {
      const size_t from = std::max(at, j * kMergeBlock);
      const size_t to = std::min(end, (j + 1) * kMergeBlock);
      remaining_[j] -= static_cast<uint32_t>(to - from);
      if (remaining_[j] == 0) free_.push_back(j);
    }
  }

  // Fills array block j, which holds nothing needed, with output block j,
  // and so on with the place that frees while it is an array block.
  void Chain(size_t j) {
    for (;;) {
      const size_t from = loc_[j];
      std::memcpy(Block(j), Where(from), kMergeBlock * sizeof(uint64_t));
      loc_[j] = j;
      occupant_[j] = j;
      if (from >= full_) return;
      occupant_[from] = kNone;
      j = from;
    }
  }

  uint64_t* a_;
  size_t n_, full_;
  std::vector<uint32_t> remaining_;  // per array block: values not yet read
  std::vector<size_t> free_;         // array blocks all read and not taken
  std::vector<size_t> loc_;          // per output block: its place
  std::vector<size_t> occupant_;     // per array block: its output block, or kNone
  std::vector<std::unique_ptr<uint64_t[]>> spare_;
  uint64_t* dest_ = nullptr;
  size_t fill_ = kMergeBlock;
};

}  // namespace

bool MergeSortedRuns(std::vector<uint64_t>& values) {
  const size_t n = values.size();
  if (n < 2) return true;
  const size_t max_segments = n / kMergeMinSegment;
  // Each run is at least one segment.
  const size_t max_runs = std::min(kMergeMaxRuns, max_segments);
  uint64_t* a = values.data();
  std::vector<RunHead> heap;
  size_t start = 0;
  for (size_t i = 1; i < n; ++i) {
    if (a[i] < a[i - 1]) {
      if (heap.size() + 2 > max_runs) return false;
      heap.push_back({a[start], a + start, a + i, heap.size()});
      start = i;
    }
  }
  if (heap.empty()) return true;
  heap.push_back({a[start], a + start, a + n, heap.size()});
  std::vector<const uint64_t*> at(heap.size());
  for (const RunHead& h : heap) at[h.run] = h.p;
  for (size_t i = heap.size() / 2; i-- > 0;) SiftDown(heap, i);
  // The segments are listed first (run and length), without writing, so
  // that giving up leaves the values as they were for the radix sort.
  std::vector<uint64_t> segments;
  if (!MergeRuns(std::move(heap), max_segments,
                 [&](size_t run, const uint64_t* p, const uint64_t* e) {
                   segments.push_back(static_cast<uint64_t>(e - p) << kMergeRunBits | run);
                 })) {
    return false;
  }
  BlockMerge out(a, n);
  for (uint64_t s : segments) {
    const uint64_t*& p = at[s & (kMergeMaxRuns - 1)];
    out.Emit(p, p + (s >> kMergeRunBits));
    p += s >> kMergeRunBits;
  }
  out.Finish();
  return true;
}

void SortPackedCells(const OrderInput& in, const KeyPacking& k, std::vector<uint64_t>& cells) {
  // Packed values are distinct (the ordinal is in the low bits), so sorting
  // them whole orders the keys; equal keys are ordered below.
  if (!MergeSortedRuns(cells)) RadixSortKeys(cells, k.ord_bits, k.ord_bits + k.key_bits);
  // Equal coordinates: newest first; with dedup only that one.
  Cells c(in);
  size_t w = 0;
  std::vector<uint64_t> group;
  for (size_t i = 0; i < cells.size();) {
    const uint64_t key = k.KeyOf(cells[i]);
    size_t j = i + 1;
    while (j < cells.size() && k.KeyOf(cells[j]) == key) ++j;
    if (j == i + 1) {
      cells[w++] = cells[i];
    } else {
      group.assign(cells.begin() + static_cast<ptrdiff_t>(i),
                   cells.begin() + static_cast<ptrdiff_t>(j));
      std::sort(group.begin(), group.end(),
                [&](uint64_t a, uint64_t b) { return c.Newer(k.OrdinalOf(a), k.OrdinalOf(b)); });
      if (in.dedup) group.resize(1);
      for (uint64_t g : group) cells[w++] = g;
    }
    i = j;
  }
  cells.resize(w);
}

void RadixSortBits(std::vector<uint64_t>& values, int lo, int hi, std::vector<uint64_t>& scratch) {
  const int width = hi - lo;
  const size_t n = values.size();
  if (width <= 0 || n < 2) return;
  const int passes = (width + 10) / 11;
  const int digit = (width + passes - 1) / passes;
  const size_t buckets = size_t{1} << digit;
  const uint64_t dmask = buckets - 1;
  // The last pass may be narrower: bits at and above hi are not the key.
  std::vector<uint64_t> masks(passes, dmask);
  masks[passes - 1] = (uint64_t{1} << (width - (passes - 1) * digit)) - 1;
  std::vector<uint64_t> counts(static_cast<size_t>(passes) * buckets, 0);
  for (uint64_t v : values) {
    for (int p = 0; p < passes; ++p) ++counts[p * buckets + ((v >> (lo + p * digit)) & masks[p])];
  }
  scratch.resize(n);
  uint64_t* src = values.data();
  uint64_t* dst = scratch.data();
  for (int p = 0; p < passes; ++p) {
    uint64_t* count = counts.data() + p * buckets;
    const int at = lo + p * digit;
    const uint64_t m = masks[p];
    // A pass whose digit is the same everywhere moves nothing.
    if (count[(src[0] >> at) & m] == n) continue;
    uint64_t sum = 0;
    for (size_t b = 0; b < buckets; ++b) {
      uint64_t c = count[b];
      count[b] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; ++i) {
      uint64_t v = src[i];
      dst[count[(v >> at) & m]++] = v;
    }
    std::swap(src, dst);
  }
  if (src != values.data()) values.swap(scratch);
}

void SortSparseCellsGeneric(const OrderInput& in, std::vector<uint64_t>& cells) {
  Cells c(in);
  auto before = [&](uint64_t a, uint64_t b) {
    int k = c.CompareCoords(a, b);
    if (k != 0) return k < 0;
    return c.Newer(a, b);
  };
  // Cells come tile by tile, mostly in runs already in order (a fragment's
  // tiles, where its global order is the view's): runs few enough are
  // merged, a pass each time their number halves, rather than sorted. The
  // order is total (every cell's ordinal differs), so either way gives the
  // same cells in the same order.
  if (!in.dedup) {
    // Equal coordinates within a fragment (duplicates allowed) come oldest
    // first, and the order wants them newest first: each such group turned
    // round keeps its fragment one run (checked below like any run).
    for (size_t i = 0; i < cells.size();) {
      size_t j = i + 1;
      while (j < cells.size() && c.CompareCoords(cells[j], cells[i]) == 0) ++j;
      if (j - i > 1) std::reverse(cells.begin() + i, cells.begin() + j);
      i = j;
    }
  }
  std::vector<size_t> runs{0};
  for (size_t i = 1; i < cells.size() && runs.size() <= cells.size() / 64; ++i) {
    if (before(cells[i], cells[i - 1])) runs.push_back(i);
  }
  if (runs.size() <= cells.size() / 64) {
    runs.push_back(cells.size());
    while (runs.size() > 2) {
      std::vector<size_t> merged{0};
      for (size_t r = 0; r + 2 < runs.size(); r += 2) {
        std::inplace_merge(cells.begin() + runs[r], cells.begin() + runs[r + 1],
                           cells.begin() + runs[r + 2], before);
        merged.push_back(runs[r + 2]);
      }
      if (runs.size() % 2 == 0) merged.push_back(runs.back());  // an odd run out
      runs = std::move(merged);
    }
  } else {
    std::sort(cells.begin(), cells.end(), before);
  }
  if (in.dedup && !cells.empty()) {
    size_t w = 1;
    for (size_t r = 1; r < cells.size(); ++r) {
      if (!c.SameBytes(cells[w - 1], cells[r])) cells[w++] = cells[r];
    }
    cells.resize(w);
  }
}

void SortSparseCells(const OrderInput& in, std::vector<uint64_t>& cells, bool* packed) {
  bool p = SortPacked(in, cells);
  if (!p) SortSparseCellsGeneric(in, cells);
  if (packed != nullptr) *packed = p;
}

}  // namespace tiledbfs::core
