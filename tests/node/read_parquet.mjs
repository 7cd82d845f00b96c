// Reads Parquet files with two independent readers, DuckDB (read_parquet,
// @duckdb/node-api) and hyparquet (pure JavaScript), and prints one JSON
// line per file: {"path", "duckdb": {...} | {"error"}, "hyparquet": {...} |
// {"error"}}. With `-`, the paths come on stdin, one JSON string a line,
// each answered before the next is read (one process for many files, as
// read_csv.mjs for mountlib.DuckDBReader).
//   node read_parquet.mjs FILE...
//   node read_parquet.mjs -
//
// Values, column by column (values[c][row]), in one lossless form for both
// readers so that they compare with each other and with the raw cells:
//   null                    null
//   integers                decimal strings (INT64/UINT64 exact: BigInt)
//   FLOAT / DOUBLE          hex of the IEEE bits, 8 / 16 digits (nan, -0 exact)
//   BOOLEAN                 true / false
//   strings, binary         hex of the bytes (VARCHAR: of its UTF-8, exact)
//   timestamps, times       the raw integer in the unit of the reader's type
//                           (DuckDB: its column type's; hyparquet: the file's)
//   lists                   arrays of the above
// duckdb:    {"columns": [{"name", "type"}], "rows", "values", "errors", "kv"}:
//            DuckDB's own types (e.g. "UTINYINT", "TIMESTAMP WITH TIME ZONE",
//            "SMALLINT[]"); a column DuckDB cannot read has values null and
//            its message in errors[name]; kv: parquet_kv_metadata's pairs.
// hyparquet: {"columns": [{"name", "repetition", "logical", "converted",
//            "leaf": {"type", "logical", "converted", "repetition"},
//            "levels": [{"name", "repetition", "logical", "converted"}]}],
//            "rows" (values read), "num_rows" (the footer's), "values", "kv"
//            (the file's key-value metadata),
//            "row_groups": [{"rows", "columns": [{"encodings", "kv",
//            "dictionary", "stats": {"min", "max", "null_count"}}]}]}: the
//            footer as written (a LIST column's leaf is its element).
import {
  DuckDBInstance, DuckDBFloatVector, DuckDBDoubleVector, DuckDBListVector, DuckDBBlobVector,
} from '@duckdb/node-api';
import { parquetMetadata, parquetRead, parquetSchema } from 'hyparquet';
import fs from 'node:fs/promises';
import readline from 'node:readline';

const instance = await DuckDBInstance.create(':memory:');
const connection = await instance.connect();

