#!/bin/sh
# The scaling measurement of bench/vm_scaling.py, run in the guest under
# busybox: 4 KiB random reads at queue depth 32 in total on null_blk, as
# fast as they go, on one and on two threads: fio (io_uring, numjobs 1 and
# 2) and `iotape replay --timing afap` of /afap.iotape (--threads 1 and 2),
# alternating, ROUNDS times. It prints what each run reported as lines
# "IOTAPE-VM scaling TOOL THREADS ROUND KEY VALUE" on the results port; the
# host takes the medians.
#
# POLL=1: completions polled from null_blk's poll queues (fio --hipri,
# iotape --iopoll).
#
# Usage: guest-scaling.sh RESULTS ROUNDS IOS POLL
RESULTS=$1
ROUNDS=${2:-3}
IOS=${3:-200000}
FIO_POLL=
IOTAPE_POLL=
[ "${4:-0}" = 1 ] && FIO_POLL=--hipri IOTAPE_POLL=--iopoll

out() { echo "IOTAPE-VM $*" >>"$RESULTS"; }

dev=
i=0
while [ -z "$dev" ] && [ $i -lt 150 ]; do
	[ -e /sys/block/nullb0 ] && dev=nullb0
	sleep 0.1
	i=$((i + 1))
done
if [ -z "$dev" ]; then
	out "scaling - - - missing no null_blk device appeared"
	out "- - done"
	exit
fi
out "- - kernel $(uname -r)"
out "- - cpus $(grep -c ^processor /proc/cpuinfo)"
out "- - io_poll $(cat /sys/block/$dev/queue/io_poll)"
echo none >/sys/block/$dev/queue/scheduler 2>/dev/null
round=1
while [ $round -le "$ROUNDS" ]; do
	for t in 1 2; do
		fio --name=scaling --filename=/dev/$dev --ioengine=io_uring --direct=1 --rw=randread --bs=4k \
			--iodepth=$((32 / t)) --numjobs=$t --thread --fixedbufs --registerfiles --number_ios=$((IOS / t)) \
			--size=1G --norandommap --randrepeat=0 $FIO_POLL --output-format=json >/tmp/fio.json 2>/tmp/fio.log
		out "scaling fio $t $round rc $?"
		out "scaling fio $t $round json $(tr -d '\n\r' </tmp/fio.json)"
		iotape replay /afap.iotape --target /dev/$dev -o /tmp/result.iot --timing afap --qd 32 --max-idle 0 \
			--times user --threads $t $IOTAPE_POLL >/tmp/replay.out 2>/tmp/replay.log
		out "scaling iotape $t $round rc $?"
		while read -r l; do out "scaling iotape $t $round line $l"; done </tmp/replay.out
		rm -f /tmp/result.iot
	done
	round=$((round + 1))
done
out "- - done"
