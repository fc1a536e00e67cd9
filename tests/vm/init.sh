#!/bin/busybox sh
# /init of the VM harness's initramfs (tests/vm/run.py): mounts the kernel's
# file systems, loads the drivers listed in /modules.order, runs
# /guest-check.sh and powers off. Its settings come from the kernel command
# line: iotape.drives=, iotape.backends=, iotape.runtime=, iotape.kallsyms=;
# iotape.mode=scaling runs /guest-scaling.sh (bench/vm_scaling.py) instead,
# with iotape.rounds=, iotape.ios= and iotape.poll=.
/bin/busybox --install -s /bin
export PATH=/bin:/usr/bin:/sbin:/usr/sbin
mkdir -p /proc /sys /dev /tmp /run
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
# Errors and worse on the console: a lockup, an RCU stall or a task blocked
# for 30 s shows its stack there.
echo 3 >/proc/sys/kernel/printk
echo 30 >/proc/sys/kernel/hung_task_timeout_secs 2>/dev/null

arg() { tr ' ' '\n' </proc/cmdline | sed -n "s/^iotape\.$1=//p"; }

RESULTS=/dev/ttyS1
# The kernel's text symbols, once per kernel (the host names a hung guest's
# functions with them): to the third serial port.
[ "$(arg kallsyms)" = 1 ] && grep ' [tT] ' /proc/kallsyms >/dev/ttyS2
echo "IOTAPE-VM - - boot $(cut -d' ' -f1 /proc/uptime)" >>$RESULTS
while read -r mod params; do
	if insmod "/lib/modules/$mod" $params 2>/tmp/insmod.err; then
		echo "IOTAPE-VM - - module ${mod##*/}" >>$RESULTS
	else
		echo "IOTAPE-VM - - module_failed ${mod##*/} $(cat /tmp/insmod.err)" >>$RESULTS
	fi
done </modules.order

if [ "$(arg mode)" = scaling ]; then
	/bin/sh /guest-scaling.sh $RESULTS "$(arg rounds)" "$(arg ios)" "$(arg poll)"
else
	/bin/sh /guest-check.sh $RESULTS "$(arg drives)" "$(arg backends)" "$(arg runtime)"
fi
echo "IOTAPE-VM - - uptime $(cut -d' ' -f1 /proc/uptime)" >>$RESULTS
sync
poweroff -f
