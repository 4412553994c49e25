/*
 * What a cma read of fresh data costs, apart: a writer process (CPU 1) writes one byte in every cache line of its
 * buffer, or not (MODE 0: the same bytes every time, as ucx_perftest sends), and hands over; the reader (CPU 0)
 * reads the buffer with process_vm_readv and hands back. Prints per round: the whole round, the read alone and the
 * write alone (BENCHMARKS.md, "Fresh data").
 * Build and run: gcc -O2 -o /tmp/cma_fresh_read bench/cma_fresh_read.c && /tmp/cma_fresh_read SIZE MODE
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
    if (argc != 3) {
        fprintf(stderr, "usage: %s SIZE MODE (MODE 1: the writer writes its buffer before each round)\n", argv[0]);
        return 2;
    }
    size_t size = strtoul(argv[1], NULL, 10);
    int fresh = atoi(argv[2]);
    const long rounds = 5000, skip = 500;
    /* [0]: the round's turn (odd: the reader's), [1]: the writer's summed write time */
    volatile long *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    char *src = aligned_alloc(4096, size), *dst = aligned_alloc(4096, size);
    memset(src, 1, size);
    memset(dst, 1, size);
    pid_t writer = fork();
    if (writer == 0) {
        pin(1);
        long written = 0;
        for (long turn = 1;; turn += 2) {
            long t0 = now_ns();
            if (fresh) {
                for (size_t i = 0; i < size; i += 64) {
                    src[i] = (char) turn;
                }
            }
            if (turn > 2 * skip) {
                written += now_ns() - t0;
            }
            shared[1] = written;
            __atomic_store_n(&shared[0], turn, __ATOMIC_RELEASE);
            while (__atomic_load_n(&shared[0], __ATOMIC_ACQUIRE) != turn + 1) {
            }
        }
    }
    pin(0);
    struct iovec local = {dst, size}, remote = {src, size};
    long read = 0, start = 0;
    for (long turn = 1; turn < 2 * rounds; turn += 2) {
        while (__atomic_load_n(&shared[0], __ATOMIC_ACQUIRE) != turn) {
        }
        if (turn == 2 * skip + 1) {
            start = now_ns();
        }
        long t0 = now_ns();
        if (process_vm_readv(writer, &local, 1, &remote, 1, 0) != (ssize_t) size) {
            perror("process_vm_readv");
            kill(writer, SIGKILL);
            return 1;
        }
        if (turn > 2 * skip) {
            read += now_ns() - t0;
        }
        __atomic_store_n(&shared[0], turn + 1, __ATOMIC_RELEASE);
    }
    double n = rounds - skip;
    printf("%zu B %s: round %.2f us, read %.2f us, write %.2f us\n", size, fresh ? "fresh" : "same ",
           (now_ns() - start) / 1e3 / n, read / 1e3 / n, shared[1] / 1e3 / n);
    kill(writer, SIGKILL);
    return 0;
}
