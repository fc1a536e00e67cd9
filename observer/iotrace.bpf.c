// SPDX-License-Identifier: GPL-2.0
/* iotrace: one record per completed block request, with the submitter.
 *
 * block_io_start (or, before 6.5, fentry on blk_account_io_start or
 * __blk_account_io_start where the kernel has them out of line) runs in the
 * submitter's context, on the critical path of every submission: it opens an
 * in-flight entry with only what nothing later knows (pid, comm, cgroup, CPU)
 * and the request as submitted. Kernels with neither (6.1 inlines both) give
 * the submitter at block_bio_queue instead, kept by bio until the request
 * holding that bio first is issued or completed (submit_by_bio). block_rq_issue adds the dispatch time,
 * block_rq_complete sends the record and closes the entry (block_rq_merge
 * closes it for a request merged into another). Requests the kernel makes
 * itself (flushes, passthrough) get their entry at issue, without a submitter.
 *
 * A write the flush machinery sequences (a preflush or FUA write on a device
 * with a write cache) completes twice: once when its data is done (the
 * request still marked RQF_FLUSH_SEQ), and again, with no bytes left, when
 * the flush after it is done. Its record goes out at the first, when the
 * device finished the data; the second closes the entry and records nothing.
 * The kernel's own counters count such a write once. A completion that finds
 * no entry (its request was in flight before the capture began, or the
 * kernel did not run our program at its submission) cannot be placed in time:
 * it is counted (IOTRACE_UNMATCHED, and its bytes), not recorded as an IO.
 *
 * The entry lives in the request's own slot of an array: a request keeps its
 * tag (the scheduler's, or the driver's without one) from allocation to free,
 * so (device, hardware queue, tag) names it without hashing, locking or
 * freeing. Requests without a slot of their own (a flush borrows the tag of
 * the request it flushes for; a tag beyond what sysfs showed at the start; a
 * device too large for the array) use a hash table keyed by address.
 *
 * All times come from bpf_ktime_get_boot_ns(): CLOCK_BOOTTIME keeps counting
 * across suspend, so a week-long trace keeps one time line. Each program reads
 * it first, before any map lookup: under QEMU's TCG the lookups at issue took
 * ~7 us more than those at completion, and timed that late every device time
 * came out that much shorter than the blk tracer's. The kernel's own
 * rq->start_time_ns and io_start_time_ns are CLOCK_MONOTONIC and taken once per
 * plug: every IO of one io_uring_enter would share them.
 *
 * Measured on a 6.18 VM (bpf_stats, 4 KiB random reads on a loop device): a
 * hash table for the entries cost about 450 ns per IO, bpf_get_current_comm
 * about 150 ns more than reading task->comm; a clock read 40-50 ns, a helper
 * call alone about 20 (that VM returns through retpolines and Safe-RET
 * thunks). Attaching empty programs to these tracepoints cost more than all of
 * it: bench/hook_floor measures that floor.
 *
 * The kernel does not always run the programs: about one loop-device
 * completion in 10,000 to 100,000 (up to one in 1,500 over a direct-IO file
 * while the host stalled) reached ftrace's block_rq_complete event but no BPF
 * program, and no recursion miss was counted. On the VM where this was
 * measured, every missed completion ran in a softirq on top of one thread of
 * the VM's init agent, and a second program on the same tracepoint missed
 * exactly the same ones: the tracepoint's BPF probes were not called, so no
 * program of ours can catch them. The entry then outlives
 * its request; when block_io_start reuses the request's slot and finds the
 * entry still issued, the IO is sent from what the entry kept, without a
 * completion time, and counted (IOTRACE_UNCOMPLETED). Entries still issued
 * when the capture stops are read by user space. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "iotrace.h"

#define MAX_INFLIGHT 65536
#define EEXIST 17

/* Set by the loader from the kernel's BTF before loading. */
const volatile bool rq_is_first_arg = true; /* block_rq_{issue,merge}(rq) since 5.11, (q, rq) before */
const volatile bool bio_is_first_arg = true; /* block_bio_queue(bio) since 5.11, (q, bio) before */
/* bpf_get_current_task_btf() exists (5.11): the submitter from plain loads of
 * the task; before it, from the helpers that return its pid, name, cgroup. */
const volatile bool have_task_btf = true;
/* No submission hook on the request (6.1 to 6.4 inline blk_account_io_start):
 * the submitter is taken at block_bio_queue, by bio, and joined to the request
 * whose first bio it is when the request is issued or completed. */
