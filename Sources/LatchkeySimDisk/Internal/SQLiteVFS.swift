import CSQLite
#if canImport(Glibc)
import Glibc
#endif

// Every call into C the simulated disk makes: SQLite's VFS registration, the methods it
// calls back, the real unix VFS they forward to, and the durable image's file calls.

/// One handle SQLite opened over the disk. Its sqlite3_file is laid out as: SQLite's header
/// (the methods pointer), this object's address, then the real unix VFS's file.
final class OpenFile {
    let disk: SimulatedDisk
    /// nil for a temporary file (SQLite gives no name): passed through, never faulted.
    let path: String?
    let real: UnsafeMutablePointer<sqlite3_file>
    let generation: Int
    let isReadOnly: Bool

    init(disk: SimulatedDisk, path: String?, real: UnsafeMutablePointer<sqlite3_file>, isReadOnly: Bool) {
        self.disk = disk
        self.path = path
        self.real = real
        self.isReadOnly = isReadOnly
        generation = disk.freshGeneration
    }

    var methods: sqlite3_io_methods { real.pointee.pMethods.pointee }

    static let contextOffset = MemoryLayout<sqlite3_file>.stride
    static let realOffset = contextOffset + MemoryLayout<UnsafeMutableRawPointer>.stride

    static func of(_ file: UnsafeMutablePointer<sqlite3_file>?) -> OpenFile {
        let context = UnsafeMutableRawPointer(file!).load(fromByteOffset: contextOffset, as: UnsafeMutableRawPointer.self)
        return Unmanaged<OpenFile>.fromOpaque(context).takeUnretainedValue()
    }

    /// The real file's size, or nil when it cannot be asked.
    func realSize() -> Int64? {
        var size: sqlite3_int64 = 0
        return methods.xFileSize!(real, &size) == SQLITE_OK ? size : nil
    }
}

/// The disk's VFS as registered with SQLite (not as the default): the struct, its name and
/// the io methods at stable addresses for the disk's lifetime.
final class VFSRegistration {
    let name: String
    private let vfs: UnsafeMutablePointer<sqlite3_vfs>
    private let cName: UnsafeMutablePointer<CChar>
    let methods: UnsafeMutablePointer<sqlite3_io_methods>
    let real: UnsafeMutablePointer<sqlite3_vfs>

    /// `disk` is held unretained: it owns this registration, and every open file holds it.
    init(disk: SimulatedDisk) {
        guard let real = sqlite3_vfs_find(nil) else { fatalError("SQLite has no default VFS") }
        self.real = real
        name = "latchkey-simulated-disk-\(UInt(bitPattern: ObjectIdentifier(disk).hashValue))"
        cName = strdup(name)
        methods = .allocate(capacity: 1)
        methods.initialize(to: Self.ioMethods())
        vfs = .allocate(capacity: 1)
        vfs.initialize(to: sqlite3_vfs())
        vfs.pointee.iVersion = 2
        vfs.pointee.szOsFile = Int32(OpenFile.realOffset) + real.pointee.szOsFile
        vfs.pointee.mxPathname = real.pointee.mxPathname
        vfs.pointee.zName = UnsafePointer(cName)
        vfs.pointee.pAppData = Unmanaged.passUnretained(disk).toOpaque()
        Self.installVFSMethods(vfs)
        let code = sqlite3_vfs_register(vfs, 0)
        precondition(code == SQLITE_OK, "sqlite3_vfs_register: \(code)")
    }

    deinit {
        sqlite3_vfs_unregister(vfs)
        vfs.deallocate()
        methods.deallocate()
        free(cName)
    }

    private static func disk(_ vfs: UnsafeMutablePointer<sqlite3_vfs>?) -> SimulatedDisk {
        Unmanaged<SimulatedDisk>.fromOpaque(vfs!.pointee.pAppData).takeUnretainedValue()
    }

    private static func real(_ vfs: UnsafeMutablePointer<sqlite3_vfs>?) -> UnsafeMutablePointer<sqlite3_vfs> {
        disk(vfs).registration.real
    }

