// Reads CSV files with DuckDB's read_csv and its default settings, as a new
// user would: prints one JSON line per file, {"path", "rows"} or
// {"path", "error"}. With `-`, the paths come on stdin, one JSON string a
// line, each answered before the next is read (mountlib.DuckDBReader keeps
// one process for many calls: Node.js and DuckDB start once).
//   node read_csv.mjs FILE...
//   node read_csv.mjs -
import { DuckDBInstance } from '@duckdb/node-api';
import readline from 'node:readline';

const instance = await DuckDBInstance.create(':memory:');
const connection = await instance.connect();

async function count(path) {
  try {
    const quoted = "'" + path.replaceAll("'", "''") + "'";
    const reader = await connection.runAndReadAll(`SELECT count(*) AS n FROM read_csv(${quoted})`);
    const rows = Number(reader.getRows()[0][0]);
    console.log(JSON.stringify({ path, rows }));
  } catch (e) {
    console.log(JSON.stringify({ path, error: String(e.message || e) }));
  }
}

const args = process.argv.slice(2);
if (args.length === 1 && args[0] === '-') {
  // console.log to a pipe is synchronous on Linux: each answer is out
  // before the next path is read.
  for await (const line of readline.createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (line.trim() !== '') await count(JSON.parse(line));
  }
} else {
  for (const path of args) await count(path);
}
