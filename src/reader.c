/*
 * reader.c - stream a wsprof trace back into events in global order.
 *
 * Chunks are read and decompressed one at a time. Their events go into a
 * pending list; a SYNC record (or the end of the file) releases, sorted by
 * sequence number, every pending event below its watermark. Memory is the
 * pending window plus the stack and module tables.
 *
 * The pending list is kept as runs, one per segment: a thread numbers its
 * events in order, so each run is sorted already, and a release takes the
 * prefix of each run below the watermark and sorts only what it took.
 * Every event is moved and sorted once, however long it waits (a thread
 * preempted while it held its buffer holds the watermark back for a
 * whole flush interval, while the other threads' events pile up).
 *
 * A damaged file never crashes the reader: every length is checked before
 * it is used, and reading stops at the first chunk that fails, keeping what
 * came before (the status says why).
 */

#include "format.h"
#include "grow.h"
#include "wsprof/trace.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

struct module {
	uint64_t base;
	char *path;
	uint8_t *build_id;
	size_t build_id_len;
	size_t nsegs;
	struct { uint64_t vaddr, memsz; } *segs;
};

struct pending {
	wsprof_event ev;
	char *path;          /* owned copy for exec events */
	struct module *mod;  /* decoded module for MODULE_LOAD */
	wsprof_region *regions; /* owned, for ACCESS */
};

struct stack_node {
	uint64_t parent, ip;
	bool defined;
};

/* Per-segment delta state. */
struct segment {
	uint32_t tid;
	uint64_t seq, time, addr;
	bool open;
};

struct wsprof_trace {
	FILE *f;
	uint64_t bytes_read, file_size; /* for wsprof_trace_position; size 0: not a regular file */
	wsprof_process proc;
	char *exe, *cmdline, *tool_version, *access_note;

	ZSTD_DCtx *dctx;
	uint8_t *zbuf, *raw;
	size_t zcap, rawcap;
	struct wsp_cursor chunk;  /* undecoded rest of the current chunk */
	struct segment seg;       /* delta state of its open segment */
	bool in_chunk;

	struct pending *pend;     /* events not yet released, in runs (holes between) */
	size_t npend, pendcap;    /* slots used, holes included */
	struct run { size_t next, end; } *runs; /* pend[next..end) of one segment, sorted */
	size_t nruns, runcap, nlive; /* nlive: events in runs */
	size_t *merge, mergecap;  /* release()'s work space: 2 per run */
	bool run_open;            /* the last run takes the next event */
	struct pending *ready;    /* released, sorted, being handed out */
	size_t nready, readycap, readypos;
	struct pending current;   /* the event last handed out (owns its strings) */

	struct stack_node *stacks;
	size_t nstacks;           /* table capacity */
	uint64_t defined_stacks;  /* distinct ids defined */

	struct module *mods;
	size_t nmods, modcap;

	uint32_t *tids;           /* open-addressing set of thread ids */
	size_t tidcap, ntids;

	uint64_t next_chunk;
	bool eof, footer_seen, exec_seen;
	int error;
	uint64_t events;
	uint64_t last_time;
	uint64_t footer_end, footer_chunks, footer_events;
};

const char *wsprof_strerror(int err)
{
	switch (err) {
	case 0: return "success";
	case WSPROF_E_NOT_TRACE: return "not a wsprof trace (wrong magic): pass a file written by wsprof record";
	case WSPROF_E_NEWER: return "trace written by a newer wsprof (format major version too high): use a newer wsprof to read it";
	case WSPROF_E_CORRUPT: return "trace is corrupt";
	case WSPROF_E_TRUNCATED: return "trace is truncated (the traced program was killed or is still running)";
	case WSPROF_E_EMPTY: return "trace file is empty (the traced program may have been killed before its first flush)";
	default: return err < 0 ? strerror(-err) : "unknown error";
	}
}

static const char *const kind_names[WSPROF_KIND_COUNT] = {
	"heap", "mmap", "cuda_device", "cuda_managed", "cuda_host", "cuda_vmm", "pool",
	"cuda_vmm_mapped", "cuda_vmm_reserved",
};

const char *wsprof_kind_name(unsigned kind)
{
	return kind < WSPROF_KIND_COUNT ? kind_names[kind] : NULL;
}

static const char *const op_names[WSPROF_OP_COUNT] = {
	"malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc",
	"memalign", "valloc", "pvalloc", "free", "cfree", "mmap", "munmap", "mremap",
	"cuMemAlloc", "cuMemAllocPitch", "cuMemFree", "cuMemAllocManaged", "cuMemAllocHost",
	"cuMemHostAlloc", "cuMemFreeHost", "cuMemHostRegister", "cuMemHostUnregister",
	"cuMemAllocAsync", "cuMemAllocFromPoolAsync", "cuMemFreeAsync", "cuMemCreate", "cuMemRelease",
	"cuMemMap", "cuMemUnmap", "cuMemAddressReserve", "cuMemAddressFree",
	"cudaMalloc", "cudaMallocPitch", "cudaMallocManaged", "cudaMallocHost", "cudaHostAlloc",
	"cudaHostRegister", "cudaMallocAsync", "cudaMallocFromPoolAsync", "pool_alloc", "pool_free",
};