    private static func installVFSMethods(_ vfs: UnsafeMutablePointer<sqlite3_vfs>) {
        vfs.pointee.xOpen = { vfs, name, file, flags, outFlags in
            VFSRegistration.open(vfs, name, file, flags, outFlags)
        }
        vfs.pointee.xDelete = { vfs, name, syncDirectory in
            let disk = VFSRegistration.disk(vfs), real = VFSRegistration.real(vfs)
            if let name {
                let verdict = disk.deleted(String(cString: name))
                guard verdict == SQLITE_OK else { return verdict }
            }
            return real.pointee.xDelete!(real, name, syncDirectory)
        }
        vfs.pointee.xAccess = { vfs, name, flags, result in
            let real = VFSRegistration.real(vfs)
            return real.pointee.xAccess!(real, name, flags, result)
        }
        vfs.pointee.xFullPathname = { vfs, name, count, out in
            let real = VFSRegistration.real(vfs)
            return real.pointee.xFullPathname!(real, name, count, out)
        }
        vfs.pointee.xDlOpen = { vfs, name in
            let real = VFSRegistration.real(vfs)
            return real.pointee.xDlOpen!(real, name)
        }
        vfs.pointee.xDlError = { vfs, count, message in
            let real = VFSRegistration.real(vfs)
            real.pointee.xDlError!(real, count, message)
        }
        vfs.pointee.xDlSym = { vfs, handle, symbol in
            let real = VFSRegistration.real(vfs)
            return real.pointee.xDlSym!(real, handle, symbol)
        }
        vfs.pointee.xDlClose = { vfs, handle in
            let real = VFSRegistration.real(vfs)
            real.pointee.xDlClose!(real, handle)
        }
        vfs.pointee.xRandomness = { vfs, count, out in
            let real = VFSRegistration.real(vfs)
            return real.pointee.xRandomness!(real, count, out)
        }
        vfs.pointee.xSleep = { vfs, microseconds in
            let real = VFSRegistration.real(vfs)
            return real.pointee.xSleep!(real, microseconds)
        }
        vfs.pointee.xCurrentTime = { vfs, time in
            let real = VFSRegistration.real(vfs)
            return real.pointee.xCurrentTime!(real, time)
        }
        vfs.pointee.xGetLastError = { vfs, count, message in
            let real = VFSRegistration.real(vfs)
            return real.pointee.xGetLastError!(real, count, message)
        }
        vfs.pointee.xCurrentTimeInt64 = { vfs, time in
            let real = VFSRegistration.real(vfs)
            return real.pointee.xCurrentTimeInt64!(real, time)
        }
    }