const volatile bool submit_by_bio = false;
const volatile __u32 ring_size = 1; /* records in each CPU's ring: a power of two */
const volatile __u32 filter_pid = 0;
const volatile bool filter_by_comm = false;
/* With a submitter filter, still record the requests the kernel makes without
 * a submitter (flushes): replay times its own fsyncs by them. */
const volatile bool keep_anonymous = false;
const volatile char filter_comm[IOTRACE_COMM_LEN] = {};

/* Entries by request slot (see struct iotrace_device); sized by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct iotrace_inflight);
} slots SEC(".maps");

/* Entries of requests without a slot, by request address. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_INFLIGHT);
	__type(key, __u64);
	__type(value, struct iotrace_inflight);
} inflight SEC(".maps");

/* The submitter of each bio of a traced device, with submit_by_bio: taken
 * by the request whose first bio it is. An LRU table: bios merged into a
 * request behind its first leave their entry to be pushed out. */
struct submitter {
	__u64 queue_ns;
	__u64 cgroup;
	__u32 pid;
	__u32 cpu;
	__u32 opf; /* the bio's op and flags as submitted (block_bio_queue) */
	char comm[IOTRACE_COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MAX_INFLIGHT);
	__type(key, __u64);
	__type(value, struct submitter);
} bio_submitters SEC(".maps");

/* Traced devices: kernel dev_t (major << 20 | minor) -> device index. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, IOTRACE_MAX_DEVICES);
	__type(key, __u32);
	__type(value, __u32);
} devices SEC(".maps");

/* By device index: where its requests' slots are. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, IOTRACE_MAX_DEVICES);
	__type(key, __u32);
	__type(value, struct iotrace_device);
} layouts SEC(".maps");

/* By request queue id: dev_t << 32 | (device index + 1, or 0 = not traced),
 * filled on first sight; 0 = not seen yet. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} queues SEC(".maps");

/* Completion records, a ring per CPU: CPU c's are elements c * ring_size
 * to (c + 1) * ring_size - 1, its positions element c of `rings`. Only
 * block_rq_complete writes them, and the kernel never runs a program nested
 * in itself on one CPU, so each ring has one writer: a record costs stores and
 * no lock. The shared ring buffer below took 50-70 ns per record more (its
 * spin lock and two helper calls). User space maps both arrays. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, __u32);
	__type(value, struct iotrace_event);
} records SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* one per possible CPU */
	__type(key, __u32);
	__type(value, struct iotrace_ring);
} rings SEC(".maps");

/* Records of other programs (an entry found stale at submission, rare), and
 * the wakeup of user space when a CPU's ring is half full: it otherwise reads
 * on a timer, as waking it for every record would cost more than the record. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 << 10);
} events SEC(".maps");

/* Per-CPU counters: [IOTRACE_DROPS] records lost because the ring buffer or
 * the in-flight table was full; [IOTRACE_UNMATCHED] completions that found no
 * in-flight entry (in flight before the capture, or a missed submission), and
 * [IOTRACE_UNMATCHED_BYTES] their bytes: not recorded; [IOTRACE_UNCOMPLETED]
 * issued entries found stale when their slot was reused: recorded without a
 * completion time. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, IOTRACE_COUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

struct request_queue___old {
	struct gendisk *disk;
} __attribute__((preserve_access_index));

struct request___old {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

struct request___mq {
	struct blk_mq_hw_ctx *mq_hctx;
} __attribute__((preserve_access_index));

struct bio___old {
	struct gendisk *bi_disk;
} __attribute__((preserve_access_index));

static __always_inline void count_n(__u32 which, __u64 by)
{
	__u64 *n = bpf_map_lookup_elem(&drops, &which);

	if (n)
		*n += by;
}

static __always_inline void count(__u32 which)
{
	count_n(which, 1);
}

static __always_inline void count_drop(void)
{
	count(IOTRACE_DROPS);
}

/* tp_btf and fentry arguments are typed kernel pointers: plain loads
 * (relocated by CO-RE) are cheaper than bpf_probe_read calls.
 *
 * The traced device of a request, or 0. The request queue's id caches the
 * answer of the hash table (one array load instead of hashing, three times
 * per IO); the cached dev_t guards against a queue id reused by another disk. */