static const char *const annotation_names[WSPROF_ANN_COUNT] = {
	"name", "acquire", "release", "valid", "invalid", "touch", "phase_push", "phase_pop", "snapshot",
	"pool_reset",
};

const char *wsprof_annotation_name(unsigned ann)
{
	return ann < WSPROF_ANN_COUNT ? annotation_names[ann] : NULL;
}

const char *wsprof_op_name(unsigned op)
{
	return op < WSPROF_OP_COUNT ? op_names[op] : NULL;
}


static char *dup_bytes(const uint8_t *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

static void module_free(struct module *m)
{
	if (!m)
		return;
	free(m->path);
	free(m->build_id);
	free(m->segs);
}

static void pending_release(struct pending *p)
{
	free(p->path);
	p->path = NULL;
	free(p->regions);
	p->regions = NULL;
	if (p->mod) {
		module_free(p->mod);
		free(p->mod);
		p->mod = NULL;
	}
}

static int tid_note(wsprof_trace *t, uint32_t tid)
{
	if (t->ntids * 2 >= t->tidcap) {
		size_t ncap = t->tidcap ? t->tidcap * 2 : 64;
		uint32_t *n = calloc(ncap, sizeof *n);
		if (!n)
			return -ENOMEM;
		for (size_t i = 0; i < t->tidcap; i++) {
			if (!t->tids[i])
				continue;
			size_t j = t->tids[i] * 2654435761u % ncap;
			while (n[j])
				j = (j + 1) % ncap;
			n[j] = t->tids[i];
		}
		free(t->tids);
		t->tids = n;
		t->tidcap = ncap;
	}
	size_t j = (uint64_t)tid * 2654435761u % t->tidcap;
	while (t->tids[j] && t->tids[j] != tid)
		j = (j + 1) % t->tidcap;
	if (!t->tids[j]) {
		t->tids[j] = tid;
		t->ntids++;
	}
	return 0;
}

/* ---- header ---------------------------------------------------------- */

static int read_exact(wsprof_trace *t, void *buf, size_t n)
{
	size_t got = fread(buf, 1, n, t->f);
	t->bytes_read += got;
	if (got == n)
		return 0;
	if (ferror(t->f))
		return -EIO;
	return got == 0 ? 1 : WSPROF_E_TRUNCATED; /* 1: clean end of file */
}

static char *get_string(struct wsp_cursor *c)
{
	size_t n;
	const uint8_t *s = wsp_get_bytes(c, &n);
	return dup_bytes(s ? s : (const uint8_t *)"", s ? n : 0);
}

static int parse_header_records(wsprof_trace *t, struct wsp_cursor *c)
{
	while (c->p < c->end) {
		uint64_t type = wsp_get_varint(c), len = wsp_get_varint(c);
		if (c->bad || len > (uint64_t)(c->end - c->p))
			return WSPROF_E_CORRUPT;
		struct wsp_cursor r = { c->p, c->p + len, false };
		c->p += len;
		if (type == WSP_REC_PROCESS) {
			t->proc.pid = (uint32_t)wsp_get_field(&r);
			t->proc.ppid = (uint32_t)wsp_get_field(&r);
			t->proc.start_realtime_ns = wsp_get_field(&r);
			wsp_get_field(&r); /* start_monotonic_ns: times in segments are already relative */
			free(t->exe);
			free(t->cmdline);
			free(t->tool_version);
			t->exe = get_string(&r);
			size_t cmdlen;
			const uint8_t *cmd = wsp_get_bytes(&r, &cmdlen);
			if (cmdlen && cmd[cmdlen - 1] == 0)
				cmdlen--; /* /proc/self/cmdline ends each argument with a NUL */
			t->cmdline = dup_bytes(cmd ? cmd : (const uint8_t *)"", cmd ? cmdlen : 0);
			for (size_t i = 0; t->cmdline && i < cmdlen; i++) /* NULs between arguments -> spaces */
				if (!t->cmdline[i])
					t->cmdline[i] = ' ';
			t->tool_version = get_string(&r);
			wsp_get_field(&r); /* page size */
			t->proc.parent_traced_pid = (uint32_t)wsp_get_field(&r);
			if (!t->exe || !t->cmdline || !t->tool_version)
				return -ENOMEM;
		} else if (type == WSP_REC_CONFIG) {
			t->proc.stack_depth = (unsigned)wsp_get_field(&r);
			t->proc.flush_ms = (unsigned)wsp_get_field(&r);
			t->proc.follow = (unsigned)wsp_get_field(&r);
			t->proc.access_sources = (unsigned)wsp_get_field(&r);
			t->proc.wp_pages = (unsigned)wsp_get_field(&r);
			t->proc.window_ms = (unsigned)wsp_get_field(&r);
			t->proc.max_regions = (unsigned)wsp_get_field(&r);
			free(t->access_note);
			t->access_note = get_string(&r);
			if (!t->access_note)
				return -ENOMEM;
		}
		if (r.bad)
			return WSPROF_E_CORRUPT;
	}
	return 0;
}

static int read_header(wsprof_trace *t)
{
	uint8_t fixed[WSP_HEADER_FIXED];
	size_t got = fread(fixed, 1, sizeof fixed, t->f);
	t->bytes_read += got;
	if (got == 0)
		return ferror(t->f) ? -EIO : WSPROF_E_EMPTY;
	if (got < 16 || wsp_get_le32(fixed) != WSP_MAGIC_HEADER ||
	    memcmp(fixed + 8, WSP_SIGNATURE, WSP_SIGNATURE_LEN) != 0)
		return WSPROF_E_NOT_TRACE;
	if (got < sizeof fixed)
		return WSPROF_E_TRUNCATED;
	t->proc.format_major = wsp_get_le16(fixed + 16);
	t->proc.format_minor = wsp_get_le16(fixed + 18);
	if (t->proc.format_major > WSPROF_FORMAT_MAJOR)
		return WSPROF_E_NEWER;
	uint32_t size = wsp_get_le32(fixed + 4);
	if (size < WSP_HEADER_FIXED - 8 || size > WSP_HEADER_MAX)
		return WSPROF_E_CORRUPT;
	size_t rest = size - (WSP_HEADER_FIXED - 8);
	uint8_t *buf = malloc(rest ? rest : 1);
	if (!buf)
		return -ENOMEM;
	int err = read_exact(t, buf, rest);
	if (err == 1)
		err = WSPROF_E_TRUNCATED;
	if (!err) {
		struct wsp_cursor c = { buf, buf + rest, false };
		err = parse_header_records(t, &c);
	}
	free(buf);
	return err;
}

int wsprof_trace_open(const char *path, wsprof_trace **out)
{
	*out = NULL;
	wsprof_trace *t = calloc(1, sizeof *t);
	if (!t)
		return -ENOMEM;
	t->f = fopen(path, "rbe");
	if (!t->f) {
		int err = -errno;
		free(t);
		return err;
	}
	struct stat st;
	if (fstat(fileno(t->f), &st) == 0 && S_ISREG(st.st_mode))
		t->file_size = (uint64_t)st.st_size;
	t->dctx = ZSTD_createDCtx();
	int err = t->dctx ? read_header(t) : -ENOMEM;
	if (err) {
		wsprof_trace_close(t);
		return err;
	}
	t->proc.exe = t->exe ? t->exe : "";
	t->proc.cmdline = t->cmdline ? t->cmdline : "";
	t->proc.tool_version = t->tool_version ? t->tool_version : "";
	t->proc.access_note = t->access_note ? t->access_note : "";
	*out = t;
	return 0;
}

const wsprof_process *wsprof_trace_process(const wsprof_trace *t)
{
	return &t->proc;
}

/* ---- chunks and records -------------------------------------------- */

static int add_stack(wsprof_trace *t, uint64_t id, uint64_t parent, uint64_t ip)
{
	/* Ids come from one counter and each is defined once, the ones still
	 * in other threads' buffers a little later: an id far beyond the count
	 * of those defined is corruption, not a reason to allocate. (Far beyond
	 * the highest would not do: a run of far jumps, each from the last,
	 * makes a few hundred bytes ask for gigabytes.) */
	if (id == 0 || id > t->defined_stacks + (1u << 20))
		return WSPROF_E_CORRUPT;
	if (id >= t->nstacks) {
		size_t cap = t->nstacks, need = (size_t)id + 1;
		if (wsp_grow(&t->stacks, &cap, need, sizeof *t->stacks))
			return -ENOMEM;
		memset(t->stacks + t->nstacks, 0, (cap - t->nstacks) * sizeof *t->stacks);
		t->nstacks = cap;
	}
	if (!t->stacks[id].defined)
		t->defined_stacks++;
	t->stacks[id] = (struct stack_node){ parent, ip, true };
	return 0;
}

static struct pending *pending_push(wsprof_trace *t, struct segment *s, struct wsp_cursor *r)
{
	if (wsp_grow(&t->pend, &t->pendcap, t->npend + 1, sizeof *t->pend))
		return NULL;
	if (!t->run_open || !t->nruns) {
		if (wsp_grow(&t->runs, &t->runcap, t->nruns + 1, sizeof *t->runs))
			return NULL;
		t->runs[t->nruns++] = (struct run){ t->npend, t->npend };
		t->run_open = true;
	}
	t->runs[t->nruns - 1].end++;
	t->nlive++;
	struct pending *p = &t->pend[t->npend++];
	memset(p, 0, sizeof *p);
	s->seq += wsp_get_field(r);
	s->time += wsp_get_field(r);
	p->ev.seq = s->seq;
	p->ev.time_ns = s->time;
	p->ev.tid = s->tid;
	p->ev.device = -1;
	if (s->time > t->last_time)
		t->last_time = s->time;
	return p;
}

static uint64_t get_addr(struct segment *s, struct wsp_cursor *r)
{
	s->addr += (uint64_t)wsp_unzigzag(wsp_get_field(r));
	return s->addr;
}

/* A device ordinal, written plus one (0: none). One that no int holds is
 * corrupt. */
static int get_device(struct wsp_cursor *r)
{
	uint64_t d = wsp_get_field(r);
	if (d > (uint64_t)INT_MAX + 1) {
		r->bad = true;
		return -1;
	}
	return d ? (int)(d - 1) : -1;
}

/* CUDA events append the device (+1, 0: none), the stream and, for
 * allocations, the VMM handle a mapping maps (format 1.1). */
static void get_cuda_fields(wsprof_event *ev, struct wsp_cursor *r, bool handle)
{
	ev->device = get_device(r);
	ev->stream = wsp_get_field(r);
	if (handle)
		ev->handle = wsp_get_field(r);
}

static int decode_module_load(struct pending *p, struct wsp_cursor *r)
{
	p->ev.type = WSPROF_EV_MODULE_LOAD;
	struct module *m = p->mod = calloc(1, sizeof *m);
	if (!m)
		return -ENOMEM;
	m->base = p->ev.addr = wsp_get_field(r);
	size_t n;
	const uint8_t *path = wsp_get_bytes(r, &n);
	const uint8_t *bid = wsp_get_bytes(r, &m->build_id_len);
	uint64_t nsegs = wsp_get_field(r);
	if (r->bad || nsegs > (uint64_t)(r->end - r->p))
		return WSPROF_E_CORRUPT;
	m->path = dup_bytes(path, n);
	m->build_id = (uint8_t *)dup_bytes(bid, m->build_id_len);
	m->segs = calloc(nsegs ? nsegs : 1, sizeof *m->segs);
	if (!m->path || !m->build_id || !m->segs)
		return -ENOMEM;
	for (uint64_t i = 0; i < nsegs; i++) {
		m->segs[i].vaddr = wsp_get_field(r);
		m->segs[i].memsz = wsp_get_field(r);
		wsp_get_field(r); /* p_flags */
	}
	m->nsegs = (size_t)nsegs;
	return r->bad ? WSPROF_E_CORRUPT : 0;
}

static int decode_event(wsprof_trace *t, struct segment *s, uint64_t type, struct wsp_cursor *r)
{
	struct pending *p = pending_push(t, s, r);
	if (!p)
		return -ENOMEM;
	int err = 0;
	switch (type) {
	case WSP_REC_ALLOC:
	case WSP_REC_FAIL:
		p->ev.type = type == WSP_REC_ALLOC ? WSPROF_EV_ALLOC : WSPROF_EV_FAIL;
		p->ev.kind = (unsigned)wsp_get_field(r);
		p->ev.op = (unsigned)wsp_get_field(r);
		if (type == WSP_REC_ALLOC)
			p->ev.addr = get_addr(s, r);
		p->ev.size = wsp_get_field(r);
		p->ev.stack = wsp_get_field(r);
		get_cuda_fields(&p->ev, r, true);
		break;
	case WSP_REC_FREE:
	case WSP_REC_MOVE:
	case WSP_REC_UNMAP:
		p->ev.type = type == WSP_REC_FREE ? WSPROF_EV_FREE
			   : type == WSP_REC_MOVE ? WSPROF_EV_MOVE : WSPROF_EV_UNMAP;
		p->ev.kind = (unsigned)wsp_get_field(r);
		p->ev.op = (unsigned)wsp_get_field(r);
		p->ev.addr = get_addr(s, r);
		if (type != WSP_REC_FREE)
			p->ev.size = wsp_get_field(r);
		else
			get_cuda_fields(&p->ev, r, false);
		break;
	case WSP_REC_STREAM_REACHED:
		p->ev.type = WSPROF_EV_STREAM_REACHED;
		p->ev.kind = (unsigned)wsp_get_field(r);
		p->ev.op = (unsigned)wsp_get_field(r);
		p->ev.addr = get_addr(s, r);
		p->ev.stream = wsp_get_field(r);
		break;
	case WSP_REC_ANNOTATE: {
		p->ev.type = WSPROF_EV_ANNOTATE;
		p->ev.op = (unsigned)wsp_get_field(r);
		p->ev.addr = get_addr(s, r);
		p->ev.size = wsp_get_field(r);
		p->ev.handle = wsp_get_field(r);
		size_t n;
		const uint8_t *text = wsp_get_bytes(r, &n);
		if (!r->bad && n) {
			p->path = dup_bytes(text, n);
			if (!p->path)
				err = -ENOMEM;
		}
		break;
	}
	case WSP_REC_ACCESS: {
		p->ev.type = WSPROF_EV_ACCESS;
		p->ev.op = (unsigned)wsp_get_field(r);
		p->ev.size = wsp_get_field(r);
		uint64_t n = wsp_get_field(r);
		if (n > (uint64_t)(r->end - r->p) / 2) { /* each region takes two bytes at least */
			r->bad = true;
			break;
		}
		p->regions = malloc((n ? n : 1) * sizeof *p->regions);
		if (!p->regions) {
			err = -ENOMEM;
			break;
		}
		uint64_t end = 0;
		for (uint64_t i = 0; i < n; i++) {
			p->regions[i].addr = end + wsp_get_field(r);
			p->regions[i].len = wsp_get_field(r);
			end = p->regions[i].addr + p->regions[i].len;
		}
		p->ev.nregions = (size_t)n;
		break;
	}
	case WSP_REC_RSS:
		p->ev.type = WSPROF_EV_RSS;
		p->ev.size = wsp_get_field(r);
		break;
	case WSP_REC_DEVICE_MEMORY:
		p->ev.type = WSPROF_EV_DEVICE_MEMORY;
		p->ev.device = get_device(r);
		p->ev.device_free = wsp_get_field(r);
		p->ev.device_total = wsp_get_field(r);
		break;
	case WSP_REC_MODULE_LOAD:
		err = decode_module_load(p, r);
		break;
	case WSP_REC_MODULE_UNLOAD:
		p->ev.type = WSPROF_EV_MODULE_UNLOAD;
		p->ev.addr = wsp_get_field(r);
		break;
	case WSP_REC_FORK:
		p->ev.type = WSPROF_EV_FORK;
		p->ev.child_pid = (uint32_t)wsp_get_field(r);
		break;
	case WSP_REC_EXEC: {
		p->ev.type = WSPROF_EV_EXEC;
		size_t n;
		const uint8_t *path = wsp_get_bytes(r, &n);
		p->path = r->bad ? NULL : dup_bytes(path, n);
		if (!r->bad && !p->path)
			err = -ENOMEM;
		break;
	}
	}
	if (r->bad || (p->ev.kind >= WSPROF_KIND_COUNT && p->ev.type != WSPROF_EV_MODULE_LOAD))
		err = err ? err : WSPROF_E_CORRUPT;
	if (err) {
		pending_release(p);
		t->npend--;
		t->runs[t->nruns - 1].end--;
		t->nlive--;
		return err;
	}
	if (type <= WSP_REC_UNMAP)
		t->events++;
	/* Threads are the program's: wsprof's own (writer, sampler) record only
	 * samples, never an allocation or an annotation. */
	if (type <= WSP_REC_UNMAP || type == WSP_REC_ANNOTATE)
		return tid_note(t, s->tid);
	return 0;
}

/* Drop emptied runs and, once holes are most of the list, close them up:
 * each event is moved at most a constant number of times on average. */
static void pending_compact(wsprof_trace *t)
{
	size_t kept = 0;
	for (size_t i = 0; i < t->nruns; i++)
		if (t->runs[i].next < t->runs[i].end || (i == t->nruns - 1 && t->run_open))
			t->runs[kept++] = t->runs[i];
	t->nruns = kept;
	if (t->nlive * 2 >= t->npend)
		return;
	size_t to = 0;
	for (size_t i = 0; i < t->nruns; i++) {
		size_t n = t->runs[i].end - t->runs[i].next;
		memmove(t->pend + to, t->pend + t->runs[i].next, n * sizeof *t->pend);
		t->runs[i] = (struct run){ to, to + n };
		to += n;
	}
	t->npend = to;
}

/* Move every pending event with seq < watermark to the ready list, sorted. */
static int release(wsprof_trace *t, uint64_t watermark)
{
	if (!t->nruns)
		return 0;
	/* Where each run's prefix below the watermark stops, and a heap of
	 * runs by the number of their next event, both kept between calls. */
	if (wsp_grow(&t->merge, &t->mergecap, 2 * t->nruns, sizeof *t->merge))
		return -ENOMEM;
	size_t *stop = t->merge, *heap = t->merge + t->nruns, n = 0, nh = 0;
	for (size_t i = 0; i < t->nruns; i++) {
		struct run *r = &t->runs[i];
		size_t j = r->next;
		while (j < r->end && t->pend[j].ev.seq < watermark)
			j++;
		stop[i] = j;
		n += j - r->next;
	}
	if (!n)
		return 0;
	/* Compact what was already handed out before appending. */
	if (t->readypos) {
		memmove(t->ready, t->ready + t->readypos, (t->nready - t->readypos) * sizeof *t->ready);
		t->nready -= t->readypos;
		t->readypos = 0;
	}
	if (wsp_grow(&t->ready, &t->readycap, t->nready + n, sizeof *t->ready))
		return -ENOMEM;
	/* A k-way merge of the runs' prefixes, each event copied once. */
#define HEAD(k) (t->pend[t->runs[heap[k]].next].ev.seq)
	for (size_t i = 0; i < t->nruns; i++) {
		if (stop[i] == t->runs[i].next)
			continue;
		size_t k = nh++; /* sift up */
		heap[k] = i;
		while (k && HEAD((k - 1) / 2) > HEAD(k)) {
			size_t up = (k - 1) / 2, tmp = heap[up];
			heap[up] = heap[k];
			heap[k] = tmp;
			k = up;
		}
	}
	while (nh) {
		struct run *r = &t->runs[heap[0]];
		t->ready[t->nready++] = t->pend[r->next++];
		if (r->next == stop[heap[0]])
			heap[0] = heap[--nh];
		for (size_t k = 0;;) { /* sift down */
			size_t a = 2 * k + 1, b = a + 1, m = k;
			if (a < nh && HEAD(a) < HEAD(m))
				m = a;
			if (b < nh && HEAD(b) < HEAD(m))
				m = b;
			if (m == k)
				break;
			size_t tmp = heap[m];
			heap[m] = heap[k];
			heap[k] = tmp;
			k = m;
		}
	}
#undef HEAD
	t->nlive -= n;
	pending_compact(t);
	return 0;
}

/* Decode the current chunk's records until a SYNC makes events ready or
 * the chunk ends, so only the events between two SYNCs are ever held. */
static int decode_some(wsprof_trace *t)
{
	struct wsp_cursor *c = &t->chunk;
	struct segment *seg = &t->seg;
	while (c->p < c->end) {
		uint64_t type = wsp_get_varint(c), rlen = wsp_get_varint(c);
		if (c->bad || rlen > (uint64_t)(c->end - c->p))
			return WSPROF_E_CORRUPT;
		struct wsp_cursor r = { c->p, c->p + rlen, false };
		c->p += rlen;
		int err = 0;
		switch (type) {
		case WSP_REC_SEGMENT:
			t->run_open = false; /* its events are a run of their own */
			seg->tid = (uint32_t)wsp_get_field(&r);
			seg->seq = wsp_get_field(&r);
			seg->time = wsp_get_field(&r);
			seg->addr = 0;
			seg->open = true;
			break;
		case WSP_REC_SYNC: {
			uint64_t watermark = wsp_get_field(&r), time = wsp_get_field(&r);
			if (time > t->last_time)
				t->last_time = time; /* a quiet program's trace still shows how long it ran */
			err = release(t, watermark);
			break;
		}
		case WSP_REC_STACK: {
			uint64_t id = wsp_get_field(&r), parent = wsp_get_field(&r), ip = wsp_get_field(&r);
			err = r.bad ? WSPROF_E_CORRUPT : add_stack(t, id, parent, ip);
			break;
		}
		case WSP_REC_ALLOC: case WSP_REC_FREE: case WSP_REC_MOVE: case WSP_REC_FAIL:
		case WSP_REC_UNMAP: case WSP_REC_MODULE_LOAD: case WSP_REC_MODULE_UNLOAD:
		case WSP_REC_FORK: case WSP_REC_EXEC: case WSP_REC_STREAM_REACHED: case WSP_REC_DEVICE_MEMORY:
		case WSP_REC_ANNOTATE: case WSP_REC_ACCESS: case WSP_REC_RSS:
			if (!seg->open)
				return WSPROF_E_CORRUPT;
			err = decode_event(t, seg, type, &r);
			if (type == WSP_REC_EXEC)
				t->exec_seen = true;
			break;
		default:
			break; /* a record of a later minor version */
		}
		if (err)
			return err;
		if (r.bad)
			return WSPROF_E_CORRUPT;
		if (t->readypos < t->nready)
			return 0;
	}
	t->in_chunk = false;
	t->next_chunk++;
	return 0;
}

static int read_footer(wsprof_trace *t, uint32_t size, const uint8_t *first)
{
	/* `first` holds the 16 bytes already read after the frame header. */
	if (size > 4096)
		return WSPROF_E_CORRUPT;
	uint8_t buf[4096];
	size_t have = size < 16 ? size : 16;
	memcpy(buf, first, have);
	if (size > have) {
		int err = read_exact(t, buf + have, size - have);
		if (err)
			return err == 1 ? WSPROF_E_TRUNCATED : err;
	}
	struct wsp_cursor c = { buf, buf + size, false };
	uint64_t type = wsp_get_varint(&c), len = wsp_get_varint(&c);
	if (c.bad || type != WSP_REC_FOOTER || len > (uint64_t)(c.end - c.p))
		return WSPROF_E_CORRUPT;
	struct wsp_cursor r = { c.p, c.p + len, false };
	t->footer_end = wsp_get_field(&r);
	t->footer_chunks = wsp_get_field(&r);
	t->footer_events = wsp_get_field(&r);
	if (r.bad)
		return WSPROF_E_CORRUPT;
	t->footer_seen = true;
	return 0;
}

/* Read and decompress the next chunk. @return 1 if one was read, 0 at the end. */
static int read_chunk(wsprof_trace *t)
{
	uint8_t h[WSP_CHUNK_HEADER];
	int err = read_exact(t, h, 8);
	if (err == 1)
		return 0;
	if (err)
		return err;
	uint32_t magic = wsp_get_le32(h), size = wsp_get_le32(h + 4);
	if (magic == WSP_MAGIC_FOOTER) {
		size_t first = size < 16 ? size : 16;
		err = read_exact(t, h + 8, first);
		if (err)
			return err == 1 ? WSPROF_E_TRUNCATED : err;
		err = read_footer(t, size, h + 8);
		return err ? err : 0;
	}
	if (magic != WSP_MAGIC_CHUNK || size != WSP_CHUNK_HEADER - 8)
		return WSPROF_E_CORRUPT;
	err = read_exact(t, h + 8, WSP_CHUNK_HEADER - 8);
	if (err)
		return err == 1 ? WSPROF_E_TRUNCATED : err;
	uint32_t index = wsp_get_le32(h + 8), rawsize = wsp_get_le32(h + 12),
		 zsize = wsp_get_le32(h + 16);
	if (index != t->next_chunk || rawsize > WSP_CHUNK_RAW_MAX ||
	    zsize > ZSTD_compressBound(rawsize) + 64)
		return WSPROF_E_CORRUPT;
	if (wsp_grow(&t->zbuf, &t->zcap, zsize, 1) || wsp_grow(&t->raw, &t->rawcap, rawsize + 1, 1))
		return -ENOMEM;
	err = read_exact(t, t->zbuf, zsize);
	if (err)
		return err == 1 ? WSPROF_E_TRUNCATED : err;
	size_t n = ZSTD_decompressDCtx(t->dctx, t->raw, rawsize, t->zbuf, zsize);
	if (ZSTD_isError(n) || n != rawsize)
		return WSPROF_E_CORRUPT;
	/* The recorder writes nothing after an EXEC's chunk unless exec failed. */
	t->exec_seen = false;
	t->chunk = (struct wsp_cursor){ t->raw, t->raw + n, false };
	memset(&t->seg, 0, sizeof t->seg);
	t->in_chunk = true;
	return 1;
}

/* ---- events out ----------------------------------------------------- */

/* Keep the module table in step with the events handed out; the module
 * moves from the event into the table. */
static int apply_module(wsprof_trace *t, struct pending *p)
{
	if (p->ev.type == WSPROF_EV_MODULE_UNLOAD) {
		for (size_t i = 0; i < t->nmods; i++) {
			if (t->mods[i].base != p->ev.addr)
				continue;
			module_free(&t->mods[i]);
			t->mods[i] = t->mods[--t->nmods];
			break;
		}
		return 0;
	}
	if (wsp_grow(&t->mods, &t->modcap, t->nmods + 1, sizeof *t->mods))
		return -ENOMEM;
	t->mods[t->nmods++] = *p->mod;
	free(p->mod);
	p->mod = NULL;
	return 0;
}

int wsprof_trace_next(wsprof_trace *t, wsprof_event *ev)
{
	pending_release(&t->current);
	while (t->readypos == t->nready) {
		if (t->eof) {
			if (!t->nlive)
				return 0;
			int err = release(t, UINT64_MAX);
			if (err)
				return err;
			continue;
		}
		int r;
		if (t->in_chunk) {
			r = decode_some(t);
			if (r == 0)
				continue;
			t->in_chunk = false;
		} else {
			r = read_chunk(t);
			if (r == 1)
				continue;
		}
		if (r == -ENOMEM)
			return r;
		t->eof = true;
		if (r < 0)
			t->error = r;
		else if (!t->footer_seen && !t->exec_seen)
			t->error = WSPROF_E_TRUNCATED;
	}
	t->current = t->ready[t->readypos++];
	*ev = t->current.ev;
	ev->path = t->current.path;
	if (ev->type == WSPROF_EV_ANNOTATE) {
		ev->text = ev->path;
		ev->path = NULL;
	}
	ev->regions = t->current.regions;
	if (ev->type == WSPROF_EV_MODULE_LOAD) {
		/* Point the event at the table's copy, which outlives it. */
		if (apply_module(t, &t->current))
			return -ENOMEM;
		const struct module *m = &t->mods[t->nmods - 1];
		ev->path = m->path;
		ev->build_id = m->build_id;
		ev->build_id_len = m->build_id_len;
	} else if (ev->type == WSPROF_EV_MODULE_UNLOAD && apply_module(t, &t->current)) {
		return -ENOMEM;
	}
	return 1;
}

void wsprof_trace_get_status(const wsprof_trace *t, wsprof_trace_status *st)
{
	memset(st, 0, sizeof *st);
	st->chunks = t->next_chunk;
	st->events = t->events;
	st->error = t->error;
	st->ended_by_exec = t->exec_seen && !t->footer_seen;
	st->threads = t->ntids;
	st->end_time_ns = t->footer_seen && t->footer_end > t->last_time ? t->footer_end : t->last_time;
	if (t->footer_seen && !t->error && t->eof && t->footer_chunks == t->next_chunk &&
	    t->footer_events == t->events)
		st->complete = 1;
	else if (t->exec_seen && !t->error && t->eof)
		st->complete = 1;
	else if (t->footer_seen && !t->error && t->eof)
		st->error = WSPROF_E_CORRUPT; /* the footer disagrees with what was read */
}

void wsprof_trace_position(const wsprof_trace *t, uint64_t *bytes_read, uint64_t *file_size)
{
	*bytes_read = t->bytes_read;
	*file_size = t->file_size;
}

size_t wsprof_trace_stack(const wsprof_trace *t, uint64_t stack, uint64_t *ips, size_t max)
{
	size_t depth = 0;
	/* The depth bound also stops a cycle in a corrupt trace. */
	while (stack && stack < t->nstacks && t->stacks[stack].defined && depth < 4096) {
		if (depth < max)
			ips[depth] = t->stacks[stack].ip;
		depth++;
		uint64_t parent = t->stacks[stack].parent;
		if (parent >= stack && parent != 0)
			break; /* parents are always defined first */
		stack = parent;
	}
	return depth;
}

int wsprof_trace_stack_node(const wsprof_trace *t, uint64_t node, uint64_t *parent, uint64_t *ip)
{
	if (!node || node >= t->nstacks || !t->stacks[node].defined)
		return 0;
	*parent = t->stacks[node].parent;
	*ip = t->stacks[node].ip;
	return 1;
}

static const struct module *module_covering(const wsprof_trace *t, uint64_t addr)
{
	for (size_t i = 0; i < t->nmods; i++) {
		const struct module *m = &t->mods[i];
		for (size_t s = 0; s < m->nsegs; s++) {
			uint64_t lo = m->base + m->segs[s].vaddr;
			if (addr >= lo && addr - lo < m->segs[s].memsz)
				return m;
		}
	}
	return NULL;
}

const char *wsprof_trace_module_at(const wsprof_trace *t, uint64_t addr, uint64_t *base)
{
	const struct module *m = module_covering(t, addr);
	if (m && base)
		*base = m->base;
	return m ? m->path : NULL;
}

int wsprof_trace_module_info_at(const wsprof_trace *t, uint64_t addr, wsprof_module_info *info)
{
	const struct module *m = module_covering(t, addr);
	if (!m)
		return 0;
	info->path = m->path;
	info->base = m->base;
	info->build_id = m->build_id_len ? m->build_id : NULL;
	info->build_id_len = m->build_id_len;
	return 1;
}

void wsprof_trace_close(wsprof_trace *t)
{
	if (!t)
		return;
	pending_release(&t->current);
	for (size_t i = 0; i < t->nruns; i++)
		for (size_t j = t->runs[i].next; j < t->runs[i].end; j++)
			pending_release(&t->pend[j]);
	free(t->runs);
	free(t->merge);
	for (size_t i = t->readypos; i < t->nready; i++)
		pending_release(&t->ready[i]);
	for (size_t i = 0; i < t->nmods; i++)
		module_free(&t->mods[i]);
	free(t->mods);
	free(t->pend);
	free(t->ready);
	free(t->stacks);
	free(t->tids);
	free(t->zbuf);
	free(t->raw);
	free(t->exe);
	free(t->cmdline);
	free(t->tool_version);
	free(t->access_note);
	ZSTD_freeDCtx(t->dctx);
	if (t->f)
		fclose(t->f);
	free(t);
}
