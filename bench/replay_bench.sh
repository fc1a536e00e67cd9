#!/bin/bash
# Replay benchmarks, each against fio on the same device in the same run (the
# machine is shared and noisy: compare within a run, as ratios).
#
#   bench/replay_bench.sh BUILD_DIR [afap|threads|rings|timed|all]
#
# afap:  4 KiB random reads at QD32 and QD1 on a tmpfs-backed loop device:
#        iotape replay --timing afap --qd N (--times device and --times user)
#        vs fio io_uring randread, IOPS and CPU per IO (usr+sys; fio's from
#        its JSON), 5 rounds, alternating, medians; and --times device vs fio
#        with bench/hook_floor --clock attached (the observer's hook floor);
#        then the threads part.
# threads: (also part of afap) 4 KiB random reads at QD32 in total on one and
#        on two issue threads: fio numjobs=1 iodepth=32 and numjobs=2
#        iodepth=16 against iotape --threads 1 and --threads 2 --qd 32
#        (--times user, and --times device as iotape-device), 5 rounds,
#        alternating, medians of IOPS and CPU per IO, and each tool's
#        2-thread/1-thread ratio.
# rings: 4 KiB random reads at QD32 and QD1, each tool with and without a
#        kernel submission thread (io_uring SQPOLL): iotape --times user
#        with and without --sqpoll, fio with and without --sqthread_poll,
#        5 rounds, alternating, medians of IOPS and CPU per IO (the
#        submission thread's CPU included: it is a thread of the process).
#        A loop device has no poll queues, so IOPOLL is measured in a VM
#        (bench/vm_scaling.py --poll).
# timed: traces of evenly spaced 4 KiB reads at 10K, 50K and 100K IOPS,
#        replayed with original timing by iotape and, as a fio iolog v3, by
#        fio. Issue-time error per IO is measured for both tools alike by a
#        bpftrace probe on io_uring_submit_req: submit time minus (first
#        submit + k / rate). Also the total duration of each replay.
# BACKING=disk puts the loop device over a file on /var/tmp's disk with
# direct IO, whose service time is not this machine's CPU (the default, a
# tmpfs file, is served by the loop device's worker on the CPUs the tools
# use). Needs root, fio, bpftrace, python3. Cleans up its loop device and files
# (KEEP=DIR copies the work files there first). IDLE_POLL_NS=N: idle vCPUs
# poll N ns before halting during the run (bench/idle_poll.sh says why).
set -euo pipefail
. "$(dirname "$0")/idle_poll.sh"
B=$(realpath "${1:?usage: $0 BUILD_DIR [afap|threads|rings|timed|all]}")
WHAT=${2:-all}
IOTAPE=$B/cli/iotape
GEN=$B/bench/replay_gen
HOOK_FLOOR=$B/bench/hook_floor
W=$(mktemp -d /tmp/iotape-replay-bench-XXXXXX)
case ${BACKING:-tmpfs} in
  tmpfs) DISK=$(mktemp /dev/shm/iotape-replay-bench-XXXXXX); DIRECT_IO=off ;;
  disk) DISK=$(mktemp /var/tmp/iotape-replay-bench-XXXXXX); DIRECT_IO=on ;;
  *) echo "BACKING=${BACKING}: tmpfs or disk" >&2; exit 2 ;;
esac
truncate -s 1G "$DISK"
LOOP=$(losetup -f --show --direct-io=$DIRECT_IO "$DISK")
BPF_PID=
FLOOR_PID=
cleanup() {
  idle_poll_restore
  [ -n "$BPF_PID" ] && kill "$BPF_PID" 2>/dev/null && wait "$BPF_PID" 2>/dev/null
  [ -n "$FLOOR_PID" ] && kill "$FLOOR_PID" 2>/dev/null && wait "$FLOOR_PID" 2>/dev/null
  losetup -d "$LOOP"
  rm -f "$DISK"
  rm -rf "$W"
}
trap cleanup EXIT
idle_poll_apply
[ -n "${KEEP:-}" ] && trap "cp -r $W/. $KEEP/; cleanup" EXIT
# Data in every block, so reads are not of holes.
dd if=/dev/urandom of="$LOOP" bs=1M count=1024 oflag=direct status=none
echo "device $LOOP on $DISK (direct IO $DIRECT_IO); load: $(cut -d' ' -f1-3 /proc/loadavg); $(idle_poll_describe)"

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# fio's afap run of $N 4 KiB random reads at depth $QD, its JSON in fio.json.
fio_afap() {
  nice -n -20 fio --name=afap --filename="$LOOP" --ioengine=io_uring --direct=1 --rw=randread --bs=4k \
    --iodepth=$QD --fixedbufs --registerfiles --number_ios=$N --size=1G --norandommap --randrepeat=0 \
    --output-format=json > "$W/fio.json"
}

