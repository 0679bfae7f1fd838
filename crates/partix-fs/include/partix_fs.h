/* partix_fs.h — C client of the partix remote file/device protocol.
 *
 * Every function returns 0 on success or a positive errno value (EXDEV: the path escapes the
 * server's exported root; ETIMEDOUT: no reply after every retransmission; EINVAL: a bad
 * argument). A read of a device or FIFO opened without O_NONBLOCK that has no data (or a write
 * with no room) waits as long as the server holds it, as it would locally. Results come back
 * through out-parameters. A handle is used by one thread at a time.
 */
#ifndef PARTIX_FS_H
#define PARTIX_FS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Offset meaning "the file's current position" (read()/write() rather than pread()/pwrite()). */
#define PARTIX_FS_OFFSET_CURRENT UINT64_MAX

/* File types in partix_fs_stat_t.kind. */
#define PARTIX_FS_KIND_FILE 1
#define PARTIX_FS_KIND_DIR 2
#define PARTIX_FS_KIND_CHAR_DEVICE 3
#define PARTIX_FS_KIND_BLOCK_DEVICE 4
#define PARTIX_FS_KIND_SYMLINK 5
#define PARTIX_FS_KIND_FIFO 6
#define PARTIX_FS_KIND_SOCKET 7

typedef struct PartixFsClient partix_fs_client;

typedef struct {
    uint16_t kind;       /* PARTIX_FS_KIND_* */
    uint16_t perm;       /* permission bits */
    uint32_t nlink;
    uint64_t size;
    uint64_t mtime_sec;
    uint32_t mtime_nsec;
    uint32_t rdev;
    uint64_t ino;
} partix_fs_stat_t;

/* Connect over raw Ethernet frames on interface IFACE to the server at MAC "aa:bb:cc:dd:ee:ff". */
int partix_fs_connect_eth(/*in*/ const char *iface, /*in*/ const char *server_mac,
                          /*out*/ partix_fs_client **client);
/* Connect over UDP to "HOST:PORT". */
int partix_fs_connect_udp(/*in*/ const char *server_addr, /*out*/ partix_fs_client **client);
/* End the session and free the handle (NULL is ignored). */
void partix_fs_disconnect(/*in*/ partix_fs_client *client);

/* Open PATH (relative to the exported root) with Linux open flags (O_RDONLY, O_CREAT, ...). */
int partix_fs_open(/*in*/ partix_fs_client *client, /*in*/ const char *path, /*in*/ uint32_t flags,
                   /*in*/ uint32_t mode, /*out*/ uint32_t *fd);
/* Read up to LEN bytes at OFFSET (or PARTIX_FS_OFFSET_CURRENT); *nread is 0 at end of file. */
int partix_fs_read(/*in*/ partix_fs_client *client, /*in*/ uint32_t fd, /*in*/ uint64_t offset,
                   /*out*/ void *buf, /*in*/ size_t len, /*out*/ size_t *nread);
/* Write LEN bytes at OFFSET (or PARTIX_FS_OFFSET_CURRENT). */
int partix_fs_write(/*in*/ partix_fs_client *client, /*in*/ uint32_t fd, /*in*/ uint64_t offset,
                    /*in*/ const void *buf, /*in*/ size_t len, /*out*/ size_t *nwritten);
/* Close a descriptor. */
int partix_fs_close(/*in*/ partix_fs_client *client, /*in*/ uint32_t fd);
/* Attributes of PATH. */
int partix_fs_stat(/*in*/ partix_fs_client *client, /*in*/ const char *path,
                   /*out*/ partix_fs_stat_t *st);

#ifdef __cplusplus
}
#endif

#endif /* PARTIX_FS_H */
