/*
 * What a cma read of fresh data costs, apart from nucx (BENCHMARKS.md, "Fresh data"). Two processes, one on CPU 0 and
 * one on CPU 1, take turns. In its turn a side reads the other's buffer with process_vm_readv (WAYS 2), then writes
 * one byte in every cache line of its own buffer, or not (MODE 0: the same bytes every time, as ucx_perftest sends),
 * and hands over.
 *   WAYS 1: only CPU 1 writes and only CPU 0 reads, so the reader's buffer is the only thing it writes.
 *   WAYS 2: both sides read and write, as a tag_lat ping-pong does; a side's own buffer then competes in its cache
 *           with the one it reads into.
 * Prints a message's time (WAYS 2: one way of the ping-pong; WAYS 1: a write and a read), and CPU 0's read and CPU 1's
 * write per turn.
 * Build and run: gcc -O2 -o /tmp/cma_fresh_read bench/cma_fresh_read.c && /tmp/cma_fresh_read SIZE MODE [WAYS]
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s SIZE MODE [WAYS] (MODE 1: a side writes its buffer before it hands over; "
                "WAYS 2: both sides read and write)\n", argv[0]);
        return 2;
    }
    size_t size = strtoul(argv[1], NULL, 10);
    int fresh = atoi(argv[2]);
    int ways = argc == 4 ? atoi(argv[3]) : 1;
    const long turns = 10000, skip = 1000;
    /* [0]: the last turn taken (CPU 1 takes the odd ones, CPU 0 the even ones), [1]: CPU 0's summed read time, [2]:
     * CPU 1's summed write time */
    volatile long *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    char *own = aligned_alloc(4096, size), *into = aligned_alloc(4096, size);
    memset(own, 1, size);
    memset(into, 1, size);
    pid_t parent = getpid();
    pid_t child = fork();
    int cpu = child == 0 ? 1 : 0;
    pid_t peer = child == 0 ? parent : child;
    pin(cpu);
    struct iovec local = {into, size}, remote = {own, size}; /* the peer's buffer is at the same address */
    long start = 0;
    for (long turn = 2 - cpu; turn <= turns; turn += 2) {
        while (__atomic_load_n(&shared[0], __ATOMIC_ACQUIRE) != turn - 1) {
        }
        if (cpu == 0 && turn == skip + 2) {
            start = now_ns();
        }
        long t0 = now_ns();
        if ((ways == 2 || cpu == 0) && turn > 1 && process_vm_readv(peer, &local, 1, &remote, 1, 0) != (ssize_t) size) {
            perror("process_vm_readv");
            kill(peer, SIGKILL);
            return 1;
        }
        long t1 = now_ns();
        if (fresh && (ways == 2 || cpu == 1)) {
            for (size_t i = 0; i < size; i += 64) {
                own[i] = (char) turn;
            }
        }
        long t2 = now_ns();
        if (turn > skip) {
            shared[1 + cpu] += cpu == 0 ? t1 - t0 : t2 - t1;
        }
        __atomic_store_n(&shared[0], turn, __ATOMIC_RELEASE);
    }
    if (cpu == 1) {
        return 0;
    }
    while (__atomic_load_n(&shared[0], __ATOMIC_ACQUIRE) != turns) {
    }
    double each = (turns - skip) / 2.0; /* turns timed per side */
    double elapsed = (now_ns() - start) / 1e3;
    /* WAYS 2: a hand-over carries a message; WAYS 1: only every other one does, so a message's time is two */
    printf("%zu B %s, %d way%s: a message %.2f us, CPU 0's read %.2f us, CPU 1's write %.2f us\n", size,
           fresh ? "fresh" : "same ", ways, ways == 2 ? "s" : " ", elapsed / (turns - skip - 1) * (ways == 2 ? 1 : 2),
           shared[1] / 1e3 / each, shared[2] / 1e3 / each);
    return 0;
}
