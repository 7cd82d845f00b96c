// Reads CSV files with DuckDB's read_csv and its default settings, as a new
// user would: prints one JSON line per file, {"path", "rows"} or
// {"path", "error"}.
//   node read_csv.mjs FILE...
import { DuckDBInstance } from '@duckdb/node-api';

const instance = await DuckDBInstance.create(':memory:');
const connection = await instance.connect();
for (const path of process.argv.slice(2)) {
  try {
    const quoted = "'" + path.replaceAll("'", "''") + "'";
    const reader = await connection.runAndReadAll(`SELECT count(*) AS n FROM read_csv(${quoted})`);
    const rows = Number(reader.getRows()[0][0]);
    console.log(JSON.stringify({ path, rows }));
  } catch (e) {
    console.log(JSON.stringify({ path, error: String(e.message || e) }));
  }
}