function hex(bytes) {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

const scratch = new DataView(new ArrayBuffer(8));

// A JS number as the bits of a float32 / float64. Bits read from a typed
// array's buffer (below) are exact; a number passed here went through a JS
// double, where a NaN's payload may in principle be canonicalised (V8 on
// x86-64 keeps it; the fixture corpora hold only the canonical quiet NaN).
function floatBits(v, width) {
  if (width === 4) {
    scratch.setFloat32(0, v, true);
    return scratch.getUint32(0, true).toString(16).padStart(8, '0');
  }
  scratch.setFloat64(0, v, true);
  return scratch.getBigUint64(0, true).toString(16).padStart(16, '0');
}

// The bits of element i of a Float32Array / Float64Array, from its bytes.
function typedFloatBits(items, i) {
  const width = items.BYTES_PER_ELEMENT;
  const view = new DataView(items.buffer, items.byteOffset + i * width, width);
  return width === 4 ? view.getUint32(0, true).toString(16).padStart(8, '0')
    : view.getBigUint64(0, true).toString(16).padStart(16, '0');
}

// ---- DuckDB --------------------------------------------------------------

// Item i of a DuckDB vector in the lossless form; floats straight from the
// vector's memory (its `items`), lists through their child vector.
function duckItem(vec, i) {
  if (vec instanceof DuckDBListVector) {  // Parquet's LIST (DuckDB reads no ARRAY from it)
    const sub = vec.getItemVector(i);
    if (sub === null) return null;
    const out = [];
    for (let j = 0; j < sub.itemCount; j++) out.push(duckItem(sub, j));
    return out;
  }
  if (vec instanceof DuckDBFloatVector || vec instanceof DuckDBDoubleVector) {
    return vec.getItem(i) === null ? null : typedFloatBits(vec.items, i);
  }
  if (vec instanceof DuckDBBlobVector) {
    const b = vec.getItemBytes(i);
    return b === null ? null : hex(b);
  }
  return duckValue(vec.getItem(i));
}

function duckValue(v) {
  if (v === null || v === undefined) return null;
  switch (typeof v) {
    case 'bigint':
      return v.toString();
    case 'number':
      return String(v);  // integers of up to 32 bits (floats are read above)
    case 'boolean':
      return v;
    case 'string':
      return Buffer.from(v, 'utf8').toString('hex');  // VARCHAR: valid UTF-8
    default:
      break;
  }
  // Timestamps, times, dates: the raw integer of the value's own unit.
  for (const unit of ['micros', 'millis', 'nanos', 'seconds', 'days']) {
    if (unit in v) return String(v[unit]);
  }
  if (v.bytes instanceof Uint8Array) return hex(v.bytes);
  if (Array.isArray(v.items)) return v.items.map(duckValue);
  return { unknown: String(v) };
}

// Every value of the expressions `names` (one a column) of `from`.
async function duckColumns(from, names) {
  const result = await connection.run(`SELECT ${names.join(', ')} FROM ${from}`);
  const values = names.map(() => []);
  for (;;) {
    const chunk = await result.fetchChunk();
    if (chunk === null || chunk.rowCount === 0) break;
    for (let c = 0; c < names.length; c++) {
      const vec = chunk.getColumnVector(c);
      for (let i = 0; i < chunk.rowCount; i++) values[c].push(duckItem(vec, i));
    }
  }
  return values;
}

async function readDuckDB(path) {
  // Not hive partitioning: slice/<dim>=<lo>..<hi>/ folders look like partitions
  // and DuckDB would set the dimension's column to the folder's text.
  const from = `read_parquet('${path.replaceAll("'", "''")}', hive_partitioning = false)`;
  const described = await connection.runAndReadAll(`DESCRIBE SELECT * FROM ${from}`);
  const columns = described.getRowObjects().map((r) => ({ name: r.column_name, type: r.column_type }));
  // VARCHAR as encode(): its UTF-8 bytes as DuckDB holds them. The node
  // API's strings come from a default TextDecoder, which drops a leading BOM.
  const quoted = columns.map((c) => {
    const q = '"' + c.name.replaceAll('"', '""') + '"';
    return c.type === 'VARCHAR' ? `encode(${q})` : q;
  });
  let values;
  const errors = {};
  try {
    values = await duckColumns(from, quoted);
  } catch (e) {
    // One column DuckDB cannot read fails the whole query: read them one by
    // one, so that the failure names the column and the others are checked.
    values = [];
    for (let c = 0; c < columns.length; c++) {
      try {
        values.push((await duckColumns(from, [quoted[c]]))[0]);
      } catch (e2) {
        errors[columns[c].name] = String(e2?.message || e2);
        values.push(null);
      }
    }
  }
  const rows = values.find((v) => v !== null)?.length ?? 0;
  const kvRows = await connection.runAndReadAll(
    `SELECT key, value FROM parquet_kv_metadata('${path.replaceAll("'", "''")}')`);
  const kv = Object.fromEntries(kvRows.getRows().map(([k, v]) =>
    [Buffer.from(k.bytes).toString('utf8'), Buffer.from(v.bytes).toString('utf8')]));
  return { columns, rows, values, errors, kv };
}

// ---- hyparquet -----------------------------------------------------------

// Parsers that keep the file's raw values: timestamps as the BigInt of
// their unit (the defaults make a Date of milliseconds, losing micros and
// nanos), strings as their bytes (the default TextDecoder would replace a
// byte that is not UTF-8 and drop a leading BOM).
const rawParsers = {
  timestampFromMilliseconds: (v) => v,
  timestampFromMicroseconds: (v) => v,
  timestampFromNanoseconds: (v) => v,
  dateFromDays: (v) => v,
  stringFromBytes: (b) => b,
  jsonFromBytes: (b) => b,
  geometryFromBytes: (b) => b,
  geographyFromBytes: (b) => b,
  uuidFromBytes: (b) => b,
};

function logical(e) {
  if (!e.logical_type) return null;
  const out = { ...e.logical_type };
  for (const k of Object.keys(out)) if (typeof out[k] === 'bigint') out[k] = String(out[k]);
  return out;
}

// A value of a column whose leaf (a list's element) has physical type `leaf`.
function hypValue(v, leaf) {
  if (v === null || v === undefined) return null;
  if (Array.isArray(v)) return v.map((x) => hypValue(x, leaf));
  switch (typeof v) {
    case 'bigint':
      return v.toString();
    case 'number':
      if (leaf === 'FLOAT') return floatBits(v, 4);
      if (leaf === 'DOUBLE') return floatBits(v, 8);
      return String(v);
    case 'boolean':
      return v;
    case 'string':
      return Buffer.from(v, 'utf8').toString('hex');
    default:
      break;
  }
  if (v instanceof Uint8Array) return hex(v);
  if (ArrayBuffer.isView(v)) return Array.from(v, (x) => hypValue(x, leaf));
  return { unknown: String(v) };
}

function hypColumn(data, leaf) {
  const out = new Array(data.length);
  const typedFloat = data instanceof Float32Array || data instanceof Float64Array;
  for (let i = 0; i < data.length; i++) {
    out[i] = typedFloat ? typedFloatBits(data, i) : hypValue(data[i], leaf);
  }
  return out;
}

// The schema elements from a top-level column down to its leaf (a LIST's
// element), each {name, repetition, logical, converted}.
function levelsOf(node) {
  const levels = [];
  for (;;) {
    const e = node.element;
    levels.push({
      name: e.name, repetition: e.repetition_type, logical: logical(e), converted: e.converted_type ?? null,
    });
    if (!node.children.length) return { leaf: e, levels };
    node = node.children[0];
  }
}

function statValue(v, leaf) {
  if (v === undefined) return null;
  return hypValue(v, leaf);
}

async function readHyparquet(path) {
  const buf = await fs.readFile(path);
  const file = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
  const metadata = parquetMetadata(file, { parsers: rawParsers, geoparquet: false });
  const tree = parquetSchema(metadata);
  const top = tree.children;
  const leaves = top.map(levelsOf);
  const columns = top.map((t, c) => ({
    name: t.element.name,
    repetition: t.element.repetition_type,
    logical: logical(t.element),
    converted: t.element.converted_type ?? null,
    leaf: {
      type: leaves[c].leaf.type,
      logical: logical(leaves[c].leaf),
      converted: leaves[c].leaf.converted_type ?? null,
      repetition: leaves[c].leaf.repetition_type,
    },
    levels: leaves[c].levels,
  }));
  // Leaf columns (column chunks) in schema order: one per top-level column
  // here, as none is a struct or a map.
  const leafTypes = metadata.schema.filter((e) => e.type).map((e) => e.type);
  const rowGroups = metadata.row_groups.map((rg) => ({
    rows: Number(rg.num_rows),
    columns: rg.columns.map((cc, k) => {
      const md = cc.meta_data;
      const st = md.statistics;
      return {
        path: md.path_in_schema,
        encodings: md.encodings,
        dictionary: md.dictionary_page_offset !== undefined,
        kv: Object.fromEntries((md.key_value_metadata ?? []).map((kv) => [kv.key, kv.value ?? null])),
        stats: st ? {
          min: statValue(st.min_value ?? st.min, leafTypes[k]),
          max: statValue(st.max_value ?? st.max, leafTypes[k]),
          null_count: st.null_count === undefined ? null : String(st.null_count),
        } : null,
      };
    }),
  }));
  const chunks = top.map(() => []);
  await parquetRead({
    file,
    metadata,
    utf8: false,  // BYTE_ARRAY without STRING stays bytes
    parsers: rawParsers,
    geoparquet: false,
    onChunk: ({ columnName, columnData, rowStart }) => {
      const c = top.findIndex((t) => t.element.name === columnName);
      chunks[c].push({ rowStart, columnData });
    },
  });
  const values = chunks.map((cs, c) => {
    cs.sort((a, b) => a.rowStart - b.rowStart);
    const out = [];
    for (const { rowStart, columnData } of cs) {
      if (rowStart !== out.length) {
        throw new Error(`column ${columns[c].name}: a chunk at row ${rowStart}, not ${out.length}`);
      }
      for (const v of hypColumn(columnData, leaves[c].leaf.type)) out.push(v);
    }
    return out;
  });
  const kv = Object.fromEntries((metadata.key_value_metadata ?? []).map((e) => [e.key, e.value ?? null]));
  const rows = values.length ? values[0].length : 0;
  return { columns, rows, num_rows: Number(metadata.num_rows), values, kv, row_groups: rowGroups };
}

// ---- main ----------------------------------------------------------------

async function attempt(fn, path) {
  try {
    return await fn(path);
  } catch (e) {
    return { error: String(e?.message || e) };
  }
}

async function read(path) {
  const duckdb = await attempt(readDuckDB, path);
  const hyparquet = await attempt(readHyparquet, path);
  console.log(JSON.stringify({ path, duckdb, hyparquet }));
}

const args = process.argv.slice(2);
if (args.length === 1 && args[0] === '-') {
  // console.log to a pipe is synchronous on Linux: each answer is out
  // before the next path is read.
  for await (const line of readline.createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (line.trim() !== '') await read(JSON.parse(line));
  }
} else {
  for (const path of args) await read(path);
}
