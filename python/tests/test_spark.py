"""Spark (local[2]): the iotape data source over a directory of a rotated
capture's parts and two other traces, and the Parquet datasets of the same
traces, give equal results, equal to `iotape report --json`."""

import os
import shutil
import sys
import time

import pytest

import iotape
from conftest import report, require
from iotape import parquet

# Busy time per trace and device: the union of [issue, end) intervals, as in
# python/examples/duckdb_queries.py, in Spark SQL.
BUSY_SQL = """
WITH iv AS (SELECT name, device, issue_ns AS s, greatest(coalesce(complete_ns, issue_ns), issue_ns) AS e FROM ios
            WHERE NOT (op = 'write' AND length = 0 AND (flags & 4) <> 0 AND complete_ns IS NOT NULL
                       AND coalesce(queue_ns = issue_ns, false))),
marked AS (SELECT name, device, s, e, max(e) OVER (PARTITION BY name, device ORDER BY s, e
                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS ended FROM iv),
islands AS (SELECT name, device, s, e, sum(CASE WHEN ended IS NULL OR s > ended THEN 1 ELSE 0 END)
                   OVER (PARTITION BY name, device ORDER BY s, e ROWS UNBOUNDED PRECEDING) AS island FROM marked),
spans AS (SELECT name, device, max(e) - min(s) AS ns FROM islands GROUP BY name, device, island)
SELECT name, device, sum(ns) AS busy_ns FROM spans GROUP BY name, device
"""
TOTALS_SQL = """
SELECT name, device, count(*) AS ios, sum(length) AS bytes,
       sum(CASE WHEN op = 'read' THEN length ELSE 0 END) AS bytes_read,
       sum(CASE WHEN op = 'write' THEN length ELSE 0 END) AS bytes_written
FROM ios GROUP BY name, device
"""


def figures(spark, df):
    df.createOrReplaceTempView("ios")
    out = {}
    for r in spark.sql(TOTALS_SQL).collect():
        out[(r["name"], r["device"])] = {k: r[k] for k in ("ios", "bytes", "bytes_read", "bytes_written")}
    for r in spark.sql(BUSY_SQL).collect():
        out[(r["name"], r["device"])]["busy_ns"] = r["busy_ns"]
    return out


@pytest.fixture(scope="module")
def spark():
    require(shutil.which("java") is not None, "java (for PySpark)")
    from pyspark.sql import SparkSession
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (SparkSession.builder.master("local[2]").appName("iotape-test")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
               .config("spark.driver.memory", "1g").getOrCreate())
    session.sparkContext.setLogLevel("FATAL")  # the truncated-file test fails a task on purpose
    yield session
    session.stop()


def test_data_source_and_parquet_agree_with_report(spark, samples, captured, tmp_path):
    from pyspark.sql import functions as F
    from iotape.spark import register
    started = time.monotonic()

    traces = {"captured": captured, "msr": samples["msr"], "vscsi": samples["vscsi"]}
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    name_of_file = {}
    for name, paths in traces.items():
        for p in paths:
            dst = fleet / (os.path.basename(p) if name == "captured" else f"{name}.iot")
            shutil.copy(p, dst)
            name_of_file[str(dst)] = name

    register(spark)
    df = spark.read.format("iotape").load(str(fleet))
    assert df.rdd.getNumPartitions() == len(name_of_file)
    # The parts of the capture share one trace id: one trace.
    assert df.where(F.col("file").contains("cap.")).select("trace").distinct().count() == 1
    mapping = F.create_map(*[F.lit(x) for kv in name_of_file.items() for x in kv])
    via_source = figures(spark, df.withColumn("name", mapping[F.col("file")]))

    frames = []
    for name, paths in traces.items():
        out = tmp_path / f"ds-{name}"
        parquet.write_dataset(paths, str(out), ("device", "hour"))
        frames.append(spark.read.parquet(str(out)).withColumn("name", F.lit(name)))
    union = frames[0]
    for f in frames[1:]:
        union = union.unionByName(f)
    via_parquet = figures(spark, union)

    assert via_source == via_parquet
    for name, paths in traces.items():
        r = report(paths)
        mine = {d: v for (n, d), v in via_source.items() if n == name}
        assert len(mine) == r["devices"] == 1
        (v,) = mine.values()
        assert v["ios"] == r["ios"] > 0
        assert v["bytes_read"] == r["bytes_read"] and v["bytes_written"] == r["bytes_written"]
        assert v["busy_ns"] == r["busy_time_ns"]
    print(f"\nspark: data source and parquet over {len(name_of_file)} files, "
          f"{sum(v['ios'] for v in via_source.values())} IOs: {time.monotonic() - started:.1f} s")


def test_truncated_file_through_the_data_source(spark, truncated_trace):
    from iotape.spark import register
    _, cut = truncated_trace
    register(spark)
    with pytest.raises(Exception) as err:
        spark.read.format("iotape").load(str(cut)).count()
    assert "TraceError" in str(err.value) and f"{cut}: byte" in str(err.value)
