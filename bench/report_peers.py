#!/usr/bin/env python3
"""`iotape report` beside btt and DuckDB on the same IOs, one synthetic trace
of N IOs (default 10M) on an NVMe drive's device number (btt leaves out
device 0:0), written by report_bench (--span stretches it, e.g. over a week:
7d), or a trace given with --trace (read, never changed):

- report_bench on the trace: the analysis with the chunks decoded in the
  analysing thread (one thread, as before ReaderOptions::decode_ahead) and on
  a second thread, wall clock and peak RSS;
- end to end (both cores), wall clock and peak RSS: `iotape report --json`,
  `report --html` (the week page), `info --json` and `cut --heavy`, the
  commands that read a whole trace;
- btt (blktrace's analyser) on the trace exported as blktrace binary
  (`iotape export blktrace`), wall clock of `btt -i`;
- DuckDB on the trace as a Parquet dataset (python3 -m iotape parquet): a
  GROUP BY op of IOs, bytes and mean device latency, default threads, checked
  against the report's totals;

each as IOs per second and as a ratio to iotape report's. Every time is the
fastest of --rounds (other load on the machine only slows a run down); the
exports are timed apart, not counted. Run with the package's environment:
  build/python-venv/bin/python bench/report_peers.py [--ios N] [--span 7d] [--trace PATH] [--dir /var/tmp]
                                                     [--rounds 3]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import duckdb

from iotape import parquet

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BY_OP = """
SELECT op::VARCHAR AS op, count(*) AS ios, sum(length) AS bytes,
       avg(greatest(0, complete_ns - issue_ns)) FILTER (WHERE complete_ns IS NOT NULL) AS mean_d2c_ns
FROM ios GROUP BY op ORDER BY op
"""


def timed(cmd, rounds, **kw):
    """Fastest wall clock of `rounds` runs of cmd, its peak RSS in MiB (as GNU time measures it, apart from
    this process) and the last run's output."""
    best, rss, out = float("inf"), 0.0, None
    for _ in range(rounds):
        with tempfile.NamedTemporaryFile("r") as usage:
            t0 = time.perf_counter()
            p = subprocess.run(["/usr/bin/time", "-o", usage.name, "-f", "%M"] + cmd, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, check=True, **kw)
            best = min(best, time.perf_counter() - t0)
            rss = max(rss, int(usage.read().split()[-1]) / 1024)
        out = p.stdout
    return best, rss, out


WIDTH = 44  # of the name column


def line(name, n, seconds, iotape_seconds, extra=""):
    ratio = seconds / iotape_seconds
    print(f"{name:<{WIDTH}} {n / seconds / 1e6:7.2f} M IOs/s  ({seconds:6.2f} s; "
          f"iotape report is {ratio:5.1f}x as fast)" + extra)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ios", type=int, default=10_000_000)
    ap.add_argument("--span", default="0", help="trace time the generated IOs spread over, e.g. 7d")
    ap.add_argument("--trace", help="an existing trace to measure instead (of --ios IOs)")
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    iotape = os.path.join(a.build, "cli", "iotape")
    work = tempfile.mkdtemp(prefix="iotape-peers-", dir=a.dir)
    try:
        trace = a.trace or os.path.join(work, "t.iot")
        n = a.ios
        subprocess.run([os.path.join(a.build, "bench", "report_bench"), "--ios", str(n), "--span", a.span, "--trace",
                        trace, "--keep", "--rounds", str(a.rounds)], check=True)
        sys.stdout.flush()

        report_s, report_rss, out = timed([iotape, "report", "--json", trace], a.rounds)
        report = json.loads(out)
        n = report["ios"]
        runs = [("report --json", report_s, report_rss),
                ("report --html (week page)", *timed([iotape, "report", "--html", os.path.join(work, "week.html"),
                                                      trace], a.rounds)[:2]),
                ("info --json", *timed([iotape, "info", "--json", trace], a.rounds)[:2]),
                ("cut --heavy", *timed([iotape, "cut", "--heavy", "-o", os.path.join(work, "cut.iot"), trace],
                                       a.rounds)[:2])]
        for name, seconds, rss in runs:
            print(f"{'iotape ' + name + ', end to end':<{WIDTH}} {n / seconds / 1e6:7.2f} M IOs/s  "
                  f"({seconds:6.2f} s), peak RSS {rss:.1f} MiB")

        blk = os.path.join(work, "t.blktrace")
        t0 = time.perf_counter()
        with open(blk, "wb") as f:
            subprocess.run([iotape, "export", "blktrace", trace], stdout=f, check=True)
        export_s = time.perf_counter() - t0
        btt_s, btt_rss, out = timed(["btt", "-i", blk], 1, cwd=work)
        m = re.search(rb"D2C\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)", out)
        btt_d2c = f"; D2C mean {float(m.group(2)) * 1e9:.0f} ns over {int(m.group(4)):,} IOs" if m else "; no D2C"
        line("btt -i (blktrace binary)", n, btt_s, report_s,
             f", peak RSS {btt_rss:.0f} MiB (export {export_s:.1f} s){btt_d2c}")
        os.remove(blk)

        ds = os.path.join(work, "ds")
        t0 = time.perf_counter()
        parquet.write_dataset([trace], ds)
        pq_s = time.perf_counter() - t0
        con = duckdb.connect()
        con.execute(f"CREATE VIEW ios AS SELECT * FROM read_parquet('{ds}/**/*.parquet', hive_partitioning = true)")
        best, rows = float("inf"), None
        for _ in range(a.rounds):
            t0 = time.perf_counter()
            rows = con.execute(BY_OP).fetchall()
            best = min(best, time.perf_counter() - t0)
        line("DuckDB GROUP BY op on Parquet", n, best, report_s, f" (Parquet written in {pq_s:.1f} s)")
        by_op = {op: (ios, bytes_) for op, ios, bytes_, _ in rows}
        assert by_op["read"] == (report["reads"], report["bytes_read"]), (by_op, report["reads"])
        assert by_op["write"] == (report["writes"], report["bytes_written"])
        print(f"same totals: {report['reads']:,} reads, {report['bytes_read']:,} B read; "
              f"{report['writes']:,} writes, {report['bytes_written']:,} B written; "
              f"btt's D2C mean beside report's (JSON latency_ns.all.mean) {report['latency_ns']['all'].get('mean')}")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
