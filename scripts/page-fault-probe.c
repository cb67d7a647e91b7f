/*
 * What the first write to a fresh page of a mapped CommitLog segment costs,
 * and whether pre-faulting ahead removes it. A program, not a test.
 *
 *   gcc -O2 -o /tmp/page-fault-probe scripts/page-fault-probe.c
 *   /tmp/page-fault-probe MODE [MiB]     (run it in the store's folder)
 *
 * It creates a file of MiB (256) MiB, allocates its blocks (fallocate, as
 * the broker's segments are), maps it shared and writes it 1 KiB at a time
 * with memcpy, as appends do. MODE 0 writes straight away; 1 first runs
 * madvise(MADV_POPULATE_READ) over the mapping, 2 MADV_POPULATE_WRITE
 * (warmMappedFileEnable's way). It prints the populate call's time and the
 * writing thread's CPU time per 1 KiB write. Run a mode again after a few
 * idle seconds to see fresh memory: a VM that reports free pages to its
 * host pays for the first touch of each page again.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static double seconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODE(0 none, 1 populate-read, 2 populate-write) [MiB]\n", argv[0]);
        return 2;
    }
    int mode = atoi(argv[1]);
    size_t size = (size_t)(argc > 2 ? atoi(argv[2]) : 256) << 20;
    char path[64];
    snprintf(path, sizeof path, "page-fault-probe.%d", (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0 || fallocate(fd, 0, 0, (off_t)size) != 0) {
        perror(path);
        return 1;
    }
    char *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    double populate0 = seconds(CLOCK_MONOTONIC);
    int advice = mode == 1 ? MADV_POPULATE_READ : MADV_POPULATE_WRITE;
    if (mode != 0 && madvise(map, size, advice) != 0) {
        perror("madvise");
        return 1;
    }
    double populated = seconds(CLOCK_MONOTONIC) - populate0;
    char record[1024];
    memset(record, 'x', sizeof record);
    double cpu0 = seconds(CLOCK_THREAD_CPUTIME_ID);
    for (size_t at = 0; at + sizeof record <= size; at += sizeof record) {
        memcpy(map + at, record, sizeof record);
    }
    double cpu = seconds(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    printf("mode %d, %zu MiB: populate %.3f s; writing thread CPU %.3f s = %.2f us per 1 KiB write\n",
           mode, size >> 20, populated, cpu, cpu * 1e6 / (double)(size / sizeof record));
    munmap(map, size);
    close(fd);
    unlink(path);
    return 0;
}
