#if canImport(Glibc)
import Glibc
#endif

/// What the store does to the file system before SQLite opens its file read-write: the
/// state directory and the database file made, or checked, with their modes (`StoreFiles`);
/// and what it asks of it: the space left (before it lays out its WAL file).
/// A seam: the tests' file system answers as a card gone read-only does (EROFS), or as a
/// nearly full one, which a test cannot otherwise make (root ignores file modes, and
/// mounting needs the HIL's VM).
public struct StoreFileSystem {
    let prepare: (_ directory: String, _ file: String) throws(StoreError) -> Void
    /// Bytes free for the store's writes in `directory`, or nil when unknown.
    let freeBytes: (_ directory: String) -> Int64?
    /// The registered SQLite VFS the store opens its file through; nil: SQLite's default.
    let sqliteVFS: String?

    init(prepare: @escaping (_ directory: String, _ file: String) throws(StoreError) -> Void,
         freeBytes: @escaping (_ directory: String) -> Int64? = StoreFiles.freeBytes(at:), sqliteVFS: String? = nil) {
        self.prepare = prepare
        self.freeBytes = freeBytes
        self.sqliteVFS = sqliteVFS
    }

    /// The same file system, with SQLite's reads, writes and syncs going through the VFS
    /// registered as `name` (a simulated disk that fails on cue).
    public func through(sqliteVFS name: String) -> StoreFileSystem {
        StoreFileSystem(prepare: prepare, freeBytes: freeBytes, sqliteVFS: name)
    }

    /// The real calls.
    public static var system: StoreFileSystem {
        StoreFileSystem { directory, file throws(StoreError) in
            try StoreFiles.prepareDirectory(directory)
            try StoreFiles.prepareFile(file)
        }
    }

    /// The real calls, except that the file system says it has only `bytes` free.
    public static func nearlyFull(_ bytes: Int64) -> StoreFileSystem {
        StoreFileSystem(prepare: system.prepare, freeBytes: { _ in bytes })
    }

    /// The real calls, except that while `readOnly()` is true the file cannot be opened for
    /// writing: EROFS, as `open(2)` answers on a read-only mount.
    public static func readOnly(while readOnly: @escaping () -> Bool) -> StoreFileSystem {
        StoreFileSystem { directory, file throws(StoreError) in
            guard !readOnly() else { throw .fileSystem(path: file, call: "open", errno: EROFS) }
            try system.prepare(directory, file)
        }
    }
}

extension StoreError {
    /// The file system refused to create or open for writing because it is mounted read-only.
    public var isReadOnlyFileSystem: Bool {
        if case .fileSystem(_, _, let errno) = self { return errno == EROFS }
        return false
    }
}
