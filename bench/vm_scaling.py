#!/usr/bin/env python3
"""How afap replay scales from one issue thread to two, beside fio, where
this machine can show it: a Debian kernel booted under QEMU (the VM harness,
tests/vm/run.py) with 2 vCPUs, each on a host thread of its own, and
null_blk, whose completions cost no device time (irqmode=0: completed
inline, in the submitting thread; or irqmode=2: by a timer, --irqmode 2).
In the guest (tests/vm/guest-scaling.sh), 4 KiB random reads at queue depth
32 in total, alternating, --rounds times:

- fio io_uring, numjobs 1 (iodepth 32) and 2 (iodepth 16 each);
- iotape replay --timing afap --qd 32 --times user of a trace of --ios such
  reads (bench/replay_gen), --threads 1 and 2;

With --poll, null_blk gets poll queues (poll_queues=2) and both tools poll
for completions instead of waiting for them: fio with --hipri, iotape with
--iopoll (io_uring IOPOLL). The same runs then measure the polled path, as
on an NVMe drive with poll queues.

And prints each run (IOPS, CPU per IO, and the CPUs that kept busy: IOPS x
CPU per IO), the medians of IOPS and CPU per IO (fio: usr+sys of its jobs;
iotape: its own `cpu` line, all its threads, and its issue threads apart:
a replay also decodes the trace and writes the result on threads of its
own), and each tool's 2-thread/1-thread IOPS ratio. The vCPUs are emulated (TCG): absolute figures are the
emulator's, tens of times below a real CPU's; the ratios are the point.

  bench/vm_scaling.py [--iotape build-static/cli/iotape] [--build-dir build] [--kernel 6.12]
                      [--ios 200000] [--rounds 3] [--irqmode 0] [--poll]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "vm"))
import run as vm  # noqa: E402  (the VM harness: kernels, initramfs, boot)


def joined(values, spec="{:.0f}"):
    return " ".join(spec.format(v) for v in values)


def parse(lines):
    """{(tool, threads): [per-round {iops, cpu_ns}]} from the guest's lines."""
    runs = {}
    for line in lines:
        parts = line.split(" ", 6)
        if len(parts) < 7 or parts[1] != "scaling":
            continue
        _, _, tool, threads, rnd, key, value = parts
        r = runs.setdefault((tool, int(threads)), {}).setdefault(int(rnd), {"lines": []})
        if key == "rc":
            r["rc"] = int(value)
        elif key == "json":
            jobs = json.loads(value)["jobs"]
            ios = sum(j["read"]["total_ios"] for j in jobs)
            r["iops"] = sum(j["read"]["iops"] for j in jobs)
            r["cpu_ns"] = sum((j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] * 1e6 for j in jobs) / ios
        elif key == "line":
            r["lines"].append(value)
    for (tool, _), rounds in runs.items():
        if tool != "iotape":
            continue
        for r in rounds.values():
            for l in r["lines"]:
                f = l.split()
                if f[:2] == ["replayed", f[1]] and f[2] == "IOs,":
                    r["ios"] = int(f[1])
                elif f[:1] == ["result"]:
                    r["seconds"] = float(f[2].strip("()s"))
                elif f[:2] == ["cpu", "replayer"]:
                    r["cpu_ns"] = float(f[2])
                    r["issue_cpu_ns"] = float(f[f.index("threads") + 1].rstrip(";"))
            if "ios" in r and "seconds" in r:
                r["iops"] = r["ios"] / r["seconds"]
    return {k: [v[i] for i in sorted(v)] for k, v in runs.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iotape", default=os.path.join(ROOT, "build-static", "cli", "iotape"),
                   help="the iotape binary run in the guest (the static one needs no libraries there)")
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"), help="build tree: replay_gen, vm-cache")
    p.add_argument("--kernel", default="6.12", choices=sorted(vm.KERNELS))
    p.add_argument("--ios", type=int, default=200000, help="IOs per run")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--irqmode", type=int, default=0, choices=(0, 2),
                   help="null_blk completions: 0 inline, 2 by a timer (10 us)")
    p.add_argument("--poll", action="store_true",
                   help="polled completions: null_blk poll queues, fio --hipri, iotape --iopoll")
    p.add_argument("--timeout", type=int, default=1800)
    a = p.parse_args()
    build = os.path.abspath(a.build_dir)
    cache = os.path.join(build, "vm-cache")
    work = os.path.join(cache, "work", f"scaling-{a.kernel}")
    os.makedirs(work, exist_ok=True)
    apt = vm.Apt(os.path.join(cache, "apt"))
    apt.update()
    name = vm.newest_kernel(apt, a.kernel, "cloud")
    kernel = vm.Kernel(vm.extract(vm.fetch_deb(apt, name, os.path.join(cache, "debs")),
                                  os.path.join(cache, "kernels", name)))
    trace = os.path.join(work, "afap.iotape")
    subprocess.run([os.path.join(build, "bench", "replay_gen"), trace, "--ios", str(a.ios), "--iops", "1000000",
                    "--span", str(1 << 30)], check=True, stdout=subprocess.DEVNULL)
    params = {"null_blk": f"irqmode={a.irqmode} submit_queues=2 completion_nsec=10000" +
                          (" poll_queues=2" if a.poll else "")}
    initramfs = vm.build_initramfs(kernel, ["nullb"], vm.static_busybox(apt, cache), os.path.abspath(a.iotape), work,
                                   files={"/afap.iotape": trace}, params=params)
    vm.log(f"booting {kernel.release}: 2 vCPUs on 2 host threads, null_blk {params['null_blk']}, "
           f"{a.rounds} rounds of {a.ios} IOs")
    lines, error, seconds = vm.boot(kernel, initramfs, ["nullb"], [], 0, work, a.timeout, threads="multi",
                                    extra=f"iotape.mode=scaling iotape.rounds={a.rounds} iotape.ios={a.ios} "
                                          f"iotape.poll={int(a.poll)}")
    if error:
        sys.exit(f"vm_scaling: {error}")
    runs = parse(lines)
    io_poll = next((l.split()[-1] for l in lines if " - - io_poll " in l), "?")
    if a.poll and io_poll != "1":
        sys.exit(f"vm_scaling: null_blk's queue/io_poll is {io_poll}, not 1: no poll queues")
    print(f"kernel {kernel.release}, 2 vCPUs (TCG, a host thread each), null_blk irqmode={a.irqmode}"
          f"{' with poll queues, completions polled (fio --hipri, iotape --iopoll)' if a.poll else ''}; "
          f"4 KiB random reads at QD32 in total, {a.ios} IOs per run; {seconds:.0f} s in the VM")
    medians = {}
    for tool in ("fio", "iotape"):
        for t in (1, 2):
            rounds = runs.get((tool, t), [])
            bad = [r for r in rounds if r.get("rc") != 0 or "iops" not in r]
            if not rounds or bad:
                sys.exit(f"vm_scaling: {tool} on {t} thread(s) failed: {bad or 'no result'}")
            iops = [r["iops"] for r in rounds]
            cpu = [r["cpu_ns"] for r in rounds]
            medians[tool, t] = (statistics.median(iops), statistics.median(cpu))
            issue = ""
            if tool == "iotape":
                issue = " (its issue threads " + joined(r["issue_cpu_ns"] for r in rounds) + ")"
            busy = joined((r["iops"] * r["cpu_ns"] / 1e9 for r in rounds), "{:.2f}")
            print(f"{tool:<6} {t} thread(s): IOPS {joined(iops)}; CPU per IO {joined(cpu)} ns{issue}; CPUs busy {busy}")
    for tool in ("fio", "iotape"):
        (i1, c1), (i2, c2) = medians[tool, 1], medians[tool, 2]
        print(f"median {tool:<6}: 1 thread {i1:.0f} IOPS {c1:.0f} ns CPU per IO; 2 threads {i2:.0f} IOPS "
              f"{c2:.0f} ns CPU per IO; 2/1 IOPS ratio {i2 / i1:.3f}")
    f = medians["fio", 2][0] / medians["fio", 1][0]
    i = medians["iotape", 2][0] / medians["iotape", 1][0]
    print(f"scaling: iotape 2/1 {i:.3f}, fio 2/1 {f:.3f}: iotape's is {i / f:.3f}x fio's; "
          f"at 2 threads iotape {medians['iotape', 2][0] / medians['fio', 2][0]:.3f}x fio's IOPS")


if __name__ == "__main__":
    main()
