// Counts the syncs SQLite asks of the file system (xSync: fsync or fdatasync) for the files
// under a watched directory, through a VFS that forwards everything to the default one.
// Tests only: a store's durability cost is counted, not inferred from its code.
#ifndef SQLITE_SYNC_COUNTER_H
#define SQLITE_SYNC_COUNTER_H

// Registers the counting VFS as SQLite's default (once; later calls do nothing). Connections
// opened afterwards go through it. Returns 0, or SQLite's error code.
int latchkey_sync_counter_install(void);

// Starts counting the syncs of files whose path begins with `prefix` (a test's directory);
// returns a slot for `latchkey_sync_counter_syncs`, or -1 when every slot is taken.
int latchkey_sync_counter_watch(const char *prefix);

// Syncs counted in `slot` so far.
long latchkey_sync_counter_syncs(int slot);

#endif
