#!/bin/bash
# Replay round trip on one device: record fio runs with `iotape record`,
# replay each capture onto the same device with the defaults, and compare.
#
#   bench/replay_roundtrip.sh BUILD_DIR [tmpfs|direct] [ROUNDS]
#
# tmpfs:  a loop device over a file in /dev/shm (its service time is this
#         VM's CPU);
# direct: a loop device over a file on the virtio disk with --direct-io=on
#         (served by the host).
# Runs: 4 KiB random reads at QD1 (full speed), and 70/30 random read/write
# mixes at QD4 (an fsync every 32 writes) and QD32 (every 64), 3 s each.
# Per run and round, two replays of the capture:
#   - under the kernel's blk tracer (ftrace, read after the replay): the
#     result's busy time against the union of the request intervals the
#     tracer saw (independent of iotape's programs);
#   - alone: replayed duration, block-layer read latency p50 and queue-depth
#     buckets against the recording's (all from `iotape report --json`).
# Each fio run is also run and captured a second time: the same application
# again on the same device says how far the device itself repeats a run (its
# duration for the recorded IO count, read p50, queue-depth buckets), the
# floor under any replay's figures.
# Prints one line per run and round, then the medians. Needs root, fio, python3.
# IDLE_POLL_NS=N: idle vCPUs poll N ns before halting during the run
# (bench/idle_poll.sh says why).
set -euo pipefail
. "$(dirname "$0")/idle_poll.sh"
B=$(realpath "${1:?usage: $0 BUILD_DIR [tmpfs|direct] [ROUNDS]}")
KIND=${2:-tmpfs}
ROUNDS=${3:-3}
IOTAPE=$B/cli/iotape
T=/sys/kernel/tracing
W=$(mktemp -d /tmp/iotape-roundtrip-XXXXXX)
if [ "$KIND" = direct ]; then
  DISK=$(mktemp /var/tmp/iotape-roundtrip-XXXXXX)
  dd if=/dev/urandom of="$DISK" bs=1M count=1024 status=none conv=fsync
  LOOP=$(losetup -f --show --direct-io=on "$DISK")
else
  DISK=$(mktemp /dev/shm/iotape-roundtrip-XXXXXX)
  truncate -s 1G "$DISK"
  LOOP=$(losetup -f --show "$DISK")
  dd if=/dev/urandom of="$LOOP" bs=1M count=1024 oflag=direct status=none
fi
NAME=$(basename "$LOOP")
mountpoint -q $T || mount -t tracefs nodev $T
OLD_CLOCK=$(sed 's/.*\[\(.*\)\].*/\1/' $T/trace_clock)
# "1408", or "7 (expanded: 1408)" before the buffer was first used.
OLD_BUFFER_KB=$(sed 's/.*expanded: \([0-9]*\).*/\1/' $T/buffer_size_kb)
cleanup() {
  idle_poll_restore
  echo nop > $T/current_tracer
  echo 0 > /sys/block/$NAME/trace/enable
  echo "$OLD_CLOCK" > $T/trace_clock
  echo "$OLD_BUFFER_KB" > $T/buffer_size_kb
  echo > $T/trace
  losetup -d "$LOOP"
  rm -f "$DISK"
  rm -rf "$W"
}
trap cleanup EXIT
idle_poll_apply
echo "device $LOOP ($KIND) on $DISK; load: $(cut -d' ' -f1-3 /proc/loadavg); $(idle_poll_describe)"

record() {  # NAME FIO_ARGS...: a 3 s fio run captured by iotape record
  local name=$1; shift
  "$IOTAPE" record -d "$LOOP" -o "$W/$name.iot" 2> "$W/record.log" &
  local rec=$!
  sleep 1
  fio --name="$name" --filename="$LOOP" --ioengine=io_uring --direct=1 --bs=4k --size=1G --time_based \
    --runtime=3 --randrepeat=0 "$@" --output-format=terse > /dev/null
  sleep 0.3
  kill -INT $rec
  wait $rec
}