static __always_inline struct iotrace_device *device_of(struct request *rq)
{
	struct gendisk *disk;
	__u32 dev, qid, *index;
	__u64 *cached, known;

	if (bpf_core_field_exists(((struct request___old *)0)->rq_disk))
		disk = ((struct request___old *)rq)->rq_disk; /* a plain load: disk stays a typed pointer */
	else
		disk = rq->q->disk;
	if (!disk)
		return 0;
	dev = ((__u32)disk->major << 20) | (__u32)disk->first_minor;
	qid = rq->q->id;
	cached = bpf_map_lookup_elem(&queues, &qid);
	if (cached) {
		known = *cached; /* one 64-bit load: never half of another disk's entry */
		if ((__u32)(known >> 32) == dev) {
			qid = (__u32)known; /* device index + 1, 0 = not traced */
			if (!qid)
				return 0;
			qid -= 1;
			return bpf_map_lookup_elem(&layouts, &qid);
		}
	}
	index = bpf_map_lookup_elem(&devices, &dev);
	if (cached)
		*cached = ((__u64)dev << 32) | (index ? *index + 1 : 0);
	return index ? bpf_map_lookup_elem(&layouts, index) : 0;
}

/* The traced device of a bio's disk, or 0 (no cache: bios without a request
 * are only looked at with submit_by_bio). */
static __always_inline struct iotrace_device *device_of_bio(struct bio *bio)
{
	struct gendisk *disk;
	__u32 dev, *index;

	if (bpf_core_field_exists(((struct bio___old *)0)->bi_disk)) /* before 5.12 */
		disk = BPF_CORE_READ((struct bio___old *)bio, bi_disk);
	else
		disk = BPF_CORE_READ(bio, bi_bdev, bd_disk);
	if (!disk)
		return 0;
	dev = ((__u32)BPF_CORE_READ(disk, major) << 20) | (__u32)BPF_CORE_READ(disk, first_minor);
	index = bpf_map_lookup_elem(&devices, &dev);
	return index ? bpf_map_lookup_elem(&layouts, index) : 0;
}

/* The request's own slot, or 0 when it has none (use the hash table). */
static __always_inline struct iotrace_inflight *slot_of(struct request *rq, const struct iotrace_device *d)
{
	int tag = rq->internal_tag;
	__u32 hctx, i;

	if (!bpf_core_field_exists(((struct request___mq *)0)->mq_hctx)) /* before 5.0 */
		return 0;
	if (tag < 0)
		tag = rq->tag;
	hctx = ((struct request___mq *)rq)->mq_hctx->queue_num;
	if (tag < 0 || (__u32)tag >= d->tags || hctx >= d->hw_queues)
		return 0;
	i = d->first_slot + hctx * d->tags + (__u32)tag;
	return bpf_map_lookup_elem(&slots, &i);
}

/* The entry of `rq` opened at submission, in its slot or the hash table. */
static __always_inline struct iotrace_inflight *entry_of(struct request *rq, const struct iotrace_device *d)
{
	struct iotrace_inflight *s = slot_of(rq, d);
	__u64 key = (__u64)rq;

	if (s && s->rq == key)
		return s;
	return bpf_map_lookup_elem(&inflight, &key);
}

/* Closes the entry of `rq`, wherever it is. */
static __always_inline void close_entry(struct request *rq, struct iotrace_inflight *s)
{
	__u64 key = (__u64)rq;

	if (s->in_slot)
		s->rq = 0;
	else
		bpf_map_delete_elem(&inflight, &key);
}

static __always_inline bool comm_matches(const char *comm)
{
	for (int i = 0; i < IOTRACE_COMM_LEN; i++) {
		if (comm[i] != filter_comm[i])
			return false;
		if (!comm[i])
			return true;
	}
	return true;
}

/* Whether requests without a submitter are left out. */
static __always_inline bool filtering_submitter(void)
{
	return (filter_pid || filter_by_comm) && !keep_anonymous;
}

static __always_inline __u8 op_of(__u32 cmd_flags)
{
	switch (cmd_flags & 0xff) { /* REQ_OP_MASK: the op numbers are ABI-stable */
	case 0: return IOTRACE_OP_READ;
	case 1: return IOTRACE_OP_WRITE;
	case 2: return IOTRACE_OP_FLUSH;
	case 3: return IOTRACE_OP_DISCARD;
	case 9: return IOTRACE_OP_WRITE_ZEROES;
	default: return IOTRACE_OP_OTHER;
	}
}

enum rqf_flags___new {
	__RQF_FLUSH_SEQ___new = 1,
};

