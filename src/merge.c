/*
 * merge.c - pending events released in sequence order (reader_internal.h).
 *
 * The pending list is kept as runs, one per segment: a thread numbers its
 * events in order, so each run is sorted already, and a release (at a
 * SYNC's watermark, or of everything at the end) takes the prefix of each
 * run below the watermark and merges only what it took. Every event is
 * moved and merged once, however long it waits. The checked build checks
 * that events go out in seq order unless the trace broke it.
 */
#include "reader_internal.h"

#include "check.h"

#include <string.h>

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

/* A reader opened at a place (resume.h) hands out nothing below seq:
 * each run's prefix below it goes (a run is sorted), at each release. */
static void pending_drop_below(wsprof_trace *t, uint64_t seq)
{
	for (size_t i = 0; i < t->nruns; i++) {
		struct run *r = &t->runs[i];
		for (; r->next < r->end && t->pend[r->next].seq < seq; r->next++, t->nlive--) {
			reader_extra_free(t->pend[r->next].x);
			t->pend[r->next].x = NULL;
		}
	}
}

/* The number of the next event of the run at heap[k]. */
#define HEAD(k) (t->pend[t->runs[heap[k]].next].seq)

/* Begin a release: every pending event with seq < watermark (every one,
 * with all) is to go out, sorted, by release_emit. It is a k-way merge of
 * the runs' prefixes, each event copied once. t->nheap is nonzero while
 * it lasts. @return 0 or -ENOMEM. */
int reader_release_begin(wsprof_trace *t, uint64_t watermark, bool all)
{
	if (!t->nruns)
		return 0;
	if (t->from_seq)
		pending_drop_below(t, t->from_seq);
	/* Where each run's prefix below the watermark stops, and a heap of
	 * runs by the number of their next event. */
	if (wsp_grow(&t->merge, &t->mergecap, 2 * t->nruns, sizeof *t->merge))
		return -ENOMEM;
	size_t *stop = t->merge, *heap = t->merge + t->nruns, nh = 0;
	for (size_t i = 0; i < t->nruns; i++) {
		const struct run *r = &t->runs[i];
		size_t j = all ? r->end : r->next;
		while (j < r->end && t->pend[j].seq < watermark)
			j++;
		stop[i] = j;
	}
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
	t->nheap = nh;
	if (!nh && t->from_seq)
		pending_compact(t); /* all of it dropped */
	return 0;
}

/* Move up to room events of the release under way to out, in order.
 * @return how many. */
size_t reader_release_emit(wsprof_trace *t, struct pending *out, size_t room)
{
	size_t *stop = t->merge, *heap = t->merge + t->nruns, nh = t->nheap, k = 0;
	if (nh == 2) { /* the usual case of a program's two busiest threads: without a branch on the order */
		struct run *a = &t->runs[heap[0]], *b = &t->runs[heap[1]];
		const struct pending *pa = t->pend + a->next, *ea = t->pend + stop[heap[0]];
		const struct pending *pb = t->pend + b->next, *eb = t->pend + stop[heap[1]];
		while (k < room && pa < ea && pb < eb) {
			bool first = pa->seq < pb->seq;
			out[k++] = *(first ? pa : pb);
			pa += first;
			pb += !first;
		}
		a->next = (size_t)(pa - t->pend);
		b->next = (size_t)(pb - t->pend);
		if (pa == ea)
			heap[0] = heap[1];
		if (pa == ea || pb == eb)
			nh = 1;
		else if (pb->seq < pa->seq) { /* room ran out: the smaller head on top */
			size_t tmp = heap[0];
			heap[0] = heap[1];
			heap[1] = tmp;
		}
	}
	while (nh && k < room) {
		struct run *r = &t->runs[heap[0]];
		if (nh == 1) { /* one run left: the rest of its prefix at once */
			size_t n = stop[heap[0]] - r->next;
			n = n < room - k ? n : room - k;
			memcpy(out + k, t->pend + r->next, n * sizeof *out);
			r->next += n;
			k += n;
			nh = r->next < stop[heap[0]];
			break;
		}
		out[k++] = t->pend[r->next++];
		if (r->next == stop[heap[0]])
			heap[0] = heap[--nh];
		for (size_t i = 0;;) { /* sift down */
			size_t a = 2 * i + 1, b = a + 1, m = i;
			if (a < nh && HEAD(a) < HEAD(m))
				m = a;
			if (b < nh && HEAD(b) < HEAD(m))
				m = b;
			if (m == i)
				break;
			size_t tmp = heap[m];
			heap[m] = heap[i];
			heap[i] = tmp;
			i = m;
		}
	}
#undef HEAD
	for (size_t i = 0; WSP_CHECKED && i < k; i++) {
		WSP_ASSERT_MSG(t->disordered || out[i].seq >= t->out_seq, "event %llu released after %llu",
			       (unsigned long long)out[i].seq, (unsigned long long)t->out_seq);
		t->out_seq = out[i].seq;
	}
	t->nheap = nh;
	t->nlive -= k;
	if (!nh)
		pending_compact(t);
	return k;
}
