/*
 * cache_server.c - the example workload `./dev.sh demo` records.
 *
 * A toy service: worker threads answer requests from a shared cache of
 * blobs (kept up to a byte budget, oldest evicted), parse each request in a
 * short-lived buffer, build responses with realloc, stage large uploads in
 * mmap'd memory, keep a session table that only grows, and leak a small
 * audit record every 100 requests - the kinds of memory behaviour wsprof
 * is for.
 *
 * usage: cache_server [THREADS [REQUESTS_PER_THREAD]]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CACHE_SLOTS 512
#define CACHE_BUDGET (8u << 20)

struct blob {
	unsigned key;
	size_t size;
	char *data;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct blob *cache[CACHE_SLOTS];
static size_t cache_bytes;
static unsigned long hits, misses;

static void *volatile last_audit; /* audit records are written and forgotten */

static pthread_mutex_t session_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned *sessions;
static size_t nsessions, sessions_cap;

static struct blob *blob_make(unsigned key)
{
	struct blob *b = malloc(sizeof *b);
	b->key = key;
	b->size = 1024 + (key * 2654435761u) % (60 * 1024);
	b->data = malloc(b->size);
	memset(b->data, (int)key, b->size);
	return b;
}

static void blob_drop(struct blob *b)
{
	free(b->data);
	free(b);
}

/* Look a key up; on a miss make the blob and evict until within budget. */
static size_t cache_get(unsigned key)
{
	pthread_mutex_lock(&cache_lock);
	struct blob *b = cache[key % CACHE_SLOTS];
	if (b && b->key == key) {
		hits++;
	} else {
		misses++;
		if (b) {
			cache_bytes -= b->size;
			blob_drop(b);
		}
		b = cache[key % CACHE_SLOTS] = blob_make(key);
		cache_bytes += b->size;
		for (unsigned i = key; cache_bytes > CACHE_BUDGET; i++) {
			struct blob *victim = cache[i % CACHE_SLOTS];
			if (victim && victim != b) {
				cache_bytes -= victim->size;
				blob_drop(victim);
				cache[i % CACHE_SLOTS] = NULL;
			}
		}
	}
	size_t size = b->size;
	pthread_mutex_unlock(&cache_lock);
	return size;
}

static void session_open(unsigned id)
{
	pthread_mutex_lock(&session_lock);
	if (nsessions == sessions_cap) {
		sessions_cap = sessions_cap ? sessions_cap * 2 : 16;
		sessions = realloc(sessions, sessions_cap * sizeof *sessions);
	}
	sessions[nsessions++] = id;
	pthread_mutex_unlock(&session_lock);
}

static char *respond(unsigned key, size_t size)
{
	char *out = NULL;
	size_t len = 0, cap = 0;
	for (int part = 0; part < 1 + (int)(key % 7); part++) {
		char line[96];
		int n = snprintf(line, sizeof line, "part %d of blob %u (%zu bytes)\n", part, key, size);
		if (len + (size_t)n + 1 > cap) {
			cap = cap ? cap * 2 : 64;
			out = realloc(out, cap);
		}
		memcpy(out + len, line, (size_t)n + 1);
		len += (size_t)n;
	}
	return out;
}

static void upload(unsigned key)
{
	size_t len = (1 + key % 4) << 20;
	char *area = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		return;
	memset(area, 1, len / 2);
	munmap(area, len);
}

struct worker {
	unsigned id, requests;
	size_t served;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	unsigned seed = w->id * 7919u + 1;
	for (unsigned r = 0; r < w->requests; r++) {
		seed = seed * 1103515245u + 12345u;
		unsigned key = (seed >> 8) % 4096;
		char *request = calloc(1, 256 + key % 512); /* parsed and dropped at once */
		snprintf(request, 256, "GET /blob/%u", key);
		size_t size = cache_get(key);
		char *response = respond(key, size);
		w->served += strlen(response);
		free(response);
		free(request);
		if (r % 50 == 0)
			session_open(w->id << 20 | r);
		if (r % 100 == 0)
			last_audit = malloc(256); /* the audit record nobody frees */
		if (r % 500 == 0)
			upload(key);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned threads = argc > 1 ? (unsigned)atoi(argv[1]) : 4;
	unsigned requests = argc > 2 ? (unsigned)atoi(argv[2]) : 2000;
	if (threads < 1 || threads > 64 || requests < 1) {
		fprintf(stderr, "usage: cache_server [THREADS 1..64 [REQUESTS_PER_THREAD]]\n");
		return 2;
	}
	pthread_t tid[64];
	struct worker w[64];
	for (unsigned i = 0; i < threads; i++) {
		w[i] = (struct worker){ i, requests, 0 };
		pthread_create(&tid[i], NULL, work, &w[i]);
	}
	size_t served = 0;
	for (unsigned i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		served += w[i].served;
	}
	printf("cache_server: %u threads x %u requests, %lu hits, %lu misses, %zu response bytes, %zu sessions\n",
	       threads, requests, hits, misses, served, nsessions);
	return 0;
}