/* Whether `rq` is in a flush sequence: RQF_FLUSH_SEQ, an enum bit since 6.10,
 * bit 4 before (5.10 to 6.9). */
static __always_inline bool in_flush_sequence(struct request *rq)
{
	__u32 bit = 4;

	if (bpf_core_enum_value_exists(enum rqf_flags___new, __RQF_FLUSH_SEQ___new))
		bit = bpf_core_enum_value(enum rqf_flags___new, __RQF_FLUSH_SEQ___new);
	return rq->rq_flags & (1u << bit); /* a plain load, as for every typed pointer here */
}

#define FLAG(kernel_bit, ours) \
	((cmd_flags & (1u << bpf_core_enum_value(enum req_flag_bits, kernel_bit))) ? (ours) : 0)

/* A flush request carries REQ_PREFLUSH too: the flag means "a flush before
 * this write", so a flush goes without it, as the blktrace back end has it. */
static __always_inline __u16 flags_of(__u32 cmd_flags)
{
	return FLAG(__REQ_SYNC, IOTRACE_F_SYNC) | FLAG(__REQ_FUA, IOTRACE_F_FUA) |
	       ((cmd_flags & 0xff) == 2 ? 0 : FLAG(__REQ_PREFLUSH, IOTRACE_F_PREFLUSH)) | FLAG(__REQ_META, IOTRACE_F_META) |
	       FLAG(__REQ_RAHEAD, IOTRACE_F_RAHEAD) | FLAG(__REQ_BACKGROUND, IOTRACE_F_BACKGROUND) |
	       FLAG(__REQ_NOMERGE, IOTRACE_F_NOMERGE);
}

static __always_inline void fill(struct iotrace_event *e, const struct iotrace_inflight *s, __u64 sector,
				 __u32 bytes, __u8 status, __u64 complete_ns)
{
	e->queue_ns = s->queue_ns;
	e->issue_ns = s->issue_ns;
	e->complete_ns = complete_ns;
	e->sector = sector;
	e->cgroup = s->cgroup;
	e->bytes = bytes;
	e->pid = s->pid;
	e->device = s->device;
	e->cpu = s->cpu;
	e->flags = s->flags;
	e->op = s->op;
	e->status = status;
	__builtin_memcpy(e->comm, s->comm, sizeof(e->comm));
}

/* Sends a completion's record through this CPU's ring. Only block_rq_complete
 * may call it (one writer per ring). */
static __always_inline void emit_completion(const struct iotrace_inflight *s, __u64 sector, __u32 bytes,
					    __u8 status, __u64 complete_ns)
{
	__u32 cpu = bpf_get_smp_processor_id(), i;
	struct iotrace_ring *r = bpf_map_lookup_elem(&rings, &cpu);
	struct iotrace_event *e;
	__u64 head, used;

	if (!r) {
		count_drop();
		return;
	}
	head = r->head;
	used = head - *(volatile __u64 *)&r->tail;
	i = cpu * ring_size + (__u32)(head & (ring_size - 1));
	e = used < ring_size ? bpf_map_lookup_elem(&records, &i) : 0;
	if (!e) {
		count_drop();
		return;
	}
	fill(e, s, sector, bytes, status, complete_ns);
	/* Publish: x86 does not reorder stores, and the compiler must not either
	 * (a weakly ordered CPU would need a store-release here). */
	asm volatile("" ::: "memory");
	r->head = head + 1;
	if (used == ring_size / 2)
		bpf_ringbuf_output(&events, &cpu, sizeof(cpu), BPF_RB_FORCE_WAKEUP);
}

/* A slot still holding an issued entry when its tag is allocated again: the
 * previous request's completion never came. Send what the entry kept. */
static __always_inline void flush_stale(const struct iotrace_inflight *s)
{
	struct iotrace_event *e;

	if (s->rq && s->issue_ns && !s->sent) {
		count(IOTRACE_UNCOMPLETED);
		e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
		if (!e) {
			count_drop();
			return;
		}
		fill(e, s, s->sector, s->bytes, 0, 0);
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	}
}

/* The current task as submitter, submitting at `now`; false when the filter
 * leaves it out. */
