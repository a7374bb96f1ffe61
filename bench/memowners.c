/* memowners.so: who holds a program's large heap blocks when its resident memory peaks.
 *
 *   gcc -O2 -shared -fPIC -o memowners.so bench/memowners.c -ldl -lpthread  (bench/owners.py does it)
 *   MEMOWNERS_OUT=owners.txt LD_PRELOAD=./memowners.so PROGRAM ARGS...
 *
 * Preloaded into a dynamically linked program (the static-stdlib reel links glibc dynamically,
 * so its Swift runtime's malloc comes here too), it remembers every block of at least
 * MEMOWNERS_MIN bytes (default 256 KiB) with the call stack that asked for it. A thread reads
 * the resident size (/proc/self/statm) every 100 ms; at each new peak it counts, with mincore,
 * how much of each remembered block is resident and rewrites MEMOWNERS_OUT: one line per call
 * stack, "resident_kib allocated_kib blocks frame frame ...", each frame "file+0xoffset".
 * heaptrack does not serve here: it misses memalign (x264's allocator) and counts allocated
 * bytes, not resident ones. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

extern void *__libc_malloc(size_t), *__libc_calloc(size_t, size_t), *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t), *__libc_valloc(size_t);
extern void __libc_free(void *);

#define SLOTS 8192
#define DEPTH 10
struct block { void *p; size_t size; void *frames[DEPTH]; int n; };
static struct block table[SLOTS], snap[SLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static size_t minimum = 256 << 10;
static __thread int busy;
static long peak_pages;
static const char *out;

static void remember(void *p, size_t size) {
    if (!p || size < minimum || busy) return;
    busy = 1;
    struct block b = { p, size, {0}, 0 };
    b.n = backtrace(b.frames, DEPTH);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < SLOTS; i++)
        if (!table[i].p) { table[i] = b; break; }
    pthread_mutex_unlock(&lock);
    busy = 0;
}

static void forget(void *p) {
    if (!p || malloc_usable_size(p) < minimum) return;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < SLOTS; i++)
        if (table[i].p == p) { table[i].p = NULL; break; }
    pthread_mutex_unlock(&lock);
}

void *malloc(size_t n) { void *p = __libc_malloc(n); remember(p, n); return p; }
void *calloc(size_t a, size_t b) { void *p = __libc_calloc(a, b); remember(p, a * b); return p; }
void free(void *p) { forget(p); __libc_free(p); }
void *realloc(void *old, size_t n) { forget(old); void *p = __libc_realloc(old, n); remember(p, n); return p; }
void *memalign(size_t a, size_t n) { void *p = __libc_memalign(a, n); remember(p, n); return p; }
void *aligned_alloc(size_t a, size_t n) { return memalign(a, n); }
void *valloc(size_t n) { void *p = __libc_valloc(n); remember(p, n); return p; }
int posix_memalign(void **r, size_t a, size_t n) {
    void *p = memalign(a, n);
    if (!p) return 12;
    *r = p;
    return 0;
}

static size_t resident(void *p, size_t size) {
    long page = sysconf(_SC_PAGESIZE);
    unsigned char vec[4096];
    char *start = (char *)((unsigned long)p & ~(page - 1)), *end = (char *)p + size;
    size_t count = 0;
    while (start < end) {
        size_t pages = (end - start + page - 1) / page;
        if (pages > sizeof vec) pages = sizeof vec;
        if (mincore(start, pages * page, vec) == 0)
            for (size_t i = 0; i < pages; i++) count += vec[i] & 1;
        start += pages * page;
    }
    return count * page;
}

static void dump(long pages) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    fprintf(f, "# rss_kib %ld\n", pages * (sysconf(_SC_PAGESIZE) / 1024));
    for (int i = 0; i < SLOTS; i++) {
        if (!snap[i].p) continue;
        fprintf(f, "%zu %zu 1", resident(snap[i].p, snap[i].size) / 1024, snap[i].size / 1024);
        for (int k = 2; k < snap[i].n; k++) {  /* 0: remember, 1: the hook */
            Dl_info info;
            if (dladdr(snap[i].frames[k], &info) && info.dli_fname)
                fprintf(f, " %s+0x%lx", strrchr(info.dli_fname, '/') ? strrchr(info.dli_fname, '/') + 1
                        : info.dli_fname, (unsigned long)((char *)snap[i].frames[k] - (char *)info.dli_fbase));
            else
                fprintf(f, " ?%p", snap[i].frames[k]);
        }
        fputc('\n', f);
    }
    fclose(f);
    rename(tmp, out);
}

static void *watch(void *arg) {
    (void)arg;
    busy = 1;
    for (;;) {
        long size, pages = 0;
        FILE *f = fopen("/proc/self/statm", "r");
        if (f) { if (fscanf(f, "%ld %ld", &size, &pages) != 2) pages = 0; fclose(f); }
        if (pages > peak_pages) {
            peak_pages = pages;
            pthread_mutex_lock(&lock);
            memcpy(snap, table, sizeof table);
            pthread_mutex_unlock(&lock);
            dump(pages);
        }
        usleep(100000);
    }
    return NULL;
}

__attribute__((constructor)) static void start(void) {
    out = getenv("MEMOWNERS_OUT");
    if (getenv("MEMOWNERS_MIN")) minimum = strtoul(getenv("MEMOWNERS_MIN"), NULL, 0);
    if (!out) return;
    void *warm[2];
    busy = 1;
    backtrace(warm, 2);  /* loads libgcc_s now, not inside a hook */
    busy = 0;
    pthread_t t;
    pthread_create(&t, NULL, watch, NULL);
    pthread_detach(t);
}
