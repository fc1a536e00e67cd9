#!/usr/bin/env python3
"""The Python package against iotape itself, on one synthetic trace of N IOs
(default 10M, `iotape synth storage-heavy`):

- Arrow conversion (every column) in IOs per CPU-second on one core, beside
  the C++ reader alone (the same chunks decoded into rows of Io, as
  TraceReader::next_batch hands them out), alternated over --rounds;
- the Parquet dataset's bytes per IO beside the .iot file's;
- DuckDB's busy-time query (python/examples/duckdb_queries.py) on the Arrow
  table and on the Parquet dataset, beside `iotape report` on the trace.

Run with the package's environment:
  build/python-venv/bin/python bench/python_bench.py [--ios N] [--dir /dev/shm] [--rounds 3]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import duckdb

import iotape
from iotape import _ext, parquet

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "examples"))
import duckdb_queries as q  # noqa: E402


def cpu_timed(fn):
    t0 = time.thread_time()
    out = fn()
    return out, time.thread_time() - t0


def wall_timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def read_only(path):
    """The C++ reader alone: every chunk decoded into IOs, no column built."""
    return _ext.read_ios([path])


def convert(path):
    n = 0
    for batch in iotape.open(path).batches():
        n += batch.num_rows
    return n


def dir_bytes(d):
    return sum(os.path.getsize(os.path.join(p, f)) for p, _, fs in os.walk(d) for f in fs if f.endswith(".parquet"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ios", type=int, default=10_000_000)
    ap.add_argument("--dir", default="/dev/shm")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iotape", default=os.path.join(ROOT, "build", "cli", "iotape"))
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="iotape-pybench-", dir=a.dir)
    try:
        trace = os.path.join(work, "t.iot")
        subprocess.run([a.iotape, "synth", "storage-heavy", "--ios", str(a.ios), "-o", trace], check=True,
                       stdout=subprocess.DEVNULL)
        n = iotape.open(trace).to_arrow(columns=["index"]).num_rows
        print(f"trace: {n:,} IOs (iotape synth storage-heavy), {os.path.getsize(trace) / n:.2f} B/IO")

        # Alternated rounds, medians: other load on the machine moves both alike.
        reader_t, arrow_t = [], []
        for _ in range(a.rounds):
            reader_t.append(cpu_timed(lambda: read_only(trace))[1])
            arrow_t.append(cpu_timed(lambda: convert(trace))[1])
        reader_s, arrow_s = statistics.median(reader_t), statistics.median(arrow_t)
        ratios = " ".join(f"{r / c:.2f}" for r, c in zip(reader_t, arrow_t))
        print(f"C++ reader alone      {n / reader_s / 1e6:7.2f} M IOs/s (CPU time, one core, median of {a.rounds})")
        print(f"Arrow record batches  {n / arrow_s / 1e6:7.2f} M IOs/s, {reader_s / arrow_s:.2f}x the reader "
              f"(rounds: {ratios})")

        ds_dir = os.path.join(work, "ds")
        _, pq_s = wall_timed(lambda: parquet.write_dataset([trace], ds_dir))
        print(f"Parquet dataset       {dir_bytes(ds_dir) / n:7.2f} B/IO beside {os.path.getsize(trace) / n:.2f} "
              f"B/IO for the .iot ({pq_s:.1f} s to write)")

        report, report_s = wall_timed(lambda: subprocess.run([a.iotape, "report", "--json", trace], check=True,
                                                             capture_output=True))
        table = iotape.open(trace).to_arrow(columns=["device", "op", "issue_ns", "complete_ns"])
        con = q.connect_arrow(table)
        duckdb.execute("SET threads TO 1")
        con.execute("SET threads TO 1")
        busy_arrow, arrow_q_s = wall_timed(lambda: con.execute(q.BUSY_TIME).fetchall())
        con_pq = q.connect_parquet(ds_dir)
        con_pq.execute("SET threads TO 1")
        busy_pq, pq_q_s = wall_timed(lambda: con_pq.execute(q.BUSY_TIME).fetchall())
        assert busy_arrow == busy_pq
        print(f"busy time, iotape report (everything)  {report_s:6.2f} s")
        print(f"busy time, DuckDB on Arrow, 1 thread   {arrow_q_s:6.2f} s")
        print(f"busy time, DuckDB on Parquet, 1 thread {pq_q_s:6.2f} s")
        r = json.loads(report.stdout)
        all_busy = [b for d, k, b in busy_arrow if k == "all"]
        print(f"busy time: report {r['busy_time_ns']} ns, DuckDB {sum(all_busy)} ns")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
