/* fscopy: copy a remote file to another remote path through the partix_fs C API.
 *
 *   fscopy IFACE SERVER_MAC SRC DST      (raw Ethernet)
 *   fscopy udp HOST:PORT SRC DST          (UDP)
 *
 * Prints "copied N bytes" and exits 0, or prints the failing call and its errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "partix_fs.h"

#define CHECK(call)                                                                  \
    do {                                                                             \
        int rc_ = (call);                                                            \
        if (rc_ != 0) {                                                              \
            fprintf(stderr, "fscopy: %s failed: %s (%d)\n", #call, strerror(rc_), rc_); \
            return 1;                                                                \
        }                                                                            \
    } while (0)

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: fscopy IFACE SERVER_MAC SRC DST | fscopy udp HOST:PORT SRC DST\n");
        return 2;
    }
    partix_fs_client *c = NULL;
    if (strcmp(argv[1], "udp") == 0) {
        CHECK(partix_fs_connect_udp(argv[2], &c));
    } else {
        CHECK(partix_fs_connect_eth(argv[1], argv[2], &c));
    }

    partix_fs_stat_t st;
    CHECK(partix_fs_stat(c, argv[3], &st));
    if (st.kind != PARTIX_FS_KIND_FILE) {
        fprintf(stderr, "fscopy: %s is not a regular file\n", argv[3]);
        return 1;
    }

    uint32_t in, out;
    CHECK(partix_fs_open(c, argv[3], O_RDONLY, 0, &in));
    CHECK(partix_fs_open(c, argv[4], O_WRONLY | O_CREAT | O_TRUNC, 0644, &out));

    static unsigned char buf[16384];
    uint64_t off = 0;
    for (;;) {
        size_t n = 0, w = 0;
        CHECK(partix_fs_read(c, in, off, buf, sizeof buf, &n));
        if (n == 0) break;
        CHECK(partix_fs_write(c, out, off, buf, n, &w));
        if (w != n) {
            fprintf(stderr, "fscopy: short write\n");
            return 1;
        }
        off += n;
    }
    CHECK(partix_fs_close(c, in));
    CHECK(partix_fs_close(c, out));

    /* A path escaping the export is refused with EXDEV. */
    uint32_t bad;
    int rc = partix_fs_open(c, "../etc/passwd", O_RDONLY, 0, &bad);
    if (rc != EXDEV) {
        fprintf(stderr, "fscopy: escape not refused (%d)\n", rc);
        return 1;
    }
    partix_fs_disconnect(c);
    if (off != st.size) {
        fprintf(stderr, "fscopy: copied %llu of %llu bytes\n", (unsigned long long)off,
                (unsigned long long)st.size);
        return 1;
    }
    printf("copied %llu bytes\n", (unsigned long long)off);
    return 0;
}
