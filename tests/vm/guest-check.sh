#!/bin/sh
# The check iotape's VM harness (tests/vm/run.py) runs in each guest, under
# busybox: for every drive and back end, a mixed fio workload while
# `iotape record` captures the drive, with the drive's /sys/block stat
# before and after. It judges nothing itself: it prints what it measured as
# lines "IOTAPE-VM DRIVE BACKEND KEY VALUE" on the results port (RESULTS,
# the second serial port), and the host compares.
#
# Usage: guest-check.sh RESULTS DRIVES BACKENDS RUNTIME
#   DRIVES: comma-separated kinds (nvme, virtio, scsi, sata, nullb)
#   BACKENDS: comma-separated `iotape record --backend` values
RESULTS=$1
DRIVES=$2
BACKENDS=$3
RUNTIME=${4:-3}

out() { echo "IOTAPE-VM $*" >>"$RESULTS"; }
say() { echo "iotape-vm: $*"; }

# The block device of a drive kind: found by the bus it hangs off, not by
# probing order (sda may be the SCSI or the SATA disk).
device_of() {
	for b in /sys/block/*; do
		n=${b##*/}
		p=$(readlink -f "$b")
		case "$1:$n:$p" in
		nvme:nvme*n1:*) echo "$n"; return ;;
		virtio:vd*:*) echo "$n"; return ;;
		scsi:sd*:*/virtio*) echo "$n"; return ;;
		sata:sd*:*/ata*) echo "$n"; return ;;
		nullb:nullb*:*) echo "$n"; return ;;
		esac
	done
}

# Waits up to $2 seconds for the drive of kind $1 to appear.
wait_device() {
	i=0
	while [ $i -lt $(($2 * 10)) ]; do
		d=$(device_of "$1")
		[ -n "$d" ] && { echo "$d"; return; }
		sleep 0.1
		i=$((i + 1))
	done
}

one_line() { tr -d '\n\r' <"$1"; }

# Waits until `iotape record` (pid $1, log $2) says it records, or exits.
wait_recording() {
	i=0
	while [ $i -lt 1200 ]; do
		grep -q "iotape: recording" "$2" && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# Stops `iotape record` (pid $1) with SIGINT, as a user does, and prints its
# exit status as "$2 $3 KEY". A recorder still running after 60 s is shown
# (its state and kernel stacks, as "$2 $3 hang ...") and killed, so one hang
# is reported, not the whole guest's timeout.
stop_recording() {
	kill -INT "$1" 2>/dev/null
	i=0
	while kill -0 "$1" 2>/dev/null && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$1" 2>/dev/null; then
		out "$2 $3 hang $(grep State /proc/$1/status)"
		for t in /proc/$1/task/*; do
			out "$2 $3 hang task ${t##*/} $(cat $t/comm) wchan $(cat $t/wchan) syscall $(cat $t/syscall)"
			while read -r l; do out "$2 $3 hang task ${t##*/} stack $l"; done <$t/stack
		done
		kill -KILL "$1"
	fi
	wait "$1"
	out "$2 $3 $4 $?"
}

# The guest kernel's complaints about the drive during a cell (command
# timeouts, aborts, controller resets, I/O errors), as "$1 $2 kernel_log ...":
# QEMU's emulated NVMe controller, under TCG, now and then leaves a command
# uncompleted until the kernel's timeout resets it. kernel_log_start clears the
# log at the cell's start.
kernel_log_start() {
	dmesg -c >/dev/null
}
kernel_log() {
	dmesg -c | grep -E 'timeout|reset|I/O error|Abort' | while read -r l; do out "$1 $2 kernel_log $l"; done
}

fio_job() {
	dev=$1
	cat <<EOF
[global]
filename=/dev/$dev
write_lat_log=/tmp/fiolat
log_offset=1
direct=1
ioengine=io_uring
time_based
runtime=$RUNTIME
size=192M
randrepeat=0
thread

[mixed]
rw=randrw
bsrange=4k-64k
blockalign=4k
iodepth=4
fsync=4

# A small region at a deeper queue: requests from one sector in flight
# together, completed out of order, each to be taken as itself. 3,000 IOs,
# not time-based: more would add to the emulated NVMe drive's stalls (see
# kernel_log).
[crowded]
rw=randrw
offset=192M
size=512k
io_size=1g
number_ios=3000
time_based=0
bsrange=4k-64k
blockalign=4k
iodepth=16
EOF
	# Trims only where the device takes them (fio fails otherwise).
	if [ "$(cat /sys/block/$dev/queue/discard_max_bytes)" != 0 ]; then
		cat <<EOF

[trim]
rw=randtrim
bs=64k
iodepth=1
EOF
	fi
}

