// The system SQLite (apt: libsqlite3-dev; at run time libsqlite3-0), for LatchkeySQLite only.
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast macro Swift does not import: SQLite copies the bound bytes.
static inline sqlite3_destructor_type latchkey_sqlite_transient(void) { return SQLITE_TRANSIENT; }
