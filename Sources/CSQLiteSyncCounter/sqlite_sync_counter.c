#include "sqlite_sync_counter.h"

#include <pthread.h>
#include <sqlite3.h>
#include <string.h>

// Tests run in parallel, each in its own directory: a slot per directory.
enum { slotCount = 64, prefixLength = 512 };
static struct { char prefix[prefixLength]; long syncs; } slots[slotCount];
static int slotsUsed;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static sqlite3_vfs *real;
static sqlite3_vfs counting;

// Our file: the real VFS's file follows it in the same allocation (szOsFile).
typedef struct {
    sqlite3_file base;
    int slot;  // -1: not watched
    sqlite3_file *real;
} CountingFile;

static sqlite3_file *inner(sqlite3_file *file) { return ((CountingFile *)file)->real; }

static int cClose(sqlite3_file *f) { return inner(f)->pMethods->xClose(inner(f)); }
static int cRead(sqlite3_file *f, void *b, int n, sqlite3_int64 o) { return inner(f)->pMethods->xRead(inner(f), b, n, o); }
static int cWrite(sqlite3_file *f, const void *b, int n, sqlite3_int64 o) {
    return inner(f)->pMethods->xWrite(inner(f), b, n, o);
}
static int cTruncate(sqlite3_file *f, sqlite3_int64 size) { return inner(f)->pMethods->xTruncate(inner(f), size); }
static int cSync(sqlite3_file *f, int flags) {
    int slot = ((CountingFile *)f)->slot;
    if (slot >= 0) {
        pthread_mutex_lock(&lock);
        slots[slot].syncs += 1;
        pthread_mutex_unlock(&lock);
    }
    return inner(f)->pMethods->xSync(inner(f), flags);
}
static int cFileSize(sqlite3_file *f, sqlite3_int64 *size) { return inner(f)->pMethods->xFileSize(inner(f), size); }
static int cLock(sqlite3_file *f, int level) { return inner(f)->pMethods->xLock(inner(f), level); }
static int cUnlock(sqlite3_file *f, int level) { return inner(f)->pMethods->xUnlock(inner(f), level); }
static int cCheckReservedLock(sqlite3_file *f, int *out) { return inner(f)->pMethods->xCheckReservedLock(inner(f), out); }
static int cFileControl(sqlite3_file *f, int op, void *arg) { return inner(f)->pMethods->xFileControl(inner(f), op, arg); }
static int cSectorSize(sqlite3_file *f) { return inner(f)->pMethods->xSectorSize(inner(f)); }
static int cDeviceCharacteristics(sqlite3_file *f) { return inner(f)->pMethods->xDeviceCharacteristics(inner(f)); }
static int cShmMap(sqlite3_file *f, int page, int size, int extend, void volatile **out) {
    return inner(f)->pMethods->xShmMap(inner(f), page, size, extend, out);
}
static int cShmLock(sqlite3_file *f, int offset, int n, int flags) { return inner(f)->pMethods->xShmLock(inner(f), offset, n, flags); }
static void cShmBarrier(sqlite3_file *f) { inner(f)->pMethods->xShmBarrier(inner(f)); }
static int cShmUnmap(sqlite3_file *f, int deleteFlag) { return inner(f)->pMethods->xShmUnmap(inner(f), deleteFlag); }
static int cFetch(sqlite3_file *f, sqlite3_int64 o, int n, void **out) { return inner(f)->pMethods->xFetch(inner(f), o, n, out); }
static int cUnfetch(sqlite3_file *f, sqlite3_int64 o, void *p) { return inner(f)->pMethods->xUnfetch(inner(f), o, p); }

static const sqlite3_io_methods methods = {
    3, cClose, cRead, cWrite, cTruncate, cSync, cFileSize, cLock, cUnlock, cCheckReservedLock, cFileControl,
    cSectorSize, cDeviceCharacteristics, cShmMap, cShmLock, cShmBarrier, cShmUnmap, cFetch, cUnfetch,
};

static int slotOf(const char *name) {
    if (name == NULL) return -1;
    int found = -1;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < slotsUsed && found < 0; i++) {
        if (strncmp(name, slots[i].prefix, strlen(slots[i].prefix)) == 0) found = i;
    }
    pthread_mutex_unlock(&lock);
    return found;
}

static int cOpen(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *file, int flags, int *outFlags) {
    (void)vfs;
    CountingFile *ours = (CountingFile *)file;
    ours->real = (sqlite3_file *)&ours[1];
    ours->slot = slotOf(name);
    int rc = real->xOpen(real, name, ours->real, flags, outFlags);
    // The real methods' version decides which of ours SQLite may call: the real file has them all.
    ours->base.pMethods = ours->real->pMethods ? &methods : NULL;
    return rc;
}

static int cDelete(sqlite3_vfs *vfs, const char *name, int syncDir) { (void)vfs; return real->xDelete(real, name, syncDir); }
static int cAccess(sqlite3_vfs *vfs, const char *name, int flags, int *out) { (void)vfs; return real->xAccess(real, name, flags, out); }
static int cFullPathname(sqlite3_vfs *vfs, const char *name, int n, char *out) {
    (void)vfs;
    return real->xFullPathname(real, name, n, out);
}

int latchkey_sync_counter_install(void) {
    int rc = SQLITE_OK;
    pthread_mutex_lock(&lock);
    if (real == NULL) {
        sqlite3_vfs *found = sqlite3_vfs_find(NULL);
        if (found == NULL) {
            rc = SQLITE_ERROR;
        } else {
            counting = *found;  // the rest (randomness, time, dlopen) as the real VFS has them
            counting.zName = "latchkey-sync-counter";
            counting.szOsFile = (int)sizeof(CountingFile) + found->szOsFile;
            counting.pNext = NULL;
            counting.xOpen = cOpen;
            counting.xDelete = cDelete;
            counting.xAccess = cAccess;
            counting.xFullPathname = cFullPathname;
            rc = sqlite3_vfs_register(&counting, 1);
            if (rc == SQLITE_OK) real = found;
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

int latchkey_sync_counter_watch(const char *prefix) {
    int slot = -1;
    pthread_mutex_lock(&lock);
    if (slotsUsed < slotCount && strlen(prefix) < prefixLength) {
        slot = slotsUsed++;
        strcpy(slots[slot].prefix, prefix);
        slots[slot].syncs = 0;
    }
    pthread_mutex_unlock(&lock);
    return slot;
}

long latchkey_sync_counter_syncs(int slot) {
    if (slot < 0 || slot >= slotCount) return 0;
    pthread_mutex_lock(&lock);
    long syncs = slots[slot].syncs;
    pthread_mutex_unlock(&lock);
    return syncs;
}