static __always_inline bool read_submitter(struct submitter *sub, __u64 now)
{
	struct task_struct *task;

	if (have_task_btf) {
		task = bpf_get_current_task_btf();
		sub->pid = task->tgid;
	} else {
		sub->pid = bpf_get_current_pid_tgid() >> 32;
	}
	if (filter_pid && sub->pid != filter_pid)
		return false;
	if (have_task_btf)
		__builtin_memcpy(sub->comm, task->comm, sizeof(sub->comm)); /* plain loads: cheaper than bpf_get_current_comm */
	else
		bpf_get_current_comm(sub->comm, sizeof(sub->comm));
	if (filter_by_comm && !comm_matches(sub->comm))
		return false;
	sub->queue_ns = now;
	if (have_task_btf)
		sub->cgroup = task->cgroups->dfl_cgrp->kn->id; /* what bpf_get_current_cgroup_id returns, without the call */
	else
		sub->cgroup = bpf_get_current_cgroup_id();
	sub->cpu = bpf_get_smp_processor_id() + 1;
	return true;
}

static __always_inline void set_submitter(struct iotrace_inflight *s, const struct submitter *sub)
{
	s->queue_ns = sub->queue_ns;
	s->cgroup = sub->cgroup;
	s->pid = sub->pid;
	s->cpu = sub->cpu;
	__builtin_memcpy(s->comm, sub->comm, sizeof(s->comm));
}

/* Runs in the submitter's context, on the submission path of every IO: plain
 * loads from the task and the request, one clock read, one slot store. */
static __always_inline int on_submit(struct request *rq)
{
	__u64 now = bpf_ktime_get_boot_ns();
	struct iotrace_device *dev = device_of(rq);
	struct iotrace_inflight *slot, *stale;
	struct iotrace_inflight s = {};
	struct submitter sub = {};
	__u64 key = (__u64)rq;
	__u32 cmd_flags;
	long err;

	if (!dev)
		return 0;
	if (!read_submitter(&sub, now))
		return 0;
	s.device = dev->index;
	set_submitter(&s, &sub);
	s.rq = key;
	cmd_flags = rq->cmd_flags; /* as submitted: a request the flush machinery completes is never issued */
	s.op = op_of(cmd_flags);
	s.flags = flags_of(cmd_flags);
	s.sector = rq->__sector;
	s.bytes = rq->__data_len;
	slot = slot_of(rq, dev);
	if (slot) {
		flush_stale(slot);
		s.in_slot = 1;
		*slot = s;
		return 0;
	}
	err = bpf_map_update_elem(&inflight, &key, &s, BPF_NOEXIST);
	if (err == -EEXIST) {
		/* An entry under a request being submitted anew belongs to its
		 * previous use. */
		stale = bpf_map_lookup_elem(&inflight, &key);
		if (stale)
			flush_stale(stale);
		err = bpf_map_update_elem(&inflight, &key, &s, BPF_ANY);
	}
	if (err)
		count_drop();
	return 0;
}

/* A request nobody submitted through block_io_start (flush, requeue,
 * passthrough): open an entry without a submitter, unless filtering by one.
 * Only submissions take slots: such a request may share its tag with one
 * that holds the slot (a flush borrows the tag of the request it serves). */
static __always_inline struct iotrace_inflight *open_anonymous(const struct iotrace_device *dev, __u64 key)
{
	struct iotrace_inflight s = {};

	if (filtering_submitter())
		return 0;
	s.device = dev->index;
	s.rq = key;
	if (bpf_map_update_elem(&inflight, &key, &s, BPF_NOEXIST)) {
		count_drop();
		return 0;
	}
	return bpf_map_lookup_elem(&inflight, &key);
}

SEC("tp_btf/block_io_start")
int BPF_PROG(block_io_start, struct request *rq)
{
	return on_submit(rq);
}

SEC("fentry/blk_account_io_start")
int BPF_PROG(blk_account_io_start, struct request *rq)
{
	return on_submit(rq);
}

/* The submitter of a bio (submit_by_bio), kept until a request takes it. */
SEC("tp_btf/block_bio_queue")
int block_bio_queue(u64 *ctx)
{
	__u64 now = bpf_ktime_get_boot_ns();
	struct bio *bio = (void *)ctx[bio_is_first_arg ? 0 : 1];
	struct submitter sub = {};
	__u64 key = (__u64)bio;

	if (!device_of_bio(bio) || !read_submitter(&sub, now))
		return 0;
	sub.opf = bio->bi_opf;
	if (bpf_map_update_elem(&bio_submitters, &key, &sub, BPF_ANY))
		count_drop();
	return 0;
}

/* The submitter block_bio_queue kept for the first bio of `rq`, taken out of
 * the table; 0 if none. */