    private static func open(_ vfs: UnsafeMutablePointer<sqlite3_vfs>?, _ name: UnsafePointer<CChar>?,
                             _ file: UnsafeMutablePointer<sqlite3_file>?, _ flags: Int32,
                             _ outFlags: UnsafeMutablePointer<Int32>?) -> Int32 {
        let disk = disk(vfs), real = real(vfs)
        guard let file else { return SQLITE_MISUSE }
        file.pointee.pMethods = nil
        guard disk.mayOpen() else { return SQLITE_CANTOPEN }
        let realFile = (UnsafeMutableRawPointer(file) + OpenFile.realOffset).assumingMemoryBound(to: sqlite3_file.self)
        var openFlags = flags
        // A read-only file system: SQLite's unix VFS opens read-only when read-write fails.
        if disk.isReadOnly, name != nil, flags & SQLITE_OPEN_READWRITE != 0 {
            openFlags = (flags & ~(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_READONLY
        }
        var realOutFlags: Int32 = 0
        let code = real.pointee.xOpen!(real, name, realFile, openFlags, &realOutFlags)
        guard code == SQLITE_OK, realFile.pointee.pMethods != nil else {
            if realFile.pointee.pMethods != nil { _ = realFile.pointee.pMethods.pointee.xClose!(realFile) }
            return code == SQLITE_OK ? SQLITE_CANTOPEN : code
        }
        outFlags?.pointee = realOutFlags
        let opened = OpenFile(disk: disk, path: name.map { String(cString: $0) }, real: realFile,
                              isReadOnly: realOutFlags & SQLITE_OPEN_READONLY != 0)
        (UnsafeMutableRawPointer(file) + OpenFile.contextOffset)
            .storeBytes(of: Unmanaged.passRetained(opened).toOpaque(), as: UnsafeMutableRawPointer.self)
        file.pointee.pMethods = UnsafePointer(disk.registration.methods)
        disk.opened(opened, isMainDatabase: flags & SQLITE_OPEN_MAIN_DB != 0)
        return SQLITE_OK
    }

    private static func ioMethods() -> sqlite3_io_methods {
        var m = sqlite3_io_methods()
        // Version 2: shared memory for WAL, and no xFetch, so SQLite never maps the file and
        // every read comes through xRead, where the unsynced writes are laid over it.
        m.iVersion = 2
        m.xClose = { file in
            let open = OpenFile.of(file)
            let code = open.methods.xClose!(open.real)
            open.disk.closed(open)
            Unmanaged.passUnretained(open).release()
            return code
        }
        m.xRead = { file, buffer, amount, offset in
            let open = OpenFile.of(file)
            let code = open.methods.xRead!(open.real, buffer, amount, offset)
            guard code == SQLITE_OK || code == ExtendedCode.ioErrShortRead, let buffer else { return code }
            guard let size = open.realSize() else { return ExtendedCode.ioErrFstat }
            return open.disk.read(open, into: UnsafeMutableRawBufferPointer(start: buffer, count: Int(amount)), at: offset,
                                  realCode: code, realSize: size)
        }
        m.xWrite = { file, buffer, amount, offset in
            let open = OpenFile.of(file)
            guard open.path != nil else { return open.methods.xWrite!(open.real, buffer, amount, offset) }
            return open.disk.write(open, UnsafeRawBufferPointer(start: buffer, count: Int(amount)), at: offset,
                                   realSize: { open.realSize() })
        }
        m.xTruncate = { file, size in
            let open = OpenFile.of(file)
            guard open.path != nil else { return open.methods.xTruncate!(open.real, size) }
            return open.disk.truncate(open, to: size)
        }
        m.xSync = { file, flags in
            let open = OpenFile.of(file)
            guard open.path != nil else { return open.methods.xSync!(open.real, flags) }
            return open.disk.sync(open)
        }
        m.xFileSize = { file, size in
            let open = OpenFile.of(file)
            guard let real = open.realSize() else { return ExtendedCode.ioErrFstat }
            size?.pointee = open.disk.size(open, realSize: real)
            return SQLITE_OK
        }
        m.xLock = { file, level in
            let open = OpenFile.of(file)
            guard open.disk.isAlive(open) else { return ExtendedCode.ioErrLock }
            return open.methods.xLock!(open.real, level)
        }
        // Unlocking always goes through: a dead handle must still let go of its locks.
        m.xUnlock = { file, level in
            let open = OpenFile.of(file)
            return open.methods.xUnlock!(open.real, level)
        }
        m.xCheckReservedLock = { file, result in
            let open = OpenFile.of(file)
            return open.methods.xCheckReservedLock!(open.real, result)
        }
        m.xFileControl = { file, operation, argument in
            let open = OpenFile.of(file)
            return open.methods.xFileControl!(open.real, operation, argument)
        }
        m.xSectorSize = { file in
            let open = OpenFile.of(file)
            return open.methods.xSectorSize!(open.real)
        }
        m.xDeviceCharacteristics = { file in
            let open = OpenFile.of(file)
            return open.methods.xDeviceCharacteristics!(open.real)
        }
        m.xShmMap = { file, page, pageSize, extend, pointer in
            let open = OpenFile.of(file)
            guard open.disk.isAlive(open) else { return ExtendedCode.ioErrShmMap }
            return open.methods.xShmMap!(open.real, page, pageSize, extend, pointer)
        }
        m.xShmLock = { file, offset, count, flags in
            let open = OpenFile.of(file)
            guard open.disk.isAlive(open) || flags & SQLITE_SHM_UNLOCK != 0 else { return ExtendedCode.ioErrShmLock }
            return open.methods.xShmLock!(open.real, offset, count, flags)
        }
        m.xShmBarrier = { file in
            let open = OpenFile.of(file)
            open.methods.xShmBarrier!(open.real)
        }
        m.xShmUnmap = { file, delete in
            let open = OpenFile.of(file)
            return open.methods.xShmUnmap!(open.real, delete)
        }
        return m
    }
}

/// The durable image: what a sync (or a power cut's draw) puts on the real file. Written
/// through a handle SQLite holds on the file when there is one: closing a descriptor of our
/// own would drop every POSIX lock this process holds on the file, SQLite's included.
enum DurableFile {
    static func write(_ path: String, _ bytes: [UInt8], at offset: Int64, via handle: OpenFile?) -> Bool {
        if let handle {
            return bytes.withUnsafeBytes {
                handle.methods.xWrite!(handle.real, $0.baseAddress, Int32($0.count), offset)
            } == SQLITE_OK
        }
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var done = 0
        while done < bytes.count {
            let wrote = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done)) }
            guard wrote > 0 else {
                if wrote < 0, errno == EINTR { continue }
                return false
            }
            done += wrote
        }
        return true
    }

    static func truncate(_ path: String, to size: Int64, via handle: OpenFile?) -> Bool {
        if let handle { return handle.methods.xTruncate!(handle.real, size) == SQLITE_OK }
        return Glibc.truncate(path, off_t(size)) == 0
    }

    /// The WAL index of a database whose every handle is closed.
    static func remove(_ path: String) {
        unlink(path)
    }
}
