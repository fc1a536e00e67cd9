// SPDX-License-Identifier: GPL-2.0
/* The floor under iotrace.bpf.c's cost: the same three tracepoints, with
 * programs that do nothing, or nothing but the clock read each of iotrace's
 * programs makes. What a capture costs above this is iotrace's own work. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

const volatile bool read_clock = false; /* set by the loader */

/* Where the clock reads go, so that they are not optimised away. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} last SEC(".maps");

static __always_inline int hook(void)
{
	__u32 zero = 0;
	__u64 *t;

	if (!read_clock)
		return 0;
	t = bpf_map_lookup_elem(&last, &zero);
	if (t)
		*t = bpf_ktime_get_boot_ns();
	return 0;
}

SEC("tp_btf/block_io_start")
int BPF_PROG(block_io_start) { return hook(); }

SEC("tp_btf/block_rq_issue")
int BPF_PROG(block_rq_issue) { return hook(); }

SEC("tp_btf/block_rq_complete")
int BPF_PROG(block_rq_complete) { return hook(); }

char LICENSE[] SEC("license") = "GPL";