static __always_inline bool take_bio_submitter(struct request *rq, struct submitter *out)
{
	__u64 key = (__u64)rq->bio;
	struct submitter *sub;

	if (!submit_by_bio || !key)
		return false;
	sub = bpf_map_lookup_elem(&bio_submitters, &key);
	if (!sub)
		return false;
	__builtin_memcpy(out, sub, sizeof(*out));
	bpf_map_delete_elem(&bio_submitters, &key);
	return true;
}

/* With submit_by_bio: an entry for `rq` with the submitter of its first bio,
 * in the hash table (a request nobody submitted may hold the slot). */
static __always_inline struct iotrace_inflight *open_by_bio(const struct iotrace_device *dev, struct request *rq)
{
	struct iotrace_inflight s = {};
	struct submitter sub;
	__u64 key = (__u64)rq;
	__u32 cmd_flags;

	if (!take_bio_submitter(rq, &sub))
		return 0;
	s.device = dev->index;
	set_submitter(&s, &sub);
	s.rq = key;
	cmd_flags = rq->cmd_flags;
	s.op = op_of(cmd_flags);
	/* The flush machinery clears a request's pre-flush and FUA bits when it
	 * takes it; a request it completes without issuing (an fsync's empty
	 * write) keeps them as submitted, as block_io_start sees them. */
	s.flags = flags_of(cmd_flags) | (flags_of(sub.opf) & (IOTRACE_F_PREFLUSH | IOTRACE_F_FUA));
	s.sector = rq->__sector;
	s.bytes = rq->__data_len;
	if (bpf_map_update_elem(&inflight, &key, &s, BPF_ANY)) {
		count_drop();
		return 0;
	}
	return bpf_map_lookup_elem(&inflight, &key);
}

SEC("tp_btf/block_rq_issue")
int block_rq_issue(u64 *ctx)
{
	__u64 now = bpf_ktime_get_boot_ns();
	struct request *rq = (void *)ctx[rq_is_first_arg ? 0 : 1];
	struct iotrace_device *dev = device_of(rq);
	struct iotrace_inflight *s;
	__u32 cmd_flags;

	if (!dev)
		return 0;
	s = entry_of(rq, dev);
	if (!s)
		s = open_by_bio(dev, rq);
	if (!s)
		s = open_anonymous(dev, (__u64)rq);
	if (s) {
		s->issue_ns = now; /* a requeued request keeps its last dispatch */
		cmd_flags = rq->cmd_flags;
		s->op = op_of(cmd_flags);
		s->flags = flags_of(cmd_flags);
		s->sector = rq->__sector;
		s->bytes = rq->__data_len;
	}
	return 0;
}

/* A request merged into another is freed without completing: close its entry,
 * or a hash table entry would hold its place for the rest of the capture. */
SEC("tp_btf/block_rq_merge")
int block_rq_merge(u64 *ctx)
{
	struct request *rq = (void *)ctx[rq_is_first_arg ? 0 : 1];
	struct iotrace_device *dev = device_of(rq);
	struct iotrace_inflight *s;

	if (!dev)
		return 0;
	s = entry_of(rq, dev);
	if (s)
		close_entry(rq, s);
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(block_rq_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	__u64 now = bpf_ktime_get_boot_ns();
	struct iotrace_device *dev = device_of(rq);
	struct iotrace_inflight *s;
	__u32 left;

	if (!dev)
		return 0;
	s = entry_of(rq, dev);
	if (!s && submit_by_bio)
		/* Completed without being issued (an fsync's empty write): its
		 * record goes out from its bio's submitter; the entry is closed. */
		s = open_by_bio(dev, rq);
	if (!s) {
		/* Nothing is dropped silently: count what cannot be placed. */
		if (!filtering_submitter()) {
			count(IOTRACE_UNMATCHED);
			count_n(IOTRACE_UNMATCHED_BYTES, rq->__data_len);
		}
		return 0;
	}
	if (s->sent) { /* the end of its flush sequence: recorded at its data's completion */
		close_entry(rq, s);
		return 0;
	}
	left = rq->__data_len;
	/* A partial completion reports the bytes done; the rest follows. */
	emit_completion(s, rq->__sector, nr_bytes < left ? nr_bytes : left, error, now);
	if (nr_bytes < left)
		return 0;
	if (s->op != IOTRACE_OP_FLUSH && in_flush_sequence(rq))
		s->sent = 1;
	else
		close_entry(rq, s);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
