# Sourced by the replay benchmarks: how idle CPUs wait on this machine, and
# IDLE_POLL_NS=N to change it for one run.
#
# On a VM whose idle vCPUs halt at once (the haltpoll cpuidle driver with
# guest_halt_poll_ns=0), waking a thread or kworker on the other vCPU costs
# the waker 8-16 us (an IPI) and the wakee 16-32 us, where a fast device
# serves an IO in 5-10 us: results at low queue depth then depend on which
# vCPU the kernel wakes the device's worker on, for fio and iotape alike.
# Letting idle vCPUs poll before halting (as latency benchmarks turn off deep
# C-states on real hardware) removes that; the setting is restored on exit.
HALTPOLL_NS=/sys/module/haltpoll/parameters/guest_halt_poll_ns
IDLE_POLL_OLD=

idle_poll_apply() {
  [ -n "${IDLE_POLL_NS:-}" ] || return 0
  if [ ! -w "$HALTPOLL_NS" ]; then
    echo "IDLE_POLL_NS: $HALTPOLL_NS is not writable here (no haltpoll cpuidle driver)" >&2
    exit 1
  fi
  IDLE_POLL_OLD=$(cat "$HALTPOLL_NS")
  echo "$IDLE_POLL_NS" > "$HALTPOLL_NS"
}

idle_poll_restore() {
  if [ -n "$IDLE_POLL_OLD" ]; then echo "$IDLE_POLL_OLD" > "$HALTPOLL_NS"; fi
  IDLE_POLL_OLD=
}

idle_poll_describe() {
  local gov
  gov=$(cat /sys/devices/system/cpu/cpuidle/current_governor 2>/dev/null || echo none)
  if [ -r "$HALTPOLL_NS" ]; then
    echo "cpuidle governor $gov, guest halt polling $(cat "$HALTPOLL_NS") ns"
  else
    echo "cpuidle governor $gov"
  fi
}
