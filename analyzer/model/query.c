/*
 * query.c - what views read of the model: its figures, series and lists
 * as they stand (model.h). Nothing here changes the model.
 */
#include "model_internal.h"

const struct wsp_kind_stats *wsp_model_kind(const struct wsp_model *m, unsigned kind)
{
	return kind < WSPROF_KIND_COUNT ? &m->kinds[kind] : NULL;
}

const struct wsp_series *wsp_model_live_series(const struct wsp_model *m, unsigned kind)
{
	return kind < WSPROF_KIND_COUNT ? &m->live[kind] : NULL;
}

const struct wsp_series *wsp_model_device_series(const struct wsp_model *m, size_t device_index)
{
	return device_index < m->ndevices ? &m->device_used[device_index] : NULL;
}

size_t wsp_model_devices(const struct wsp_model *m, const struct wsp_device_stats **devices)
{
	*devices = m->devices;
	return m->ndevices;
}

size_t wsp_model_failures(const struct wsp_model *m, const struct wsp_failure **failures)
{
	*failures = m->failures;
	return m->nfailures;
}

uint64_t wsp_model_untracked_frees(const struct wsp_model *m)
{
	return m->untracked_frees;
}

uint64_t wsp_model_last_time(const struct wsp_model *m)
{
	return m->last_time;
}

size_t wsp_model_children(const struct wsp_model *m, const uint32_t **pids)
{
	*pids = m->children;
	return m->nchildren;
}

const char *wsp_model_exec(const struct wsp_model *m)
{
	return m->exec_path;
}

const struct wsp_ann_state *wsp_model_ann(const struct wsp_model *m, const struct wsp_block *b)
{
	const struct ann *a = b->has_ann ? model_ann_find(m, b->addr) : NULL;
	return a ? &a->st : NULL;
}

uint64_t wsp_block_addr(const struct wsp_block *b)
{
	return b->addr & ~(3ull << 62);
}

uint64_t wsp_model_unknown_annotations(const struct wsp_model *m)
{
	return m->unknown_annotations;
}

size_t wsp_model_phases(const struct wsp_model *m, const struct wsp_phase **phases)
{
	*phases = m->phases;
	return m->nphases;
}

size_t wsp_model_recording(const struct wsp_model *m, const struct wsp_recording_switch **switches)
{
	*switches = m->switches;
	return m->nswitches;
}

size_t wsp_model_snapshots(const struct wsp_model *m, const struct wsp_snapshot **snapshots)
{
	*snapshots = m->snapshots;
	return m->nsnapshots;
}

const struct wsp_wss *wsp_model_wss(const struct wsp_model *m)
{
	return m->wss;
}

size_t wsp_model_rss(const struct wsp_model *m, const struct wsp_rss_point **points)
{
	*points = m->rss;
	return m->nrss;
}

void wsp_model_each_live(const struct wsp_model *m, void (*fn)(const struct wsp_block *, void *), void *arg)
{
	/* The dense array in order, not the table's slots: a heatmap reads every
	 * live block 300 times, and reading them where they lie is several
	 * times faster than hopping from slot to block. Places freed have addr 0
	 * (no live key is 0: it marks an empty slot). */
	for (size_t i = 0; i < m->nblocks; i++)
		if (m->blocks[i].addr)
			fn(&m->blocks[i], arg);
	for (size_t r = 0; r < sizeof m->ranges / sizeof *m->ranges; r++)
		for (size_t i = 0; i < m->ranges[r].n; i++)
			fn(&m->ranges[r].v[i], arg);
}
