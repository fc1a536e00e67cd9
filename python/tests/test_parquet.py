"""python3 -m iotape parquet: a hive-partitioned dataset equal to the trace."""

import os
import subprocess
import sys

import pyarrow.dataset as ds
import pyarrow.parquet as pq

import iotape
from iotape import parquet


def run_module(*args):
    return subprocess.run([sys.executable, "-m", "iotape", *map(str, args)], capture_output=True, text=True)


def test_partitioned_dataset_equals_the_trace(samples, tmp_path):
    paths = samples["blktrace"]
    out = tmp_path / "ds"
    r = run_module("parquet", *paths, "-o", out, "--partition-by", "device,hour")
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""  # not a terminal: no progress
    trace = iotape.open(paths)
    want = trace.to_arrow()
    hours = sorted({v // parquet.NS_PER_HOUR for v in want.column("issue_ns").to_pylist()})
    dirs = sorted(os.listdir(out / "device=0"))
    assert dirs == [f"hour={h}" for h in hours]

    got = ds.dataset(out, format="parquet", partitioning="hive").to_table().sort_by("index")
    assert got.num_rows == want.num_rows
    for name in iotape.COLUMNS:
        assert got.column(name).to_pylist() == want.column(name).to_pylist(), name
    assert parquet.read_header(str(out)) == trace.header
    one_file = next((out / "device=0").rglob("*.parquet"))
    assert b"iotape.header" in pq.read_schema(one_file).metadata


def test_unpartitioned_and_bad_input(samples, tmp_path):
    out = tmp_path / "flat"
    assert run_module("parquet", *samples["msr"], "-o", out).returncode == 0
    assert pq.read_table(out / "part-0.parquet").num_rows == iotape.open(samples["msr"]).to_arrow().num_rows
    bad = tmp_path / "bad.iot"
    bad.write_bytes(b"nope")
    r = run_module("parquet", bad, "-o", tmp_path / "x")
    assert r.returncode == 1 and str(bad) in r.stderr and "byte 0" in r.stderr
    r = run_module("parquet", *samples["msr"], "-o", out)
    assert r.returncode == 1 and f"{out}: not empty" in r.stderr
    r = run_module("parquet", *samples["msr"], "-o", tmp_path / "y", "--partition-by", "pid")
    assert r.returncode == 1 and "cannot partition by pid" in r.stderr


def test_progress_on_a_terminal(samples, tmp_path):
    # A pseudo-terminal as stderr: progress is shown there, and ends with the total.
    import pty
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "iotape", "parquet", *samples["vscsi"], "-o", tmp_path / "ds"],
                         stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    out, _ = p.communicate(timeout=120)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    assert p.returncode == 0
    n = iotape.open(samples["vscsi"]).to_arrow().num_rows
    assert f"iotape parquet: {n:,} IOs in".encode() in shown