# A kernel without BTF, as iotape sees one: /sys/kernel/btf hidden under an
# empty tmpfs. `--backend ebpf` must refuse, naming the blktrace back end.
hide_btf() {
	mount -t tmpfs nobtf /sys/kernel/btf || return 1
	iotape record -d /dev/$2 -o /tmp/nobtf.iot --backend ebpf --duration 1s >/tmp/nobtf.log 2>&1
	out "$1 $3 ebpf_rc $?"
	out "$1 $3 ebpf_error $(tail -n 1 /tmp/nobtf.log)"
}

run() {
	drive=$1 backend=$2 dev=$3
	say "$drive ($dev) with --backend $backend"
	kernel_log_start
	rm -f /tmp/t.iot /tmp/record.log /tmp/fio.json /tmp/fio.log /tmp/info.json /tmp/fiolat_*.log
	out "$drive $backend device $dev"
	flag=$backend
	if [ "$backend" = auto-nobtf ]; then
		flag=auto
		hide_btf "$drive" "$dev" "$backend" || out "$drive $backend ebpf_error cannot hide /sys/kernel/btf"
	fi
	out "$drive $backend write_cache $(cat /sys/block/$dev/queue/write_cache)"
	out "$drive $backend discard_max_bytes $(cat /sys/block/$dev/queue/discard_max_bytes)"
	iotape record -d /dev/$dev -o /tmp/t.iot --backend "$flag" >/tmp/record.log 2>&1 &
	rec=$!
	if ! wait_recording $rec /tmp/record.log; then
		stop_recording $rec "$drive" "$backend" record_rc
		umount /sys/kernel/btf 2>/dev/null
		while read -r l; do out "$drive $backend record_log $l"; done </tmp/record.log
		kernel_log "$drive" "$backend"
		out "$drive $backend end"
		return
	fi
	# The counters from when record captures: describing a virtio-blk disk
	# reads its serial with a driver request, which 5.10 counts as a read.
	out "$drive $backend stat_before $(cat /sys/block/$dev/stat)"
	fio_job "$dev" >/tmp/job.fio
	fio --output-format=json --output=/tmp/fio.json /tmp/job.fio >/tmp/fio.log 2>&1 &
	fio=$!
	wait $fio
	out "$drive $backend fio_rc $?"
	out "$drive $backend fio_pid $fio"
	out "$drive $backend stat_after $(cat /sys/block/$dev/stat)"
	stop_recording $rec "$drive" "$backend" record_rc
	umount /sys/kernel/btf 2>/dev/null
	while read -r l; do out "$drive $backend record_log $l"; done </tmp/record.log
	while read -r l; do out "$drive $backend fio_log $l"; done </tmp/fio.log
	[ -s /tmp/fio.json ] && out "$drive $backend fio_json $(one_line /tmp/fio.json)"
	iotape info --json /tmp/t.iot >/tmp/info.json 2>/tmp/info.log
	out "$drive $backend info_rc $?"
	[ -s /tmp/info.json ] && out "$drive $backend info_json $(one_line /tmp/info.json)"
	# An fsync's empty write, as every kernel must show it: a write of no
	# bytes with the preflush flag (CSV: op, flags, offset, length).
	out "$drive $backend empty_preflush_writes $(iotape cat --format csv /tmp/t.iot |
		awk -F, '$5 == "write" && $6 ~ /F/ && $8 == 0' | wc -l)"
	# IOs recorded without a completion (capture.uncompleted_ios), as CSV:
	# what they were and when, for the verdict.
	iotape cat --format csv /tmp/t.iot | awk -F, 'NR > 1 && $11 == ""' | head -n 5 |
		while read -r l; do out "$drive $backend uncompleted_io $l"; done
	# fio's IOs (its completion log: op, offset, length) the trace lacks, and
	# the trace's fio lacks: what a verdict that is not exact names.
	cat /tmp/fiolat_clat.*.log | awk -F', *' '$3 <= 2 {print ($3 == 0 ? "read" : $3 == 1 ? "write" : "discard"), $5, $4}' |
		sort >/tmp/fio.ios
	iotape cat --format csv /tmp/t.iot | awk -F, 'NR > 1 && $8 > 0 {print $5, $7, $8}' | sort >/tmp/trace.ios
	diff /tmp/fio.ios /tmp/trace.ios | grep '^[-+][a-z]' >/tmp/io.diff
	out "$drive $backend fio_logged $(wc -l </tmp/fio.ios)"
	out "$drive $backend io_diff_counts $(grep -c '^-' /tmp/io.diff) $(grep -c '^+' /tmp/io.diff)"
	head -n 8 /tmp/io.diff | while read -r l; do out "$drive $backend io_diff $l"; done
	rm -f /tmp/fiolat_*.log /tmp/fio.ios /tmp/trace.ios /tmp/io.diff
	iotape report --json --by process /tmp/t.iot >/tmp/report.json 2>/dev/null &&
		out "$drive $backend report_json $(one_line /tmp/report.json)"
	kernel_log "$drive" "$backend"
	out "$drive $backend end"
}

