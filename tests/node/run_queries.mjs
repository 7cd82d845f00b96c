// Runs SQL queries with DuckDB (one in-memory database, one connection)
// and prints one JSON line per query: {"ms", "rows", "sql"} or {"error"}.
// scripts/bench_parquet.py times DuckDB over data.parquet and data.csv.
//   node run_queries.mjs SQL...
import { DuckDBInstance } from '@duckdb/node-api';

const instance = await DuckDBInstance.create(':memory:');
const connection = await instance.connect();
for (const sql of process.argv.slice(2)) {
  const t0 = performance.now();
  try {
    const reader = await connection.runAndReadAll(sql);
    const ms = performance.now() - t0;
    const rows = reader.getRows().map((row) => row.map(String));
    console.log(JSON.stringify({ ms, rows, sql }));
  } catch (e) {
    console.log(JSON.stringify({ error: String(e.message || e), sql }));
  }
}
