#!/usr/bin/env python3
"""Where the CPU of `iotape replay --times device` goes, beside `--times user`.

Replays N 4 KiB random reads (default 2M) afap at QD32 onto a tmpfs-backed
loop device twice, once with each --times, under `perf record -a` (every CPU:
the BPF programs run wherever the block layer does, in iotape's issue thread,
in the loop device's workers and in interrupts), and splits the samples into:

- bpf: the observer's BPF programs and the kernel's calls into them
  (bpf_prog_*, bpf_trace_run*, __bpf_trace_*, the ring buffer helpers);
- consumer: the observer's ring consumer in user space (libbpf, the back
  end's poll);
- join: matching the observer's request times to the replay's IOs
  (replay::DeviceTimes, its map of pieces and their pool: libstdc++'s
  red-black tree and pool functions, which nothing else in a replay calls);
- iotape other: the rest of iotape's own user-space code;
- iotape kernel: the kernel on iotape's threads, less bpf (io_uring, the block
  layer, and the loop device's tmpfs copy where it runs inline);
- elsewhere: other tasks' time (the loop device's workers, interrupts);
  idle CPUs (perf's "swapper") are left out.

Each as CPU time per replayed IO (samples / perf's frequency / IOs), and the
difference device - user. Needs root, perf, and the build's iotape and
replay_gen:
  bench/device_times_cost.py BUILD_DIR [--ios N] [--freq HZ]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

BPF = re.compile(r"^(bpf_prog_|bpf_trace_run|__bpf_trace_|__bpf_prog_(enter|exit)|bpf_ringbuf_|__bpf_ringbuf_|"
                 r"bpf_get_current_|bpf_ktime_get_|bpf_map_lookup|htab_map_|__htab_map_)")
JOIN = re.compile(r"iotape::replay::DeviceTimes|iotape::replay::\(anonymous namespace\)::Piece")
CONSUMER = re.compile(r"iotape::observer::")
CATEGORIES = ["bpf", "consumer", "join", "iotape other", "iotape kernel", "elsewhere"]


def category(comm, dso, sym):
    if comm == "swapper":
        return None
    if BPF.match(sym) or dso.startswith("bpf_prog_"):
        return "bpf"
    if comm != "iotape":
        return "elsewhere"
    if "libbpf" in dso or CONSUMER.search(sym):
        return "consumer"
    if JOIN.search(sym) or ("libstdc++" in dso and ("_Rb_tree" in sym or "pmr::" in sym)):
        return "join"
    return "iotape kernel" if dso.startswith("[kernel") else "iotape other"


def split(perf_data):
    """Samples per category, from perf's per-(comm, dso, symbol) sample counts."""
    out = subprocess.run(["perf", "report", "-i", perf_data, "--no-children", "--sort", "comm,dso,sym", "-g", "none",
                          "--stdio", "--percent-limit", "0", "-F", "sample,comm,dso,sym", "--field-separator", "\t"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True).stdout
    counts = dict.fromkeys(CATEGORIES, 0)
    for line in out.splitlines():
        if not line or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) < 4:
            continue
        samples, comm, dso, sym = int(fields[0]), fields[1].strip(), fields[2].strip(), fields[3].strip()
        sym = re.sub(r"^\[[.k]\]\s+", "", sym)
        part = category(comm, dso, sym)
        if part:
            counts[part] += samples
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--ios", type=int, default=2_000_000)
    ap.add_argument("--freq", type=int, default=4000, help="perf's sampling frequency per CPU")
    args = ap.parse_args()
    iotape = os.path.join(args.build, "cli", "iotape")
    gen = os.path.join(args.build, "bench", "replay_gen")
    with tempfile.TemporaryDirectory(prefix="iotape-devtimes-") as work:
        disk = tempfile.NamedTemporaryFile(dir="/dev/shm", prefix="iotape-devtimes-", delete=False).name
        os.truncate(disk, 1 << 30)
        loop = subprocess.run(["losetup", "-f", "--show", disk], stdout=subprocess.PIPE, text=True,
                              check=True).stdout.strip()
        try:
            subprocess.run(["dd", "if=/dev/urandom", f"of={loop}", "bs=1M", "count=1024", "oflag=direct",
                            "status=none"], check=True)
            trace = os.path.join(work, "afap.iot")
            subprocess.run([gen, trace, "--ios", str(args.ios), "--iops", "1000000", "--span", str(1 << 30)],
                           stdout=subprocess.DEVNULL, check=True)
            per_io = {}
            for times in ("user", "device"):
                data = os.path.join(work, f"{times}.perf")
                subprocess.run(["perf", "record", "-a", "-F", str(args.freq), "-o", data, "--", iotape, "replay",
                                trace, "--target", loop, "--timing", "afap", "--qd", "32", "--times", times,
                                "--force", "-o", os.path.join(work, f"{times}.iot")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
                per_io[times] = {k: v / args.freq * 1e9 / args.ios for k, v in split(data).items()}
        finally:
            subprocess.run(["losetup", "-d", loop], check=False)
            os.unlink(disk)
    print(f"CPU per replayed IO, ns ({args.ios} 4 KiB random reads, afap QD32, tmpfs loop device; "
          f"perf -a at {args.freq} Hz)")
    print(f"{'part':<16}{'--times user':>14}{'--times device':>16}{'difference':>12}")
    for k in CATEGORIES + ["total"]:
        u = sum(per_io["user"].values()) if k == "total" else per_io["user"][k]
        d = sum(per_io["device"].values()) if k == "total" else per_io["device"][k]
        print(f"{k:<16}{u:>14.0f}{d:>16.0f}{d - u:>12.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
