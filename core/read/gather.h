// Attribute values gathered for a range of a view's cells, tile by tile
// through the tile cache, with the tiles a reader holds between reads,
// decoded ahead of a sequential reader, or decoded in part for a seek.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/read/cell_index.h"
#include "core/read/column.h"
#include "core/read/tile_cache.h"
#include "core/util/pieces.h"

namespace tiledbfs::core {

// The index of the view's attribute `attr` in fragment `frag`'s own schema,
// or -1 where the fragment holds none of its cells: it predates the
// attribute, or it holds an attribute of that name that was var-sized where
// `attr` is fixed-sized or the other way round (dropped and added again by
// schema evolution). The view then shows the fill value there, as TileDB
// does.
int FragmentAttribute(const FragmentMetadata& frag, const Attribute& attr);

// The bytes the tiles of a sparse index take decoded for attribute `name`
// (of the view schema), summed over index.sparse_tiles (saturating; the
// tiles of fragments without the attribute count nothing).
uint64_t AttributeTileBytes(const ViewInputs& in, const CellIndex& index, const std::string& name);

// What a gather reads: a view's inputs and index, the tile cache the
// decoded tiles go through, and optionally one reader's state
// (tile_cache.h ReadState): the tiles it holds between reads, its seeks'
// parts and its decode-ahead. All must outlive the gather.
struct GatherContext {
  const ViewInputs& in;
  const CellIndex& index;
  TileCache& cache;
  ReadState* state = nullptr;
};

// Where a gather puts the values of a fixed-size attribute. With `into`,
// there (count * cell size bytes) instead of the column's data, which stays
// empty (a reader's own buffer: one copy less). With `pieces` (and no
// `into`), appended there instead: spans of the decoded tiles themselves
// where a run of cells is contiguous in its tile (no copy at all), kept
// alive by pieces->keep. Neither: the column's data.
struct GatherOutput {
  uint8_t* into = nullptr;
  Pieces* pieces = nullptr;
};

// Gathers cells of one attribute (of the view schema), run by run of the
// index. Fragments without the attribute (FragmentAttribute) contribute
// fill values. Decoded tiles go through the cache, so a range read decodes
// only the tiles covering it and consecutive reads reuse them; with a
// reader's state, through its held tiles too, which each read replaces with
// the tiles it used. A sequential reader's next tiles are sent to be
// decoded ahead; a seek (ReadState::parts) decodes only the chunks it needs.
class AttributeGather {
 public:
  // kNotFound for an attribute the view schema does not have. A sparse
  // view's dimension is gathered the same way, from its own tiles.
  static Result<AttributeGather> Make(const GatherContext& ctx, const std::string& name);
  // Cells [first, first + count). Errors: kInvalidArgument for a range past
  // the index; those of reading the tiles; kCorrupt for cells a tile does
  // not hold or cells of another size than the schema's.
  Result<Column> Read(uint64_t first, uint64_t count, GatherOutput out = {});

 private:
  // A tile at hand, kept in a few slots by (fragment, tile): views whose runs
  // alternate between fragments, or between the tiles of a row, go to the
  // shared cache once per tile, not once per run.
  struct Slot {
    uint32_t fragment = CellRef::kFill;
    uint64_t tile = 0;
    uint64_t first = 0;  // of the cells t holds (a part: ReadTilePart)
    std::shared_ptr<const DecodedTile> t;
    bool kept = false;  // t is in the output's pieces->keep
  };
  // What one Read works with.
  struct PerRead {
    Column column;
    GatherOutput out;
    uint8_t* fixed_out = nullptr;  // where fixed-size values go, without pieces
    uint64_t done = 0;             // cells written
    bool sequential = false;       // going on from the reader's last read
    bool parts = false;            // decoding chunks of tiles, not whole ones
    StreamShare* share = nullptr;
    HeldTiles* held = nullptr;                    // the reader's, for this field
    HeldTiles used;                               // the tiles this read takes (the next held)
    std::vector<HeldPart>* held_parts = nullptr;  // the reader's, for this field
    std::vector<HeldPart> used_parts;             // the parts this read takes
    HeldTiles ahead;                              // decoded together before the runs
    size_t ahead_from = 0;                        // where the next look in `ahead` starts
    std::array<Slot, 64> slots;
  };

  AttributeGather(const GatherContext& ctx, std::shared_ptr<const Attribute> field,
                  FieldRef::Kind kind);
  // Fragment f's tiles of the field (field_[f] >= 0).
  FieldRef Field(size_t f) const { return {kind_, static_cast<uint32_t>(field_[f])}; }
  // Whether the read is sequential and takes whole tiles or parts; decodes
  // the missing whole tiles together.
  void Plan(uint64_t first, uint64_t end);
  // Where the next n fixed-size values that are not a span of a tile go.
  uint8_t* FixedDestination(uint64_t n);
  // n fill values.
  void AppendFill(uint64_t n);
  // Makes `slot` hold the tile (or the part of it) with cells r.pos to
  // last_pos: held, decoded ahead, cached, or read now.
  Status Take(const CellRef& r, uint64_t last_pos, Slot& slot);
  Status TakePart(const TileKey& key, const CellRef& r, uint64_t last_pos, Slot& slot);
  // The run's values (and validity) from the slot's tile.
  void Copy(Slot& slot, const CellRun& run);
  // The reader's held tiles and parts for its next read, and its
  // decode-ahead past `end`.
  void KeepForNextRead(uint64_t end);

  GatherContext ctx_;
  // The attribute, or a sparse dimension as one (kind_).
  std::shared_ptr<const Attribute> attr_;
  FieldRef::Kind kind_;
  bool var_;
  uint64_t cs_;   // cell size (fixed-size attributes)
  ByteVec fill_;  // the fill cell: the schema's fill value, made a whole cell
  // Per fragment: the attribute's index in its own schema (-1: none) and
  // that field's index in its footer.
  std::vector<int> field_, footer_index_;
  PerRead r_;
};

// AttributeGather::Make, then Read.
Result<Column> GatherAttribute(const GatherContext& ctx, const std::string& name, uint64_t first,
                               uint64_t count, GatherOutput out = {});

}  // namespace tiledbfs::core
