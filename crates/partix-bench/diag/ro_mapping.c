/* What a read-only mapping of a shared buffer costs its writer (docs/bench-rtt.md, session 31).
 *
 * Two processes, pinned to CPU 0 and CPU 1, bounce a message of MSG bytes through a memfd:
 * each writes its own slot (a flag line, then the payload) through a writable mapping and
 * reads the other's through a second mapping of the memfd, read-only (`ro`) or writable
 * (`rw`). The writer rotates over K slots per direction, so with K = 1 it rewrites the lines
 * the other side has just read and with K >= 16 it writes lines nobody has touched for a while
 * (K * (MSG + 64) bytes per direction, beyond a core's L1 data cache). Prints the round
 * trip's p50 / p90 / p99 over N round trips (the first 10 % left out), timed with
 * CLOCK_MONOTONIC by the first process.
 *
 *   gcc -O2 -o /tmp/ro_mapping crates/partix-bench/diag/ro_mapping.c
 *   for k in 1 16; do for m in ro rw; do /tmp/ro_mapping $m $k; done; done
 *   /tmp/ro_mapping ro 1 huge      # the memfd on 2 MiB pages (needs vm.nr_hugepages >= 4)
 *   /tmp/ro_mapping ro 1 words     # copies as 8-byte word loops (or `movsb`: rep movsb)
 *
 * A diagnostic, not part of `partix bench`: the bench's rows `raw one-sided slot` and
 * `raw one-sided slot, writable reader` measure the same difference on the real protocol.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MSG 4096
#define N 200000
#define HALF (4u << 20) /* bytes per direction */
#define MAXK (HALF / (MSG + 64))

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return sched_setaffinity(0, sizeof s, &s);
}

static int cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int usage(void)
{
    fprintf(stderr, "usage: ro_mapping ro|rw K [huge] [memcpy|words|movsb]   (1 <= K <= %u)\n",
            MAXK);
    return 2;
}

enum copy { COPY_MEMCPY, COPY_WORDS, COPY_MOVSB };

/* Copy n bytes (a multiple of 8) as the chosen method does it. */
static void copy(enum copy how, char *d, const char *s, size_t n)
{
    if (how == COPY_WORDS) {
        for (size_t i = 0; i < n; i += 8) {
            uint64_t v;
            memcpy(&v, s + i, 8);
            *(volatile uint64_t *)(d + i) = v;
        }
    } else if (how == COPY_MOVSB) {
        __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
    } else {
        memcpy(d, s, n);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 5)
        return usage();
    int ro = strcmp(argv[1], "ro") == 0;
    if (!ro && strcmp(argv[1], "rw") != 0)
        return usage();
    char *end = NULL;
    long k = strtol(argv[2], &end, 10);
    if (end == argv[2] || *end != '\0' || k < 1 || k > (long)MAXK)
        return usage();
    int huge = 0;
    enum copy how = COPY_MEMCPY;
    for (int a = 3; a < argc; a++) {
        if (strcmp(argv[a], "huge") == 0)
            huge = 1;
        else if (strcmp(argv[a], "memcpy") == 0)
            how = COPY_MEMCPY;
        else if (strcmp(argv[a], "words") == 0)
            how = COPY_WORDS;
        else if (strcmp(argv[a], "movsb") == 0)
            how = COPY_MOVSB;
        else
            return usage();
    }

    int fd = memfd_create("ro_mapping", huge ? MFD_HUGETLB : 0);
    if (fd < 0 || ftruncate(fd, 2 * HALF) != 0) {
        perror("memfd");
        return 1;
    }
    char *own = mmap(NULL, 2 * HALF, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (own == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(own, 0, 2 * HALF);
    /* Everything that can fail before the fork, so that neither process is left spinning for
     * a peer that gave up. */
    char *view = mmap(NULL, 2 * HALF, ro ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (view == MAP_FAILED) {
        perror("mmap (view)");
        return 1;
    }
    uint64_t *lat = malloc(N * sizeof *lat);
    if (!lat)
        return 1;
    static char msg[MSG], buf[MSG];
    memset(msg, 0x5a, MSG);
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        return 1;
    }
    int second = child == 0;
    if (pin(second) != 0)
        perror("sched_setaffinity (going on unpinned)");
    size_t mine = second ? HALF : 0, theirs = second ? 0 : HALF;
    for (uint64_t i = 1; i <= N; i++) {
        size_t at = (size_t)(i % (uint64_t)k) * (MSG + 64);
        uint64_t *my_flag = (uint64_t *)(own + mine + at);
        char *my_data = own + mine + at + 64;
        const uint64_t *their_flag = (const uint64_t *)(view + theirs + at);
        const char *their_data = view + theirs + at + 64;
        if (!second) {
            uint64_t t0 = now_ns();
            copy(how, my_data, msg, MSG);
            __atomic_store_n(my_flag, i, __ATOMIC_RELEASE);
            while (__atomic_load_n(their_flag, __ATOMIC_ACQUIRE) != i)
                __builtin_ia32_pause();
            copy(how, buf, their_data, MSG);
            lat[i - 1] = now_ns() - t0;
        } else {
            while (__atomic_load_n(their_flag, __ATOMIC_ACQUIRE) != i)
                __builtin_ia32_pause();
            copy(how, buf, their_data, MSG);
            copy(how, my_data, buf, MSG);
            __atomic_store_n(my_flag, i, __ATOMIC_RELEASE);
        }
    }
    if (second)
        return 0;
    int st = 0;
    if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "the second process failed\n");
        return 1;
    }
    uint64_t *l = lat + N / 10;
    size_t n = N - N / 10;
    qsort(l, n, sizeof *l, cmp);
    static const char *const how_name[] = {"", " words", " movsb"};
    printf("%s K=%ld%s%s: round trip p50 %.3f p90 %.3f p99 %.3f us (%zu)\n",
           ro ? "read-only" : "writable", k, huge ? " huge" : "", how_name[how], l[n / 2] / 1e3,
           l[n * 9 / 10] / 1e3, l[n * 99 / 100] / 1e3, n);
    return 0;
}