# Each IO of a replay result (`iotape cat --format csv` RESULT) against the
# blk tracer's request (TRACER) of the same op, offset and length nearest in
# issue time: how far apart their issue and completion times are. Under TCG
# the emulator now and then stalls between the two probes of one tracepoint,
# putting a few IOs milliseconds apart: for the IOs more than 50 us apart
# ("far"), the sum of their distances, and the tracer's busy time (all its
# requests) with theirs taken as the replay timed them (far_as_replayed_busy_ns).
# IOs without a request of theirs are named, with the tracer's request at
# their offset if any (unmatched_ios).
match_times() {
	awk 'BEGIN { FS = "," }
		FNR == 1 { file++; next }
		$11 == "" { next }
		# An fsync'"'"'s empty write the device never saw (issue = queue time) is no
		# busy time (format::Io::never_issued).
		file == 1 {
			t++; iss[t] = $10; com[t] = $11; row[$7] = $5 "," $6 "," $8 "," $10 "," $11
			busy[t] = $10 != "" && !($5 == "write" && $8 == 0 && $6 ~ /F/ && $9 == $10)
		}
		$5 != "read" && $5 != "write" && $5 != "discard" || $8 == 0 { next }
		file == 1 { k = $5 ":" $7 ":" $8; n[k]++; req[k, n[k]] = t; next }
		{
			k = $5 ":" $7 ":" $8; ios++
			best = -1; bd = 0
			for (j = 1; j <= n[k]; j++) {
				d = iss[req[k, j]] - $10; if (d < 0) d = -d
				if (best < 0 || d < bd) { best = req[k, j]; bd = d }
			}
			if (best < 0) {
				if (unmatched++ < 3) missed = missed " " $5 "," $6 "," $7 "," $8 "," $10 "," $11 "/tracer:" ($7 in row ? row[$7] : "none")
				next
			}
			di = $10 - iss[best]; dc = $11 - com[best]
			sdi += di; sdc += dc
			ai = di < 0 ? -di : di; ac = dc < 0 ? -dc : dc; m = ai > ac ? ai : ac
			if (m <= 10000) w10++
			if (m <= 50000) w50++
			else { far++; far_shift += ai + ac; far_di += di; far_dc += dc; as_iss[best] = $10; as_com[best] = $11 }
			if (m > worst) worst = m
		}
		END {
			for (i = 1; i <= t; i++)
				if (i in as_iss) print as_iss[i], as_com[i] >"/tmp/intervals"
				else if (busy[i]) print iss[i], com[i] >"/tmp/intervals"
			matched = ios - unmatched
			printf "ios %d unmatched %d within10us %.4f within50us %.4f mean_dissue_ns %.0f mean_dcomplete_ns %.0f worst_us %.1f",
				ios, unmatched, w10 / matched, w50 / matched, sdi / matched, sdc / matched, worst / 1000
			printf " far %d far_shift_ns %.0f far_dissue_ns %.0f far_dcomplete_ns %.0f", far, far_shift, far_di, far_dc
			if (missed != "") printf " unmatched_ios%s", missed
		}' "$1" "$2"
	# The union of those intervals, swept in start order.
	sort -n /tmp/intervals | awk '
		$1 > end { busy += end - start; start = $1; end = $2; next }
		$2 > end { end = $2 }
		END { printf " far_as_replayed_busy_ns %.0f\n", busy + end - start }'
	rm -f /tmp/intervals
}

