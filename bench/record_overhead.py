#!/usr/bin/env python3
"""Capture overhead of `iotape record` against untraced runs and peer tracers.

fio 4 KiB random reads, QD32, io_uring, direct, on a loop device over a
/dev/shm file. Each round runs, for every tracer, an untraced fio run and a
traced one back to back; the IOPS ratio traced/untraced of each pair is
reported as a median over the rounds (2 shared cores are noisy: only ratios
from one run mean anything). Also reported: events dropped, the trace's bytes
per IO, the recorder's process CPU per IO, and the BPF programs' run time
(kernel.bpf_stats_enabled, extra runs).

Peers: bpftrace with a (dev, sector)-keyed map printing one line per IO
(libbpf-tools biosnoop cannot attach on kernels without blk_account_io_start),
and the ftrace blk tracer with a text trace_pipe reader.

The floor: bench/hook_floor attaches programs that do nothing to the three
tracepoints iotape's eBPF back end uses ("hooks"), then programs that only read
the clock once each, as iotape's do ("hooks+clock"). Their ratios bound what
any tracer with a timestamp per event on those hooks can reach here.

iotape-blktrace-dc is the blktrace back end with `--blk-events issue-complete`,
against ftrace-blk-floor-dc: the blk tracer's floor with the same act_mask.

The recorder's CPU per IO counts what it used from the moment it said it was
recording until it exited (its start-up, loading the BPF programs, is not per
IO).

Usage: bench/record_overhead.py --iotape BUILD/cli/iotape [--hook-floor BUILD/bench/hook_floor]
       [--rounds 5] [--runtime 5] [--tracers NAME ...]
Needs root, fio, bpftrace. Cleans up its loop device, files and tracer settings.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

TRACEFS = "/sys/kernel/tracing"


def sh(cmd):
    return subprocess.run(cmd, shell=True, check=True, capture_output=True, text=True).stdout.strip()


def write(path, value):
    with open(path, "w") as f:
        f.write(value)


def fio(dev, runtime):
    out = sh(f"fio --name=bench --filename={dev} --direct=1 --ioengine=io_uring --rw=randread --bs=4k "
             f"--iodepth=32 --thread --time_based --runtime={runtime} --output-format=json")
    job = json.loads(out[out.index("{"):])["jobs"][0]["read"]
    return job["iops"], job["total_ios"]


def wait_for(path, needle, proc, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path) and needle in open(path, errors="replace").read():
            return
        if proc.poll() is not None:
            raise RuntimeError(f"tracer exited early: {open(path, errors='replace').read()}")
        time.sleep(0.05)
    raise RuntimeError(f"tracer did not start: {open(path, errors='replace').read()}")


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_cpu_seconds(proc, timeout=60):
    """Waits for `proc` to exit; returns its exit status and its whole CPU time."""
    end = time.time() + timeout
    while time.time() < end:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage.ru_utime + usage.ru_stime
        time.sleep(0.02)
    raise RuntimeError(f"{proc.args[0]} did not exit")


class Iotape:
    """iotape record with one back end (and its extra options); writes its trace to tmpfs."""

    def __init__(self, binary, backend, dev, work, extra=(), suffix=""):
        self.binary, self.backend, self.dev, self.work, self.extra = binary, backend, dev, work, list(extra)
        self.name = f"iotape-{backend}{suffix}"

    def start(self):
        self.trace = os.path.join(self.work, f"{self.name}.iot")
        self.log = os.path.join(self.work, f"{self.name}.log")
        self.proc = subprocess.Popen([self.binary, "record", "-d", self.dev, "-o", self.trace, "--backend",
                                      self.backend] + self.extra, stdout=subprocess.DEVNULL, stderr=open(self.log, "w"))
        wait_for(self.log, "iotape: recording", self.proc)
        self.cpu_at_start = cpu_seconds(self.proc.pid)

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        status, cpu = wait_cpu_seconds(self.proc)
        cpu -= self.cpu_at_start
        if status != 0:
            raise RuntimeError(open(self.log).read())
        info = json.loads(sh(f"{self.binary} info --json {self.trace}"))
        os.unlink(self.trace)
        return {"dropped": info["dropped_events"], "ios": info["ios"], "bytes_per_io": info["bytes_per_io"],
                "cpu_s": cpu}


class FtraceBlkFloor:
    """The floor of the blktrace back end: the blk tracer set up as `record --backend blktrace` sets it
    (boot clock, no cgroup ids), its events written into the ring buffer and never read (the buffer
    overwrites its oldest pages): the kernel's own cost, which no reader can go under. With `mask`,
    only those events (the device's act_mask, as `--blk-events issue-complete` sets it)."""

    def __init__(self, dev, work, mask=None):
        self.disk, self.work, self.mask = os.path.basename(dev), work, mask
        self.name = "ftrace-blk-floor" + ("-dc" if mask else "")

    def start(self):
        if open(f"{TRACEFS}/current_tracer").read().strip() != "nop":
            raise RuntimeError("the ftrace tracer is busy")
        self.clock = open(f"{TRACEFS}/trace_clock").read().split("[")[1].split("]")[0]
        self.cgroup = open(f"{TRACEFS}/options/blk_cgroup").read().strip()
        write(f"{TRACEFS}/trace_clock", "boot")
        write(f"{TRACEFS}/options/blk_cgroup", "0")
        write(f"/sys/block/{self.disk}/trace/enable", "1")
        if self.mask:
            write(f"/sys/block/{self.disk}/trace/act_mask", self.mask)  # gone with the device's tracing
        write(f"{TRACEFS}/current_tracer", "blk")

    def stop(self):
        write(f"{TRACEFS}/current_tracer", "nop")
        write(f"/sys/block/{self.disk}/trace/enable", "0")
        write(f"{TRACEFS}/options/blk_cgroup", self.cgroup)
        write(f"{TRACEFS}/trace_clock", self.clock)
        write(f"{TRACEFS}/trace", "")
        return {"dropped": None, "ios": 0, "cpu_s": 0}


class HookFloor:
    """bench/hook_floor: iotape's three tracepoints with empty programs, or with one clock read each."""

    def __init__(self, binary, clock, work):
        self.binary, self.clock, self.work = binary, clock, work
        self.name = "hooks+clock" if clock else "hooks"

    def start(self):
        self.log = os.path.join(self.work, f"{self.name}.log")
        self.proc = subprocess.Popen([self.binary] + (["--clock"] if self.clock else []),
                                     stdout=open(self.log, "w"), stderr=subprocess.STDOUT)
        wait_for(self.log, "hook_floor: attached", self.proc)

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(60)
        return {"dropped": None, "ios": 0, "cpu_s": 0}


class Bpftrace:
    """bpftrace: issue time in a map keyed by (dev, sector), one printed line per completed IO."""

    name = "bpftrace"

    def __init__(self, dev, work):
        st = os.stat(dev)
        self.devt = (os.major(st.st_rdev) << 20) | os.minor(st.st_rdev)
        self.work = work

    def start(self):
        prog = (f"tracepoint:block:block_rq_issue /args->dev == {self.devt}/ "
                "{ @start[args->dev, args->sector] = nsecs; }\n"
                "tracepoint:block:block_rq_complete /@start[args->dev, args->sector]/ "
                "{ printf(\"%d %d %d %d\\n\", pid, args->sector, args->nr_sector, "
                "nsecs - @start[args->dev, args->sector]); delete(@start[args->dev, args->sector]); }")
        self.out = os.path.join(self.work, "bpftrace.out")
        self.proc = subprocess.Popen(["bpftrace", "-e", prog], stdout=open(self.out, "w"), stderr=subprocess.STDOUT)
        wait_for(self.out, "Attaching", self.proc)
        self.cpu_at_start = cpu_seconds(self.proc.pid)

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        _, cpu = wait_cpu_seconds(self.proc)
        cpu -= self.cpu_at_start
        lost, ios = 0, 0
        with open(self.out, errors="replace") as f:
            for line in f:
                if line.startswith("Lost "):
                    lost += int(line.split()[1])
                else:
                    ios += 1
        os.unlink(self.out)
        return {"dropped": lost, "ios": ios, "cpu_s": cpu}


class FtraceBlk:
    """The ftrace blk tracer with a text trace_pipe reader (cat to a tmpfs file)."""

    name = "ftrace-blk"

    def __init__(self, dev, work):
        self.disk, self.work = os.path.basename(dev), work

    def start(self):
        if open(f"{TRACEFS}/current_tracer").read().strip() != "nop":
            raise RuntimeError("the ftrace tracer is busy")
        write(f"/sys/block/{self.disk}/trace/enable", "1")
        write(f"{TRACEFS}/current_tracer", "blk")
        self.out = os.path.join(self.work, "ftrace.out")
        self.proc = subprocess.Popen(["cat", f"{TRACEFS}/trace_pipe"], stdout=open(self.out, "w"))

    def stop(self):
        self.proc.terminate()
        _, cpu = wait_cpu_seconds(self.proc)
        write(f"{TRACEFS}/current_tracer", "nop")
        write(f"/sys/block/{self.disk}/trace/enable", "0")
        ios = sum(1 for line in open(self.out, errors="replace") if "  C  " in line)
        os.unlink(self.out)
        return {"dropped": None, "ios": ios, "cpu_s": cpu}


def bpf_ns_per_run(tracer, dev, runtime):
    """Run time per invocation of each BPF program `tracer` attaches, from the
    kernel's BPF statistics (which add their own clock reads to every run)."""
    old = open("/proc/sys/kernel/bpf_stats_enabled").read().strip()
    write("/proc/sys/kernel/bpf_stats_enabled", "1")
    try:
        before = {p["id"] for p in json.loads(sh("bpftool prog show --json"))}
        tracer.start()
        try:
            fio(dev, runtime)
            progs = json.loads(sh("bpftool prog show --json"))
        finally:
            tracer.stop()
        return {p["name"]: p["run_time_ns"] / p["run_cnt"] for p in progs
                if p["id"] not in before and p.get("run_cnt")}
    finally:
        write("/proc/sys/kernel/bpf_stats_enabled", old)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iotape", required=True)
    ap.add_argument("--hook-floor", help="bench/hook_floor (default: beside the iotape binary's build tree)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runtime", type=int, default=5, help="seconds per fio run")
    ap.add_argument("--tracers", nargs="+", metavar="NAME",
                    help="only these: iotape-ebpf iotape-blktrace iotape-blktrace-dc bpftrace ftrace-blk "
                         "ftrace-blk-floor ftrace-blk-floor-dc hooks hooks+clock")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root")
    hook_floor = a.hook_floor or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(a.iotape))),
                                              "bench", "hook_floor")
    if not os.access(hook_floor, os.X_OK):
        sys.exit(f"{hook_floor}: not found (build the hook_floor target or pass --hook-floor)")
    if not os.path.exists(f"{TRACEFS}/trace_pipe"):
        sh(f"mount -t tracefs nodev {TRACEFS}")

    work = tempfile.mkdtemp(prefix="iotape-bench-", dir="/dev/shm")
    backing = os.path.join(work, "disk")
    write(backing, "")
    os.truncate(backing, 1 << 30)
    dev = sh(f"losetup -f --show {backing}")
    try:
        tracers = [Iotape(a.iotape, "ebpf", dev, work), Iotape(a.iotape, "blktrace", dev, work),
                   Iotape(a.iotape, "blktrace", dev, work, ["--blk-events", "issue-complete"], "-dc"),
                   Bpftrace(dev, work), FtraceBlk(dev, work), FtraceBlkFloor(dev, work),
                   FtraceBlkFloor(dev, work, "issue,complete"), HookFloor(hook_floor, False, work),
                   HookFloor(hook_floor, True, work)]
        if a.tracers:
            unknown = set(a.tracers) - {t.name for t in tracers}
            if unknown:
                sys.exit(f"unknown tracers: {', '.join(sorted(unknown))}")
            tracers = [t for t in tracers if t.name in a.tracers]
        results = {t.name: [] for t in tracers}
        fio(dev, 2)  # warm up
        for r in range(a.rounds):
            for t in tracers:
                base, _ = fio(dev, a.runtime)
                t.start()
                try:
                    traced, fio_ios = fio(dev, a.runtime)
                finally:
                    extra = t.stop()
                results[t.name].append({"base": base, "traced": traced, "ratio": traced / base, **extra})
                print(f"round {r + 1} {t.name:16s} untraced {base:9.0f} IOPS  traced {traced:9.0f} IOPS  "
                      f"ratio {traced / base:.3f}  dropped {extra['dropped']}", flush=True)
        names = {t.name for t in tracers}
        bpf_stats = {"iotape-ebpf", "hooks+clock"} <= names
        if bpf_stats:
            bpf_iotape = bpf_ns_per_run(Iotape(a.iotape, "ebpf", dev, work), dev, a.runtime)
            bpf_floor = bpf_ns_per_run(HookFloor(hook_floor, True, work), dev, a.runtime)
        print()
        print(f"{'tracer':16s} {'median ratio':>12s} {'untraced IOPS':>14s} {'traced IOPS':>12s} {'dropped':>8s} "
              f"{'proc CPU/IO':>12s} {'bytes/IO':>9s}")
        for name, rows in results.items():
            dropped = [x["dropped"] for x in rows]
            ios = sum(x["ios"] for x in rows)
            cpu = f"{sum(x['cpu_s'] for x in rows) / ios * 1e9:10.0f}ns" if ios else f"{'n/a':>12s}"
            bpi = [x["bytes_per_io"] for x in rows if "bytes_per_io" in x]
            print(f"{name:16s} {statistics.median(x['ratio'] for x in rows):12.3f} "
                  f"{statistics.median(x['base'] for x in rows):14.0f} "
                  f"{statistics.median(x['traced'] for x in rows):12.0f} "
                  f"{'n/a' if None in dropped else sum(dropped):>8} {cpu} "
                  f"{statistics.median(bpi) if bpi else float('nan'):9.2f}")
        # Each back end against the floor of its kernel interface, round by round.
        for name, floor in (("iotape-ebpf", "hooks+clock"), ("iotape-blktrace", "ftrace-blk-floor"),
                            ("iotape-blktrace-dc", "ftrace-blk-floor-dc")):
            if name in results and floor in results:
                per_round = [x["ratio"] / f["ratio"] for x, f in zip(results[name], results[floor])]
                print(f"{name} / {floor}: {statistics.median(per_round):.3f} (median of the rounds' ratios)")
        if bpf_stats:
            rows = results["iotape-ebpf"]
            user = sum(x["cpu_s"] for x in rows) / sum(x["ios"] for x in rows) * 1e9
            print(f"iotape-ebpf capture CPU per IO: recorder process {user:.0f} ns + BPF programs "
                  f"{sum(bpf_iotape.values()):.0f} ns = {user + sum(bpf_iotape.values()):.0f} ns "
                  f"(the floor's programs: {sum(bpf_floor.values()):.0f} ns)")
            print()
            print("BPF run time per invocation (kernel.bpf_stats_enabled runs; hooks+clock = the statistics' own "
                  "cost plus one clock read):")
            for name in sorted(bpf_iotape):
                print(f"  {name:24s} iotape-ebpf {bpf_iotape[name]:6.0f} ns   hooks+clock {bpf_floor.get(name, float('nan')):6.0f} ns")
            print(f"  {'per IO (sum)':24s} iotape-ebpf {sum(bpf_iotape.values()):6.0f} ns   "
                  f"hooks+clock {sum(bpf_floor.values()):6.0f} ns")
    finally:
        sh(f"losetup -d {dev}")
        sh(f"rm -rf {work}")


if __name__ == "__main__":
    main()