# NAME: replay under the blk tracer; prints the tracer's union of the
# intervals of the requests issued from the replay's start on (the prefill
# before it, which the result leaves out, is left out too)
replay_traced() {
  echo nop > $T/current_tracer
  echo mono > $T/trace_clock
  echo 262144 > $T/buffer_size_kb
  echo > $T/trace
  echo 1 > /sys/block/$NAME/trace/enable
  echo blk > $T/current_tracer
  "$IOTAPE" replay "$W/$1.iot" --target "$LOOP" -o "$W/$1-traced.iot" --allow-write > "$W/replay.log"
  # Switching the tracer clears its buffer: copy the buffer out first.
  echo 0 > $T/tracing_on
  cp $T/trace "$W/blk.txt"
  echo nop > $T/current_tracer
  echo 1 > $T/tracing_on
  echo 0 > /sys/block/$NAME/trace/enable
  local start
  start=$("$IOTAPE" info --json "$W/$1-traced.iot" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["replay.start_ns"])')
  python3 - "$W/blk.txt" "$(stat -c '%Hr,%Lr' "$LOOP")" "$start" <<'PY'
import sys, collections
dev, start = sys.argv[2], int(sys.argv[3])
issued = collections.defaultdict(collections.deque)
spans = []
for line in open(sys.argv[1]):
    w = line.split()
    if dev not in w: continue
    i = w.index(dev)
    if len(w) < i + 3 or w[i + 1] not in ('D', 'C'): continue
    t = w[i - 1].rstrip(':')
    s, f = t.split('.')
    ns = int(s) * 10**9 + int(f[:6].ljust(6, '0')) * 1000
    # "D R 2048 + 8 [proc]"; a flush has no range: "D FN [proc]"
    ranged = len(w) > i + 5 and w[i + 4] == '+'
    key = (w[i + 2], w[i + 3], w[i + 5]) if ranged else (w[i + 2], '', '')
    if w[i + 1] == 'D': issued[key].append(ns)
    elif issued[key]: spans.append((issued[key].popleft(), ns))
spans = sorted(span for span in spans if span[0] >= start)
total, start, end = 0, None, None
for a, b in spans:
    if end is None or a > end:
        if end is not None: total += end - start
        start, end = a, b
    else: end = max(end, b)
if end is not None: total += end - start
print(total)
PY
}

compare() {  # NAME ROUND TRACER_BUSY
  "$IOTAPE" replay "$W/$1.iot" --target "$LOOP" -o "$W/$1-alone.iot" --allow-write > "$W/replay.log"
  "$IOTAPE" report "$W/$1.iot" --json > "$W/rec.json"
  "$IOTAPE" report "$W/$1-traced.iot" --json > "$W/traced.json"
  "$IOTAPE" report "$W/$1-alone.iot" --json > "$W/alone.json"
  "$IOTAPE" report "$W/$1-again.iot" --json > "$W/again.json"
  python3 - "$W" "$1" "$2" "$3" <<'PY' | tee -a "$W/lines"
import json, sys
w, name, rnd, tracer = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rec, traced, alone, again = (json.load(open(f"{w}/{f}.json")) for f in ("rec", "traced", "alone", "again"))
busy_err = 100.0 * (traced["busy_time_ns"] - tracer) / tracer
def errors(run, duration_ns):
    dur = 100.0 * (duration_ns - rec["duration_ns"]) / rec["duration_ns"]
    p50r, p50 = rec["d2c_ns"]["read"]["p50"], run["d2c_ns"]["read"]["p50"]
    qd = max(abs(rec["qd_pct"][k] - run["qd_pct"][k]) for k in rec["qd_pct"])
    return dur, 100.0 * (p50 - p50r) / p50r, qd, p50
dur_err, lat_err, qd, p50a = errors(alone, alone["duration_ns"])
# fio's second run lasts as long as its first: its duration for the recorded IO count.
fio_dur, fio_lat, fio_qd, _ = errors(again, again["duration_ns"] * rec["ios"] / again["ios"])
times = alone["metadata"].get("replay.times", "?")
print(f"{name} round {rnd}: busy vs blk tracer {busy_err:+.2f}%  duration {dur_err:+.2f}% "
      f"({alone['duration_ns']/1e9:.3f} vs {rec['duration_ns']/1e9:.3f} s)  read p50 {lat_err:+.1f}% "
      f"({p50a/1e3:.1f} vs {rec['d2c_ns']['read']['p50']/1e3:.1f} us)  QD buckets max diff {qd:.2f} points  "
      f"times={times}\n  fio again: duration {fio_dur:+.2f}%  read p50 {fio_lat:+.1f}%  QD buckets {fio_qd:.2f} points")
print(f"DATA {name} {busy_err} {dur_err} {lat_err} {qd} {fio_dur} {fio_lat} {fio_qd}", file=open(f"{w}/data", "a"))
PY
}

for round in $(seq "$ROUNDS"); do
  for again in "" -again; do
    record qd1$again --rw=randread --iodepth=1
    record qd4$again --rw=randrw --rwmixread=70 --iodepth=4 --fsync=32
    record qd32$again --rw=randrw --rwmixread=70 --iodepth=32 --fsync=64
  done
  for run in qd1 qd4 qd32; do
    busy=$(replay_traced $run)
    compare $run "$round" "$busy"
  done
done
python3 - "$W/data" <<'PY'
import sys, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    _, name, *v = line.split()
    rows[name].append([float(x) for x in v])
for name, vs in rows.items():
    med = [statistics.median(abs(r[i]) for r in vs) for i in range(7)]
    print(f"median {name}: |busy vs blk tracer| {med[0]:.2f}%  |duration| {med[1]:.2f}%  |read p50| {med[2]:.1f}%  "
          f"QD buckets {med[3]:.2f} points ({len(vs)} rounds)\n"
          f"  fio again: |duration| {med[4]:.2f}%  |read p50| {med[5]:.1f}%  QD buckets {med[6]:.2f} points")
PY
