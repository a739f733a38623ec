/* LD_PRELOAD shim of the power-loss test (host/tests/reliability/power_loss.rs): records every write,
 * truncate, sync, create and unlink of a file under $CONTEXTFOLD_TRACE_DIR, in the order
 * they happen, into the binary trace $CONTEXTFOLD_TRACE_FILE. The operations themselves
 * pass through unchanged. One mutex covers the real call and its record, so the trace order
 * is the order the kernel saw them in.
 *
 * Record: u8 op, u32 path length, path bytes, u64 a, u64 b, then b data bytes for WRITE.
 *   op 1 WRITE    a = file offset, b = byte count (the bytes follow)
 *   op 2 TRUNCATE a = new size
 *   op 3 SYNC     (fsync or fdatasync returned 0)
 *   op 4 UNLINK
 *   op 5 CREATE   (an open that may create; a = 1 if O_TRUNC)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define MAX_FD 4096
static char *paths[MAX_FD];
static int appending[MAX_FD];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int trace_fd = -2;
static char trace_dir[4096];
static size_t trace_dir_len;

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_close)(int);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_ftruncate)(int, off_t);
static int (*real_ftruncate64)(int, off_t);
static int (*real_unlink)(const char *);
static int (*real_unlinkat)(int, const char *, int);

#define RESOLVE(name) if (!real_##name) real_##name = dlsym(RTLD_NEXT, #name)

static void init(void) {
    RESOLVE(write); RESOLVE(pwrite); RESOLVE(pwrite64); RESOLVE(open); RESOLVE(open64);
    RESOLVE(openat); RESOLVE(openat64); RESOLVE(close); RESOLVE(fsync); RESOLVE(fdatasync);
    RESOLVE(ftruncate); RESOLVE(ftruncate64); RESOLVE(unlink); RESOLVE(unlinkat);
    if (trace_fd != -2) return;
    trace_fd = -1;
    const char *dir = getenv("CONTEXTFOLD_TRACE_DIR");
    const char *file = getenv("CONTEXTFOLD_TRACE_FILE");
    if (!dir || !file) return;
    snprintf(trace_dir, sizeof trace_dir, "%s/", dir);
    trace_dir_len = strlen(trace_dir);
    trace_fd = real_open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (trace_fd < 0) { perror("trace_writes: cannot open the trace"); abort(); }
}

static void put(const void *data, size_t len) {
    const char *p = data;
    while (len > 0) {
        ssize_t n = real_write(trace_fd, p, len);
        if (n <= 0) { perror("trace_writes: cannot write the trace"); abort(); }
        p += n; len -= (size_t)n;
    }
}

static void record(uint8_t op, const char *path, uint64_t a, uint64_t b, const void *data) {
    uint32_t len = (uint32_t)strlen(path);
    put(&op, 1); put(&len, 4); put(path, len); put(&a, 8); put(&b, 8);
    if (op == 1) put(data, b);
}

static int traced_path(const char *path) {
    return trace_fd >= 0 && path && strncmp(path, trace_dir, trace_dir_len) == 0;
}

static const char *traced_fd(int fd) {
    return (trace_fd >= 0 && fd >= 0 && fd < MAX_FD) ? paths[fd] : NULL;
}

static int after_open(int fd, const char *path, int flags) {
    if (fd >= 0 && fd < MAX_FD && traced_path(path)) {
        free(paths[fd]);
        paths[fd] = strdup(path);
        appending[fd] = (flags & O_APPEND) != 0;
        if (flags & (O_CREAT | O_TRUNC)) record(5, path, (flags & O_TRUNC) ? 1 : 0, 0, NULL);
    }
    return fd;
}

#define OPEN_BODY(realcall)                                                  \
    mode_t mode = 0;                                                        \
    if (flags & (O_CREAT | O_TMPFILE)) {                                    \
        va_list ap; va_start(ap, flags); mode = va_arg(ap, mode_t); va_end(ap); \
    }                                                                       \
    pthread_mutex_lock(&lock); init();                                      \
    int fd = realcall;                                                      \
    after_open(fd, path, flags);                                            \
    pthread_mutex_unlock(&lock);                                            \
    return fd;

int open(const char *path, int flags, ...) { OPEN_BODY(real_open(path, flags, mode)) }
int open64(const char *path, int flags, ...) { OPEN_BODY(real_open64(path, flags, mode)) }
int openat(int dirfd, const char *path, int flags, ...) {
    OPEN_BODY(real_openat(dirfd, path, flags, mode))
}
int openat64(int dirfd, const char *path, int flags, ...) {
    OPEN_BODY(real_openat64(dirfd, path, flags, mode))
}

int close(int fd) {
    pthread_mutex_lock(&lock); init();
    if (fd >= 0 && fd < MAX_FD && paths[fd]) { free(paths[fd]); paths[fd] = NULL; }
    int rc = real_close(fd);
    pthread_mutex_unlock(&lock);
    return rc;
}

ssize_t write(int fd, const void *buf, size_t count) {
    if (fd >= 0 && fd < MAX_FD && !paths[fd] && real_write) return real_write(fd, buf, count);
    pthread_mutex_lock(&lock); init();
    const char *path = traced_fd(fd);
    off_t at = 0;
    if (path) {
        struct stat st;
        if (appending[fd] && fstat(fd, &st) == 0) at = st.st_size;
        else at = lseek(fd, 0, SEEK_CUR);
    }
    ssize_t n = real_write(fd, buf, count);
    if (path && n > 0) record(1, path, (uint64_t)at, (uint64_t)n, buf);
    pthread_mutex_unlock(&lock);
    return n;
}

#define PWRITE_BODY(realcall)                                                \
    pthread_mutex_lock(&lock); init();                                      \
    const char *path = traced_fd(fd);                                       \
    ssize_t n = realcall;                                                   \
    if (path && n > 0) record(1, path, (uint64_t)offset, (uint64_t)n, buf); \
    pthread_mutex_unlock(&lock);                                            \
    return n;

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    PWRITE_BODY(real_pwrite(fd, buf, count, offset))
}
ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) {
    PWRITE_BODY(real_pwrite64(fd, buf, count, offset))
}

#define SYNC_BODY(realcall)                                                  \
    pthread_mutex_lock(&lock); init();                                      \
    int rc = realcall;                                                      \
    const char *path = traced_fd(fd);                                       \
    if (path && rc == 0) record(3, path, 0, 0, NULL);                       \
    pthread_mutex_unlock(&lock);                                            \
    return rc;

int fsync(int fd) { SYNC_BODY(real_fsync(fd)) }
int fdatasync(int fd) { SYNC_BODY(real_fdatasync(fd)) }

#define TRUNCATE_BODY(realcall)                                              \
    pthread_mutex_lock(&lock); init();                                      \
    int rc = realcall;                                                      \
    const char *path = traced_fd(fd);                                       \
    if (path && rc == 0) record(2, path, (uint64_t)length, 0, NULL);        \
    pthread_mutex_unlock(&lock);                                            \
    return rc;

int ftruncate(int fd, off_t length) { TRUNCATE_BODY(real_ftruncate(fd, length)) }
int ftruncate64(int fd, off_t length) { TRUNCATE_BODY(real_ftruncate64(fd, length)) }

int unlink(const char *path) {
    pthread_mutex_lock(&lock); init();
    int rc = real_unlink(path);
    if (rc == 0 && traced_path(path)) record(4, path, 0, 0, NULL);
    pthread_mutex_unlock(&lock);
    return rc;
}

int unlinkat(int dirfd, const char *path, int flags) {
    pthread_mutex_lock(&lock); init();
    int rc = real_unlinkat(dirfd, path, flags);
    if (rc == 0 && traced_path(path)) record(4, path, 0, 0, NULL);
    pthread_mutex_unlock(&lock);
    return rc;
}
