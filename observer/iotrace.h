/* The record iotrace.bpf.c sends to user space for every completed request,
 * and the configuration user space writes before loading it.
 * Shared by the BPF program (C) and the loader (C++): plain fixed-size types. */
#ifndef IOTAPE_OBSERVER_IOTRACE_H
#define IOTAPE_OBSERVER_IOTRACE_H

#define IOTRACE_COMM_LEN 16
#define IOTRACE_MAX_DEVICES 256

/* Slots of the per-CPU counter array. */
#define IOTRACE_DROPS 0
#define IOTRACE_UNMATCHED 1
#define IOTRACE_UNCOMPLETED 2
#define IOTRACE_UNMATCHED_BYTES 3
#define IOTRACE_COUNTERS 4

/* Op codes and flag bits, already translated from the kernel's request
 * flags (whose bit positions vary between kernels) to iotape's. */
enum iotrace_op {
	IOTRACE_OP_READ = 0,
	IOTRACE_OP_WRITE = 1,
	IOTRACE_OP_FLUSH = 2,
	IOTRACE_OP_DISCARD = 3,
	IOTRACE_OP_WRITE_ZEROES = 4,
	IOTRACE_OP_OTHER = 5,
};

enum iotrace_flag {
	IOTRACE_F_SYNC = 1 << 0,
	IOTRACE_F_FUA = 1 << 1,
	IOTRACE_F_PREFLUSH = 1 << 2,
	IOTRACE_F_META = 1 << 3,
	IOTRACE_F_RAHEAD = 1 << 4,
	IOTRACE_F_BACKGROUND = 1 << 5,
	IOTRACE_F_NOMERGE = 1 << 6,
};

/* All times are bpf_ktime_get_boot_ns() (CLOCK_BOOTTIME); 0 = unknown
 * (complete_ns is 0 for a request whose completion the program missed). */
struct iotrace_event {
	__u64 queue_ns;    /* submission (block_io_start) */
	__u64 issue_ns;    /* dispatch to the driver (block_rq_issue) */
	__u64 complete_ns; /* block_rq_complete */
	__u64 sector;      /* 512-byte units from the start of the whole disk */
	__u64 cgroup;      /* submitter's cgroup v2 id, 0 = unknown */
	__u32 bytes;
	__u32 pid;         /* submitting thread group, 0 = unknown */
	__u32 device;      /* index into the device table user space loaded */
	__u32 cpu;         /* submitting CPU + 1, 0 = unknown */
	__u16 flags;       /* enum iotrace_flag bits */
	__u8 op;           /* enum iotrace_op */
	__u8 status;       /* the kernel's blk_status_t */
	char comm[IOTRACE_COMM_LEN];
};

/* One CPU's ring of completion records (see iotrace.bpf.c): the programs on
 * that CPU write records and advance head; user space reads them and advances
 * tail. Each position on a cache line of its own. */
struct iotrace_ring {
	__u64 head;
	__u64 head_line[7];
	__u64 tail;
	__u64 tail_line[7];
};

/* An in-flight entry: opened at submission, completed at issue, closed (and
 * sent as an event) at completion. It lives in the request's slot of the
 * slot array or, for requests without one, in a hash table keyed by the
 * request's address. User space reads what is left when the capture stops. */
struct iotrace_inflight {
	__u64 rq;        /* the request's address; 0 = a free slot */
	__u64 queue_ns;
	__u64 issue_ns;  /* 0 = not issued yet */
	__u64 sector;    /* at submission, then at issue: what an IO without completion is reported with */
	__u64 cgroup;
	__u32 bytes;
	__u32 pid;
	__u32 cpu;
	__u32 device;
	__u16 flags;     /* enum iotrace_flag bits, as submitted, then as issued */
	__u8 op;
	__u8 in_slot;    /* 1 = in the slot array, 0 = in the hash table */
	__u32 sent;      /* 1 = its record went out when its data completed; the flush
			  * machinery completes it once more, with no bytes, after the
			  * flush that follows (RQF_FLUSH_SEQ), and that closes it */
	char comm[IOTRACE_COMM_LEN];
};

/* Where a traced device's requests keep their entries: slots
 * first_slot + hardware queue * tags + tag, for hardware queues below
 * hw_queues and tags below `tags` (tags 0: none, every entry is hashed). */
struct iotrace_device {
	__u32 index;       /* into the device table user space loaded */
	__u32 hw_queues;
	__u32 tags;
	__u32 first_slot;
};

#endif