# Interrupts of the drive's IO queues so far (an NVMe drive's nvme0q1...,
# not its admin queue nvme0q0), summed over the CPUs.
queue_irqs() {
	awk -v q="${1%n*}q" '{ for (i = 1; i <= NF; i++) if (index($i, q) == 1 && $i != q "0") { n = 0
		for (c = 2; c <= NF && $c ~ /^[0-9]+$/; c++) n += $c; total += n } }
		END { print total + 0 }' /proc/interrupts
}

# Replays the last capture (or REPLAY_TRACE) onto the drive with device times, while the blk
# tracer (record --backend blktrace) records the replay's requests: the host
# compares the result's busy time with the tracer's. CELL names the run; the
# rest are replay options.
replay_check() {
	drive=$1 dev=$2 cell=$3
	shift 3
	say "$drive ($dev): replay with --times device $*"
	kernel_log_start
	rm -f /tmp/result.iot /tmp/blk.iot /tmp/replay.log /tmp/blk.log
	iotape record -d /dev/$dev -o /tmp/blk.iot --backend blktrace >/tmp/blk.log 2>&1 &
	rec=$!
	if ! wait_recording $rec /tmp/blk.log; then
		stop_recording $rec "$drive" $cell tracer_rc
		kernel_log "$drive" $cell
		out "$drive $cell end"
		return
	fi
	irqs_before=$(queue_irqs "$dev")
	iotape replay "${REPLAY_TRACE:-/tmp/t.iot}" --target /dev/$dev --allow-write --force --times device --prefill none \
		"$@" -o /tmp/result.iot >/tmp/replay.log 2>&1
	out "$drive $cell replay_rc $?"
	out "$drive $cell queue_irqs $(($(queue_irqs "$dev") - irqs_before))"
	out "$drive $cell io_poll $(cat /sys/block/$dev/queue/io_poll)"
	stop_recording $rec "$drive" $cell tracer_rc
	while read -r l; do out "$drive $cell replay_log $l"; done </tmp/replay.log
	iotape report --json /tmp/result.iot >/tmp/r.json 2>/dev/null && out "$drive $cell result_json $(one_line /tmp/r.json)"
	iotape info --json /tmp/result.iot >/tmp/ri.json 2>/dev/null && out "$drive $cell result_info $(one_line /tmp/ri.json)"
	iotape report --json /tmp/blk.iot >/tmp/b.json 2>/dev/null && out "$drive $cell tracer_json $(one_line /tmp/b.json)"
	iotape cat --format csv /tmp/blk.iot >/tmp/b.csv 2>/dev/null && iotape cat --format csv /tmp/result.iot >/tmp/r.csv &&
		out "$drive $cell match $(match_times /tmp/b.csv /tmp/r.csv)"
	rm -f /tmp/b.csv /tmp/r.csv
	kernel_log "$drive" $cell
	out "$drive $cell end"
}

out "- - kernel $(uname -r)"
out "- - btf $([ -e /sys/kernel/btf/vmlinux ] && echo yes || echo no)"
for drive in $(echo "$DRIVES" | tr , ' '); do
	dev=$(wait_device "$drive" 15)
	if [ -z "$dev" ]; then
		out "$drive - missing no block device appeared"
		continue
	fi
	echo 2 >/sys/block/$dev/queue/nomerges # one request per fio IO
	# A command the emulated drive leaves uncompleted stalls its cell for two
	# timeouts (abort, then reset): 10 s each rather than 30 keeps one stall
	# within the boot's timeout.
	[ -w /sys/block/$dev/queue/io_timeout ] && echo 10000 >/sys/block/$dev/queue/io_timeout
	for backend in $(echo "$BACKENDS" | tr , ' '); do
		run "$drive" "$backend" "$dev"
	done
	[ "$drive" = nvme ] && [ -s /tmp/t.iot ] && replay_check "$drive" "$dev" replay
	[ "$drive" = nvme ] && [ -s /tmp/t.iot ] &&
		replay_check "$drive" "$dev" replay-2 --timing afap --qd 8 --threads 2
	# Polled completions (--iopoll) from the poll queue the nvme module was
	# given: reads and writes only, so a trace of those, at a twentieth of
	# its speed, so that the replay polls to deadlines and sleeps while
	# nothing is in flight.
	[ "$drive" = nvme ] && iotape synth rand-4k-qd32 --span 128M --ios 3000 -o /tmp/p.iot >/dev/null 2>&1 &&
		REPLAY_TRACE=/tmp/p.iot replay_check "$drive" "$dev" replay-iopoll --speed 0.05 --qd 8 --iopoll
	[ "$drive" = nvme ] && run "$drive" auto-nobtf "$dev"
done
out "- - done"