if [ "$WHAT" = afap ] || [ "$WHAT" = all ]; then
  for QD in 32 1; do
    N=$((QD == 1 ? 150000 : 400000))
    "$GEN" "$W/afap.iotape" --ios $N --iops 1000000 --span $((1 << 30)) > /dev/null
    rm -f "$W"/*.iops "$W"/*.cpu
    for round in 1 2 3 4 5; do
      # device: the result timed at the block layer by the eBPF observer (the
      # default where BPF runs), which costs the hooks' share; user: the
      # replayer alone.
      for TIMES in device user; do
        nice -n -20 "$IOTAPE" replay "$W/afap.iotape" --target "$LOOP" -o "$W/afap-result.iotape" --timing afap \
          --qd $QD --max-idle 0 --times $TIMES > "$W/out.txt"
        awk -v n=$N '/^result/ {gsub(/[(]/, "", $3); print n / $3}' "$W/out.txt" >> "$W/iotape-$TIMES.iops"
        awk '/^cpu/ {print $3}' "$W/out.txt" >> "$W/iotape-$TIMES.cpu"
      done
      # fio with bench/hook_floor --clock attached: programs that only read
      # the clock on the observer's three tracepoints, the most a replay
      # timed at the device can reach here (its floor, as in record_overhead.py).
      "$HOOK_FLOOR" --clock > "$W/hook_floor.log" 2>&1 &
      FLOOR_PID=$!
      until grep -q "hook_floor: attached" "$W/hook_floor.log"; do
        kill -0 $FLOOR_PID 2>/dev/null || { cat "$W/hook_floor.log" >&2; exit 1; }
        sleep 0.1
      done
      fio_afap
      kill -INT $FLOOR_PID
      wait $FLOOR_PID || true
      FLOOR_PID=
      python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"][0]["read"]["iops"])' "$W/fio.json" >> "$W/fio-hooks.iops"
      fio_afap
      python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"][0]["read"]["iops"])' "$W/fio.json" >> "$W/fio.iops"
      # fio's CPU: usr + sys percent of the job's run time, per IO.
      python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]
print((j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] * 1e6 / j["read"]["total_ios"])' "$W/fio.json" >> "$W/fio.cpu"
    done
    F=$(median < "$W/fio.iops"); FC=$(median < "$W/fio.cpu")
    echo "afap 4K randread QD$QD: fio $(paste -sd' ' "$W/fio.iops") IOPS"
    for TIMES in device user; do
      I=$(median < "$W/iotape-$TIMES.iops"); IC=$(median < "$W/iotape-$TIMES.cpu")
      echo "afap 4K randread QD$QD: iotape --times $TIMES $(paste -sd' ' "$W/iotape-$TIMES.iops") IOPS"
      python3 -c "print('afap QD$QD median: iotape --times $TIMES %.0f IOPS, fio %.0f IOPS, ratio %.3f; CPU per IO iotape %.0f ns, fio %.0f ns' % ($I, $F, $I / $F, $IC, $FC))"
    done
    FH=$(median < "$W/fio-hooks.iops"); I=$(median < "$W/iotape-device.iops")
    echo "afap 4K randread QD$QD: fio with the hooks+clock floor attached $(paste -sd' ' "$W/fio-hooks.iops") IOPS"
    python3 -c "print('afap QD$QD median: iotape --times device %.0f IOPS, fio under the hooks+clock floor %.0f IOPS, ratio %.3f' % ($I, $FH, $I / $FH))"
  done
fi

# fio's afap run of $N 4 KiB random reads over $JOBS jobs of depth $QD each:
# prints the jobs' IOPS and CPU per IO (usr + sys of each job's run time).
fio_jobs() {
  nice -n -20 fio --name=threads --filename="$LOOP" --ioengine=io_uring --direct=1 --rw=randread --bs=4k \
    --iodepth=$QD --numjobs=$JOBS --fixedbufs --registerfiles --number_ios=$((N / JOBS)) --size=1G --norandommap \
    --randrepeat=0 --output-format=json > "$W/fio.json"
  python3 -c 'import json,sys; jobs=json.load(open(sys.argv[1]))["jobs"]
iops = sum(j["read"]["iops"] for j in jobs)
cpu = sum((j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] * 1e6 for j in jobs)
print(iops, cpu / sum(j["read"]["total_ios"] for j in jobs))' "$W/fio.json"
}

if [ "$WHAT" = afap ] || [ "$WHAT" = threads ] || [ "$WHAT" = all ]; then
  N=400000
  "$GEN" "$W/threads.iotape" --ios $N --iops 1000000 --span $((1 << 30)) > /dev/null
  rm -f "$W"/threads-*
  for round in 1 2 3 4 5; do
    for T in 1 2; do
      JOBS=$T QD=$((32 / T)) fio_jobs > "$W/fio.out"
      read -r IOPS CPU < "$W/fio.out"
      echo "$IOPS" >> "$W/threads-fio$T.iops"; echo "$CPU" >> "$W/threads-fio$T.cpu"
      for TIMES in user device; do
        TOOL=iotape; [ $TIMES = device ] && TOOL=iotape-device
        nice -n -20 "$IOTAPE" replay "$W/threads.iotape" --target "$LOOP" -o "$W/threads-result.iotape" \
          --timing afap --qd 32 --max-idle 0 --times $TIMES --threads $T > "$W/out.txt" 2> /dev/null
        awk -v n=$N '/^result/ {gsub(/[(]/, "", $3); print n / $3}' "$W/out.txt" >> "$W/threads-$TOOL$T.iops"
        awk '/^cpu/ {print $3}' "$W/out.txt" >> "$W/threads-$TOOL$T.cpu"
      done
    done
  done
  for TOOL in fio iotape iotape-device; do
    for T in 1 2; do
      echo "afap 4K randread QD32 on $T thread(s): $TOOL $(paste -sd' ' "$W/threads-$TOOL$T.iops") IOPS," \
        "$(paste -sd' ' "$W/threads-$TOOL$T.cpu") ns CPU per IO"
    done
    I1=$(median < "$W/threads-${TOOL}1.iops"); I2=$(median < "$W/threads-${TOOL}2.iops")
    C1=$(median < "$W/threads-${TOOL}1.cpu"); C2=$(median < "$W/threads-${TOOL}2.cpu")
    python3 -c "print('afap QD32 median: $TOOL 1 thread %.0f IOPS %.0f ns CPU per IO; 2 threads %.0f IOPS %.0f ns CPU per IO; 2/1 ratio IOPS %.3f, CPU per IO %.3f' % ($I1, $C1, $I2, $C2, $I2 / $I1, $C2 / $C1))"
  done
fi

if [ "$WHAT" = rings ] || [ "$WHAT" = all ]; then
  for QD in 32 1; do
    N=$((QD == 1 ? 100000 : 400000))
    "$GEN" "$W/rings.iotape" --ios $N --iops 1000000 --span $((1 << 30)) > /dev/null
    rm -f "$W"/rings-*
    for round in 1 2 3 4 5; do
      for RING in plain sqpoll; do
        FLAG=; [ $RING = sqpoll ] && FLAG=--sqpoll
        nice -n -20 "$IOTAPE" replay "$W/rings.iotape" --target "$LOOP" -o "$W/rings-result.iotape" --timing afap \
          --qd $QD --max-idle 0 --times user $FLAG > "$W/out.txt" 2> /dev/null
        awk -v n=$N '/^result/ {gsub(/[(]/, "", $3); print n / $3}' "$W/out.txt" >> "$W/rings-iotape-$RING.iops"
        awk '/^cpu/ {print $3}' "$W/out.txt" >> "$W/rings-iotape-$RING.cpu"
        FLAG=; [ $RING = sqpoll ] && FLAG=--sqthread_poll=1
        nice -n -20 fio --name=rings --filename="$LOOP" --ioengine=io_uring --direct=1 --rw=randread --bs=4k \
          --iodepth=$QD --fixedbufs --registerfiles $FLAG --number_ios=$N --size=1G --norandommap --randrepeat=0 \
          --output-format=json > "$W/fio.json"
        python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]
print(j["read"]["iops"], (j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] * 1e6 / j["read"]["total_ios"])' \
          "$W/fio.json" > "$W/fio.out"
        read -r IOPS CPU < "$W/fio.out"
        echo "$IOPS" >> "$W/rings-fio-$RING.iops"; echo "$CPU" >> "$W/rings-fio-$RING.cpu"
      done
    done
    for TOOL in iotape fio; do
      for RING in plain sqpoll; do
        echo "afap 4K randread QD$QD, $RING ring: $TOOL $(paste -sd' ' "$W/rings-$TOOL-$RING.iops") IOPS," \
          "$(paste -sd' ' "$W/rings-$TOOL-$RING.cpu") ns CPU per IO"
      done
      P=$(median < "$W/rings-$TOOL-plain.iops"); S=$(median < "$W/rings-$TOOL-sqpoll.iops")
      PC=$(median < "$W/rings-$TOOL-plain.cpu"); SC=$(median < "$W/rings-$TOOL-sqpoll.cpu")
      python3 -c "print('afap QD$QD median: $TOOL plain %.0f IOPS %.0f ns CPU per IO; sqpoll %.0f IOPS %.0f ns CPU per IO; sqpoll/plain IOPS %.3f' % ($P, $PC, $S, $SC, $S / $P))"
    done
    I=$(median < "$W/rings-iotape-sqpoll.iops"); F=$(median < "$W/rings-fio-sqpoll.iops")
    python3 -c "print('afap QD$QD median, both with a submission thread: iotape/fio IOPS %.3f' % ($I / $F))"
  done
fi

# Runs a command while bpftrace measures the issue-time error of its READ_FIXED
# submissions against an even schedule of RATE per second; prints
# "p50_us p99_us max_us ios".
measure() {
  local rate=$1 comm=$2; shift 2
  local interval=$((1000000000 / rate))
  bpftrace -e "tracepoint:io_uring:io_uring_submit_req /comm == \"$comm\" && args->opcode == 4/ {
      if (@n == 0) { @t0 = nsecs; }
      \$e = (int64)nsecs - (int64)(@t0 + @n * $interval);
      @n = @n + 1;
      \$us = \$e < 0 ? (uint64)0 : (uint64)\$e / 1000;
      @lin = lhist(\$us, 0, 1000, 2);
      @log = hist(\$us);
      @max = max(\$us);
    }" > "$W/bpf.out" 2>&1 &
  BPF_PID=$!
  for _ in $(seq 100); do grep -q Attaching "$W/bpf.out" && break; sleep 0.1; done
  sleep 0.5
  # Both tools alike at the highest priority: the machine may be shared.
  nice -n -20 "$@" > "$W/tool.out" 2>&1
  kill -INT $BPF_PID; wait $BPF_PID || true
  BPF_PID=
  cp "$W/bpf.out" "$W/bpf-$comm.out"
  python3 - "$W/bpf.out" <<'PY'
import re, sys
# @lin: 2 us buckets below 1 ms; @log: power-of-two buckets for the tail.
units = {'': 1, 'K': 1024, 'M': 1024 ** 2, 'G': 1024 ** 3}
lin, log, mx, section = [], [], 0, None
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith('@lin'): section = lin
    elif line.startswith('@log'): section = log
    m = re.match(r'@max: (\d+)', line)
    if m: mx = int(m.group(1))
    m = re.match(r'\[(\d+)([KMG]?)(?:, *(?:\d+[KMG]?|\.\.\.)\)|\])\s+(\d+)', line)
    if m and section is not None:
        section.append((int(m.group(1)) * units[m.group(2)], int(m.group(3))))
total = sum(c for _, c in lin)
def pct(p):
    acc = 0
    for v, c in sorted(lin):
        acc += c
        if acc >= p / 100 * total:
            if v < 1000: return v
            break
    acc = 0
    for v, c in sorted(log):
        acc += c
        if acc >= p / 100 * total: return v
    return mx
print(pct(50), pct(99), mx, total)
PY
}

if [ "$WHAT" = timed ] || [ "$WHAT" = all ]; then
  printf "%-8s %-7s %9s %9s %10s %10s %10s\n" rate tool "p50(us)" "p99(us)" "max(us)" "dur(s)" "intended"
  for RATE in 10000 50000 100000; do
    N=$((RATE * 4))
    "$GEN" "$W/t.iotape" --ios $N --iops $RATE --span $((1 << 30)) --fio-iolog "$W/t.log" --fio-file "$LOOP" > /dev/null
    INTENDED=$(python3 -c "print(($N - 1) / $RATE)")
    read -r P50 P99 MAX CNT < <(measure $RATE iotape "$IOTAPE" replay "$W/t.iotape" --target "$LOOP" \
      -o "$W/t-result.iotape" --timing original --qd 256)
    DUR=$(awk '/^span/ {print $6}' "$W/tool.out")
    SELF=$(awk '/^issue err/ {print "self-measured p50", $4, "p99", $6, "max", $8}' "$W/tool.out")
    printf "%-8s %-7s %9s %9s %10s %10s %10s  (%s IOs; %s)\n" $RATE iotape $P50 $P99 $MAX "$DUR" "$INTENDED" $CNT "$SELF"
    read -r P50 P99 MAX CNT < <(measure $RATE fio fio --name=timed --ioengine=io_uring --direct=1 --fixedbufs \
      --read_iolog="$W/t.log" --iodepth=256 --output-format=json --output="$W/fio.json")
    DUR=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"][0]["job_runtime"] / 1000)' "$W/fio.json")
    printf "%-8s %-7s %9s %9s %10s %10s %10s  (%s IOs)\n" $RATE fio $P50 $P99 $MAX "$DUR" "$INTENDED" $CNT
  done
fi
