import CSQLite

/// The WAL calls the store makes beyond SQL: the WAL file kept across closes and given its
/// working size up front, and checkpoints run when the store says rather than inside
/// whichever commit crosses SQLite's threshold.
extension Database {
    /// SQLITE_FCNTL_PERSIST_WAL: the last connection's close leaves the WAL file in place
    /// (emptied: SQLite truncates it to zero bytes when `journal_size_limit` is set).
    public func keepWALFileAcrossCloses() throws(DatabaseError) {
        var persist: CInt = 1
        let code = withUnsafeMutablePointer(to: &persist) {
            sqlite3_file_control(handle, nil, SQLITE_FCNTL_PERSIST_WAL, $0)
        }
        guard code == SQLITE_OK else { throw DatabaseError(extendedResultCode: code, message: "SQLITE_FCNTL_PERSIST_WAL failed") }
    }

    /// Makes the WAL file at least `bytes` long with written zeros, synced, and returns how many
    /// bytes it added. A commit that lengthens the WAL also waits for the file system's journal,
    /// shared with every writer on the disk; one that overwrites written blocks waits for its own
    /// data only (zeros, not `fallocate`: ext4's unwritten blocks change metadata on first write).
    /// Zeros past the last frame fail the salt check, where SQLite's recovery stops anyway. Call it
    /// inside an immediate transaction; it writes through SQLite's own handle of the WAL file.
    /// Measured: CHANGELOG.md, "Under load, and the table in one command".
    @discardableResult
    public func extendWALFile(toBytes bytes: Int64) throws(DatabaseError) -> Int64 {
        let size = try walFileSize()
        guard size < bytes else { return 0 }
        let (file, methods) = try walFile()
        guard let write = methods.xWrite, let sync = methods.xSync else {
            throw DatabaseError(extendedResultCode: SQLITE_MISUSE, message: "the WAL file's methods are missing")
        }
        // 64 KiB at a time: a few calls for the 4 MiB the store asks for, little memory.
        let chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var offset = size
        while offset < bytes {
            let count = Int32(min(Int64(chunk.count), bytes - offset))
            let written = chunk.withUnsafeBytes { write(file, $0.baseAddress, count, offset) }
            try check(written, "writing zeros to the WAL file at \(offset)")
            offset += Int64(count)
        }
        try check(sync(file, SQLITE_SYNC_NORMAL), "syncing the WAL file")
        return bytes - size
    }

    /// Turns SQLite's automatic checkpoint off and counts the WAL's frames instead
    /// (`walFrames`, from sqlite3_wal_hook after every commit of this connection), so the
    /// caller decides which commits a checkpoint may follow (`checkpoint()`). SQLite's own
    /// runs inside the commit that crosses its threshold, before that commit's call returns.
    public func takeOverCheckpoints() {
        let context = Unmanaged.passUnretained(self).toOpaque()
        // The hook lives as long as the connection, which `self` owns and closes first.
        sqlite3_wal_hook(handle, { context, _, _, frames in
            guard let context else { return SQLITE_OK }
            Unmanaged<Database>.fromOpaque(context).takeUnretainedValue().walFrames = Int(frames)
            return SQLITE_OK
        }, context)
    }

    /// A passive checkpoint of the main database (sqlite3_wal_checkpoint_v2): copies what no
    /// reader still needs from the WAL into the database file and syncs it, waiting for no
    /// lock. Once every frame is copied, the next commit starts the WAL from its beginning.
    public func checkpoint() throws(DatabaseError) {
        let code = sqlite3_wal_checkpoint_v2(handle, "main", SQLITE_CHECKPOINT_PASSIVE, nil, nil)
        guard code == SQLITE_OK else { throw DatabaseError.last(code, on: handle, sql: "sqlite3_wal_checkpoint_v2") }
    }

    /// The WAL file's length in octets (SQLite's own handle of it; see `extendWALFile`).
    public func walFileSize() throws(DatabaseError) -> Int64 {
        let (file, methods) = try walFile()
        guard let fileSize = methods.xFileSize else {
            throw DatabaseError(extendedResultCode: SQLITE_MISUSE, message: "the WAL file's methods are missing")
        }
        var size: sqlite3_int64 = 0
        try check(fileSize(file, &size), "the WAL file's size")
        return size
    }

    /// SQLite's handle of the WAL file: open only inside a transaction in WAL mode, and only
    /// inside an immediate one is no other connection appending to it.
    private func walFile() throws(DatabaseError) -> (UnsafeMutablePointer<sqlite3_file>, sqlite3_io_methods) {
        guard isInsideTransaction else {
            throw DatabaseError(extendedResultCode: SQLITE_MISUSE, message: "the WAL file is used inside a transaction only")
        }
        // In another journal mode the same file control answers the rollback journal.
        let mode: String?
        do { mode = try Row.fetchOne(self, sql: "PRAGMA journal_mode")?.values.first?.text } catch {
            throw error as? DatabaseError ?? DatabaseError(extendedResultCode: SQLITE_ERROR, message: "\(error)")
        }
        guard mode == "wal" else {
            throw DatabaseError(extendedResultCode: SQLITE_MISUSE, message: "the WAL file is not open (journal_mode is \(mode ?? "?"))")
        }
        var pointer: UnsafeMutablePointer<sqlite3_file>?
        let code = withUnsafeMutablePointer(to: &pointer) {
            sqlite3_file_control(handle, "main", SQLITE_FCNTL_JOURNAL_POINTER, $0)
        }
        guard code == SQLITE_OK, let file = pointer, let methods = file.pointee.pMethods else {
            throw DatabaseError(extendedResultCode: code == SQLITE_OK ? SQLITE_MISUSE : code,
                                message: "the WAL file is not open (is journal_mode WAL?)")
        }
        return (file, methods.pointee)
    }

    private func check(_ code: CInt, _ what: String) throws(DatabaseError) {
        guard code == SQLITE_OK else {
            throw DatabaseError(extendedResultCode: code, message: "\(what): \(String(cString: sqlite3_errstr(code)))")
        }
    }
}
