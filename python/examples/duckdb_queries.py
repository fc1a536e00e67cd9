"""DuckDB queries over an iotape trace: in memory (iotape.open(...).to_arrow())
or over a Parquet dataset (python3 -m iotape parquet). Each query reads a
relation named `ios` with iotape's columns; the figures match `iotape report`.

    python3 duckdb_queries.py TRACE...        # the trace itself, through Arrow
    python3 duckdb_queries.py --parquet DIR   # a dataset written by python3 -m iotape parquet
"""

import sys

import duckdb

# IOs and bytes by op, and all together.
TOTALS = """
SELECT count(*) AS ios,
       count(*) FILTER (WHERE op = 'read') AS reads,
       count(*) FILTER (WHERE op = 'write') AS writes,
       count(*) FILTER (WHERE op = 'flush') AS flushes,
       count(*) FILTER (WHERE op = 'discard') AS discards,
       coalesce(sum(length) FILTER (WHERE op = 'read'), 0) AS bytes_read,
       coalesce(sum(length) FILTER (WHERE op = 'write'), 0) AS bytes_written,
       coalesce(sum(length) FILTER (WHERE op = 'discard'), 0) AS bytes_discarded
FROM ios
"""

# Reads and writes by size, in iotape report's buckets (sizes between two
# buckets count in the lower one).
SIZE_BUCKETS = """
SELECT CASE WHEN length < 4096 THEN '<4K'
            WHEN length > 131072 THEN '>128K'
            WHEN length < 8192 THEN '4K'
            WHEN length < 16384 THEN '8K'
            WHEN length < 32768 THEN '16K'
            WHEN length < 65536 THEN '32K'
            WHEN length < 131072 THEN '64K'
            ELSE '128K' END AS bucket,
       count(*) AS ios,
       100.0 * count(*) / sum(count(*)) OVER () AS pct
FROM ios WHERE op IN ('read', 'write')
GROUP BY bucket ORDER BY min(length)
"""

# Device latency (issue to completion) percentiles by nearest rank, for reads,
# writes and both ('all'). `exact_ns` is the value itself; `report_ns` is it
# as iotape report states it: the middle of its histogram bucket (buckets
# 1/128 of a power of two wide, exact below 128 ns), clamped to min and max.
LATENCY_PERCENTILES = """
WITH lat AS (
  SELECT op::VARCHAR AS op, greatest(0, complete_ns - issue_ns) AS ns
  FROM ios WHERE complete_ns IS NOT NULL AND op IN ('read', 'write')
  UNION ALL
  SELECT 'all', greatest(0, complete_ns - issue_ns)
  FROM ios WHERE complete_ns IS NOT NULL AND op IN ('read', 'write')
),
ranked AS (
  SELECT op, ns, row_number() OVER (PARTITION BY op ORDER BY ns) AS rn,
         count(*) OVER (PARTITION BY op) AS n,
         min(ns) OVER (PARTITION BY op) AS lo, max(ns) OVER (PARTITION BY op) AS hi
  FROM lat
),
wanted AS (SELECT * FROM (VALUES ('p50', 50.0::DOUBLE), ('p90', 90.0::DOUBLE), ('p99', 99.0::DOUBLE),
                                 ('p99_9', 99.9::DOUBLE)) AS p(name, p)),
picked AS (
  SELECT r.op, w.name, r.ns, r.lo, r.hi,
         -- the bucket width: 2^(floor(log2 ns) - 7), with log2 corrected for rounding
         CASE WHEN r.ns < 128 THEN 1::BIGINT ELSE
           (1::BIGINT << (e - CASE WHEN (1::BIGINT << e) > r.ns THEN 1 ELSE 0 END - 7)) END AS w
  FROM ranked r, wanted w, (SELECT CAST(floor(log2(greatest(r.ns, 1))) AS INTEGER) AS e)
  WHERE r.rn = greatest(1, CAST(ceil(w.p / 100.0 * r.n) AS BIGINT))
)
SELECT op, name, ns AS exact_ns,
       least(greatest(CASE WHEN ns < 128 THEN ns ELSE ns // w * w + w // 2 END, lo), hi) AS report_ns
FROM picked ORDER BY op, name
"""

# Disk busy time per device: the length of the union of the [issue, end)
# intervals of its IOs, where end is the completion (never before the issue)
# or, without one, the issue itself. An fsync's empty pre-flush write that
# the device never saw (issue time = queue time; its flush requests are rows
# of their own) counts for nothing, as in `iotape report`. Islands of
# overlapping intervals start where an IO begins after every earlier one has
# ended. Also only reads' and only writes' intervals.
BUSY_TIME = """
WITH iv AS (
  SELECT device, op::VARCHAR AS op, issue_ns AS s, greatest(coalesce(complete_ns, issue_ns), issue_ns) AS e
  FROM ios
  WHERE NOT (op::VARCHAR = 'write' AND length = 0 AND (flags & 4) <> 0 AND complete_ns IS NOT NULL
             AND coalesce(queue_ns = issue_ns, false))
),
sel AS (
  SELECT device, 'all' AS kind, s, e FROM iv
  UNION ALL SELECT device, 'read', s, e FROM iv WHERE op = 'read'
  UNION ALL SELECT device, 'write', s, e FROM iv WHERE op = 'write'
),
marked AS (
  SELECT device, kind, s, e,
         max(e) OVER (PARTITION BY device, kind ORDER BY s, e
                      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS ended
  FROM sel
),
islands AS (
  SELECT device, kind, s, e,
         sum(CASE WHEN ended IS NULL OR s > ended THEN 1 ELSE 0 END)
           OVER (PARTITION BY device, kind ORDER BY s, e ROWS UNBOUNDED PRECEDING) AS island
  FROM marked
),
spans AS (SELECT device, kind, max(e) - min(s) AS ns FROM islands GROUP BY device, kind, island)
SELECT device, kind, sum(ns)::BIGINT AS busy_ns FROM spans GROUP BY device, kind ORDER BY device, kind
"""

QUERIES = {"totals": TOTALS, "size_buckets": SIZE_BUCKETS, "latency_percentiles": LATENCY_PERCENTILES,
           "busy_time": BUSY_TIME}


def connect_arrow(table):
    """A DuckDB connection where `ios` is an Arrow table (iotape.open(...).to_arrow())."""
    con = duckdb.connect()
    con.register("ios", table)
    return con


def connect_parquet(directory):
    """A DuckDB connection where `ios` is a Parquet dataset written by python3 -m iotape parquet."""
    con = duckdb.connect()
    con.execute(f"CREATE VIEW ios AS SELECT * FROM read_parquet('{directory}/**/*.parquet', hive_partitioning = true)")
    return con


def main(argv):
    if argv[:1] == ["--parquet"]:
        con = connect_parquet(argv[1])
    else:
        import iotape
        con = connect_arrow(iotape.open(argv).to_arrow())
    for name, sql in QUERIES.items():
        print(f"-- {name}")
        print(con.sql(sql))


if __name__ == "__main__":
    main(sys.argv[1:])
