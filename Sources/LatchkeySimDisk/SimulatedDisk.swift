import CSQLite  // result codes only; every call into C is in Internal/SQLiteVFS.swift
import LatchkeySim

/// A disk under SQLite that can fail: an SQLite VFS (registered under `vfsName`) over the
/// real unix VFS, whose writes stay in a model of the kernel's page cache until the file is
/// synced (xSync), and which fails the calls a seeded plan or the test picks: a power cut
/// (each unsynced write lost, written or torn, drawn from the seed), a process kill, disk
/// full, an I/O error, a read-only remount. What each models, and what it does not:
/// docs/TESTING.md, "A disk that fails". Used from one thread; close every connection over
/// it before `restart()`.
public final class SimulatedDisk {
    /// The seed of the draws at a power cut.
    public let seed: UInt64
    /// The name SQLite knows the disk's VFS by (sqlite3_open_v2's last argument).
    public var vfsName: String { registration.name }

    /// xWrite calls on the disk's files so far (failed ones included): `.write(n)` fires at
    /// the n-th. Temporary files (no name) are passed through and not counted.
    public private(set) var writes = 0
    /// xSync calls so far (failed ones included): `.sync(n)` fires at the n-th.
    public private(set) var syncs = 0
    /// xSync calls per file path.
    public private(set) var syncsByFile: [String: Int] = [:]
    public private(set) var truncates = 0

    public enum State: Sendable, Equatable {
        case running
        /// After a power cut or a kill: every handle open then is dead, nothing new opens
        /// until `restart()`.
        case crashed
    }
    public private(set) var state = State.running
    public private(set) var isFull = false
    public private(set) var isReadOnly = false
    /// The faults that fired, in order.
    public private(set) var fired: [(DiskTrigger, DiskFault)] = []
    /// What the last power cut did to the unsynced writes.
    public private(set) var lastCut: PowerCutReport?

    /// A hash of every operation, its file (by role), offset, length, result and fate:
    /// two runs from the same seed and the same program have the same one.
    public private(set) var traceHash: UInt64 = 0xCBF2_9CE4_8422_2325

    private var random: SplitMix64
    private var scheduled: [DiskTrigger: DiskFault] = [:]
    /// Unsynced operations per path (the page cache beyond the durable image).
    private var unsynced: [String: [PendingOperation]] = [:]
    /// Main database files opened over the disk: their -shm is lost at a power cut.
    private var databases: Set<String> = []
    private var generation = 0
    private var handles: [ObjectIdentifier: OpenFile] = [:]
    private(set) var registration: VFSRegistration!

    public init(seed: UInt64, plan: DiskFaultPlan = DiskFaultPlan()) {
        self.seed = seed
        random = SplitMix64(seed: seed)
        registration = VFSRegistration(disk: self)
        schedule(plan)
    }

    // MARK: Faults

    /// `fault` fires at `trigger` (replacing one scheduled there).
    public func schedule(_ fault: DiskFault, at trigger: DiskTrigger) { scheduled[trigger] = fault }

    /// Every fault of `plan`, in its order.
    public func schedule(_ plan: DiskFaultPlan) {
        for (trigger, fault) in plan.faults { schedule(fault, at: trigger) }
    }

    /// Drops the faults that have not fired (they stay scheduled across `restart()`).
    public func cancelScheduledFaults() { scheduled = [:] }

    /// What becomes of the unsynced writes at a power cut.
    public enum PowerCutDraw: Sendable {
        /// Each drawn from the seed: lost, written or torn.
        case seeded
        /// All lost (a control: what a test sees when nothing unsynced survives).
        case loseAll
    }

    /// Power fails now. Returns what became of the unsynced writes.
    @discardableResult
    public func cutPower(_ draw: PowerCutDraw = .seeded) -> PowerCutReport {
        var report = PowerCutReport()
        for path in unsynced.keys.sorted() {
            for operation in unsynced[path] ?? [] {
                let fate = draw == .loseAll ? .lost : settle(operation, in: path)
                report.count(fate)
                trace(.cut, path, operation.offset, operation.length, Int32(fate.rawValue))
            }
        }
        unsynced = [:]
        crash(powerLost: true)
        lastCut = report
        return report
    }

    /// The process dies now: its handles with it; what it wrote stays in the page cache.
    public func killProcess() {
        trace(.kill, "", 0, 0, 0)
        crash(powerLost: false)
    }

    /// Power back on (or the next process): opens work again. Throws while a handle of the
    /// crashed process is still open: its connection must be closed first.
    public func restart() throws(SimulatedDiskError) {
        let stale = handles.values.filter { $0.generation < generation }.compactMap(\.path).sorted()
        guard stale.isEmpty else { throw .handlesStillOpen(stale) }
        // The WAL index lives in memory: after a power cut, SQLite rebuilds it from the WAL.
        if walIndexLost {
            for database in databases.sorted() { DurableFile.remove(database + "-shm") }
        }
        walIndexLost = false
        state = .running
        trace(.restart, "", 0, 0, 0)
    }
    private var walIndexLost = false

    /// Space is freed: writes may grow files again.
    public func makeRoom() { isFull = false }

    /// The file system is writable again (files opened read-only stay so until reopened).
    public func remountReadWrite() { isReadOnly = false }

    /// Handles open now (dead ones included).
    public var openHandles: Int { handles.count }

    // MARK: The VFS's calls (Internal/SQLiteVFS.swift)

    func mayOpen() -> Bool { state == .running }

    func opened(_ file: OpenFile, isMainDatabase: Bool) {
        handles[ObjectIdentifier(file)] = file
        if let path = file.path, isMainDatabase { databases.insert(path) }
        trace(.open, file.path ?? "", 0, 0, 0)
    }

    func closed(_ file: OpenFile) { handles[ObjectIdentifier(file)] = nil }

    func isAlive(_ file: OpenFile) -> Bool { state == .running && file.generation == generation }

    var freshGeneration: Int { generation }

    func deleted(_ path: String) -> Int32 {
        guard state == .running else { return ExtendedCode.ioErrDelete }
        guard !isReadOnly else { return ExtendedCode.ioErrDelete }
        unsynced[path] = nil
        trace(.delete, path, 0, 0, 0)
        return SQLITE_OK
    }

    /// `buffer` holds what the real file returned (`realCode`: SQLITE_OK or a zero-filled
    /// short read); the unsynced operations are laid over it.
    func read(_ file: OpenFile, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64,
              realCode: Int32, realSize: Int64) -> Int32 {
        guard isAlive(file) else { return ExtendedCode.ioErrRead }
        guard let path = file.path else { return realCode }
        let end = offset + Int64(buffer.count)
        var size = realSize
        for operation in unsynced[path] ?? [] {
            switch operation {
            case .write(let at, let bytes):
                let from = max(at, offset), to = min(at + Int64(bytes.count), end)
                if from < to {
                    bytes.withUnsafeBytes { source in
                        let part = UnsafeRawBufferPointer(rebasing: source[Int(from - at)..<Int(to - at)])
                        UnsafeMutableRawBufferPointer(rebasing: buffer[Int(from - offset)..<Int(to - offset)]).copyMemory(from: part)
                    }
                }
                size = max(size, at + Int64(bytes.count))
            case .truncate(let to):
                if to < end { zero(buffer, from: max(to, offset) - offset) }
                size = to
            }
        }
        guard end > size else { return SQLITE_OK }
        zero(buffer, from: max(size, offset) - offset)
        return ExtendedCode.ioErrShortRead
    }

    func size(_ file: OpenFile, realSize: Int64) -> Int64 {
        guard let path = file.path else { return realSize }
        return Self.size(after: unsynced[path] ?? [], from: realSize)
    }

    func write(_ file: OpenFile, _ bytes: UnsafeRawBufferPointer, at offset: Int64, realSize: () -> Int64?) -> Int32 {
        guard isAlive(file) else { return ExtendedCode.ioErrWrite }
        guard let path = file.path else { return SQLITE_OK }
        writes += 1
        if let fault = fire(.write(writes)) {
            trace(.write, path, offset, bytes.count, Int32(fault.code))
            switch fault {
            case .diskFull: return SQLITE_FULL
            case .ioError, .readOnly, .powerCut, .processKill: return ExtendedCode.ioErrWrite
            }
        }
        var result = SQLITE_OK
        if isReadOnly || file.isReadOnly {
            result = ExtendedCode.ioErrWrite
        } else if isFull {
            guard let durable = realSize() else { return ExtendedCode.ioErrFstat }
            if offset + Int64(bytes.count) > Self.size(after: unsynced[path] ?? [], from: durable) { result = SQLITE_FULL }
        }
        trace(.write, path, offset, bytes.count, result)
        guard result == SQLITE_OK else { return result }
        unsynced[path, default: []].append(.write(offset: offset, bytes: Array(bytes)))
        return SQLITE_OK
    }

    func truncate(_ file: OpenFile, to size: Int64) -> Int32 {
        guard isAlive(file) else { return ExtendedCode.ioErrTruncate }
        guard let path = file.path else { return SQLITE_OK }
        truncates += 1
        let result = isReadOnly || file.isReadOnly ? ExtendedCode.ioErrTruncate : SQLITE_OK
        trace(.truncate, path, size, 0, result)
        guard result == SQLITE_OK else { return result }
        unsynced[path, default: []].append(.truncate(size: size))
        return SQLITE_OK
    }

    func sync(_ file: OpenFile) -> Int32 {
        guard isAlive(file) else { return ExtendedCode.ioErrFsync }
        guard let path = file.path else { return SQLITE_OK }
        syncs += 1
        syncsByFile[path, default: 0] += 1
        if let fault = fire(.sync(syncs)) {
            trace(.sync, path, 0, 0, Int32(fault.code))
            return fault == .diskFull ? SQLITE_FULL : ExtendedCode.ioErrFsync
        }
        let operations = unsynced[path] ?? []
        if isReadOnly, !operations.isEmpty {
            trace(.sync, path, 0, operations.count, ExtendedCode.ioErrFsync)
            return ExtendedCode.ioErrFsync
        }
        for operation in operations {
            let written = switch operation {
            case .write(let offset, let bytes): DurableFile.write(path, bytes, at: offset, via: file)
            case .truncate(let size): DurableFile.truncate(path, to: size, via: file)
            }
            guard written else {
                trace(.sync, path, 0, operations.count, ExtendedCode.ioErrFsync)
                return ExtendedCode.ioErrFsync
            }
        }
        unsynced[path] = nil
        trace(.sync, path, 0, operations.count, SQLITE_OK)
        return SQLITE_OK
    }

    // MARK: The model

    private func fire(_ trigger: DiskTrigger) -> DiskFault? {
        guard let fault = scheduled.removeValue(forKey: trigger) else { return nil }
        fired.append((trigger, fault))
        switch fault {
        case .diskFull: isFull = true
        case .readOnly: isReadOnly = true
        case .ioError: break
        case .powerCut: cutPower()
        case .processKill: killProcess()
        }
        return fault
    }

    private func crash(powerLost: Bool) {
        generation += 1
        state = .crashed
        if powerLost { walIndexLost = true }
    }

    /// One unsynced operation at a power cut: its fate drawn from the seed, applied to the
    /// durable image.
    private func settle(_ operation: PendingOperation, in path: String) -> PowerCutReport.Fate {
        // Any handle on the file will do (the same inode); its descriptor is still open.
        let handle = handles.values.first { $0.path == path }
        switch operation {
        case .truncate(let size):
            guard random.next(through: 1) == 1 else { return .lost }
            _ = DurableFile.truncate(path, to: size, via: handle)
            return .written
        case .write(let offset, let bytes):
            switch random.next(through: 2) {
            case 0: return .lost
            case 1:
                _ = DurableFile.write(path, bytes, at: offset, via: handle)
                return .written
            default:
                // Each 512-octet sector of the file the write covers: old, new or garbage.
                var start = offset
                let end = offset + Int64(bytes.count)
                while start < end {
                    let stop = min((start / 512 + 1) * 512, end)
                    let piece = Array(bytes[Int(start - offset)..<Int(stop - offset)])
                    switch random.next(through: 2) {
                    case 0: break
                    case 1: _ = DurableFile.write(path, piece, at: start, via: handle)
                    default: _ = DurableFile.write(path, piece.map { _ in UInt8(truncatingIfNeeded: random.next()) }, at: start, via: handle)
                    }
                    start = stop
                }
                return .torn
            }
        }
    }

    private static func size(after operations: [PendingOperation], from durable: Int64) -> Int64 {
        operations.reduce(durable) { size, operation in
            switch operation {
            case .write(let offset, let bytes): max(size, offset + Int64(bytes.count))
            case .truncate(let to): to
            }
        }
    }

    private func zero(_ buffer: UnsafeMutableRawBufferPointer, from index: Int64) {
        guard index < buffer.count else { return }
        UnsafeMutableRawBufferPointer(rebasing: buffer[Int(max(index, 0))...]).initializeMemory(as: UInt8.self, repeating: 0)
    }

    private enum Operation: UInt8 { case open = 1, write, truncate, sync, delete, cut, kill, restart }

    /// FNV-1a over the operation, the file's role (its name's suffix: -wal, -shm or the
    /// database; the scratch directory differs between runs), offset, length and result.
    private func trace(_ operation: Operation, _ path: String, _ offset: Int64, _ length: Int, _ result: Int32) {
        let role: UInt64 = path.hasSuffix("-wal") ? 2 : path.hasSuffix("-journal") ? 3 : path.isEmpty ? 0 : 1
        for value in [UInt64(operation.rawValue), role, UInt64(bitPattern: offset), UInt64(length),
                      UInt64(UInt32(bitPattern: result))] {
            var v = value
            for _ in 0..<8 {
                traceHash = (traceHash ^ (v & 0xFF)) &* 0x0000_0100_0000_01B3
                v >>= 8
            }
        }
    }
}

/// Where a scheduled fault fires: at the n-th write or the n-th sync (1-based, counted from
/// the disk's creation: `SimulatedDisk.writes`, `.syncs`).
public enum DiskTrigger: Hashable, Sendable, CustomStringConvertible {
    case write(Int)
    case sync(Int)

    public var description: String {
        switch self {
        case .write(let n): "write \(n)"
        case .sync(let n): "sync \(n)"
        }
    }
}

public enum DiskFault: Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// SQLITE_FULL, and the disk stays full (`SimulatedDisk.makeRoom`).
    case diskFull
    /// SQLITE_IOERR_WRITE or SQLITE_IOERR_FSYNC, once.
    case ioError
    /// The file system goes read-only (`SimulatedDisk.remountReadWrite`).
    case readOnly
    /// Power fails before the call: `SimulatedDisk.cutPower`.
    case powerCut
    /// The process dies before the call: `SimulatedDisk.killProcess`.
    case processKill

    var code: Int {
        switch self {
        case .diskFull: 1
        case .ioError: 2
        case .readOnly: 3
        case .powerCut: 4
        case .processKill: 5
        }
    }

    public var description: String {
        switch self {
        case .diskFull: "disk full"
        case .ioError: "I/O error"
        case .readOnly: "read-only"
        case .powerCut: "power cut"
        case .processKill: "process killed"
        }
    }
}

/// Faults at triggers, given or drawn from a seed.
public struct DiskFaultPlan: Sendable {
    public var faults: [(DiskTrigger, DiskFault)]

    public init(_ faults: [(DiskTrigger, DiskFault)] = []) { self.faults = faults }

    /// `count` faults of `kinds` at writes in `writes` and syncs in `syncs` (the disk's
    /// counts: `SimulatedDisk.writes`, `.syncs`), drawn from `seed`: the same seed, the same
    /// plan. Two drawn at one trigger: the later replaces the earlier when scheduled.
    public static func drawn(seed: UInt64, count: Int, writes: ClosedRange<Int>, syncs: ClosedRange<Int>,
                             kinds: [DiskFault] = DiskFault.allCases) -> DiskFaultPlan {
        precondition(!kinds.isEmpty)
        var random = SplitMix64(seed: seed)
        var plan = DiskFaultPlan()
        for _ in 0..<count {
            let trigger: DiskTrigger = random.next(through: 1) == 0
                ? .write(random.next(in: writes)) : .sync(random.next(in: syncs))
            plan.faults.append((trigger, kinds[random.next(in: 0...(kinds.count - 1))]))
        }
        return plan
    }
}

/// What a power cut did to the writes that were not synced.
public struct PowerCutReport: Sendable, Equatable, CustomStringConvertible {
    public enum Fate: UInt8, Sendable { case lost = 1, written, torn }
    public var lost = 0
    public var written = 0
    public var torn = 0

    public init() {}

    mutating func count(_ fate: Fate) {
        switch fate {
        case .lost: lost += 1
        case .written: written += 1
        case .torn: torn += 1
        }
    }

    public var description: String { "unsynced operations: \(written) written, \(lost) lost, \(torn) torn" }
}

public enum SimulatedDiskError: Error, Sendable, CustomStringConvertible {
    /// `restart()` while connections of the crashed process still hold these files.
    case handlesStillOpen([String])

    public var description: String {
        switch self {
        case .handlesStillOpen(let paths):
            "the crashed process still holds \(paths.joined(separator: ", ")): close its connections first"
        }
    }
}

enum PendingOperation {
    case write(offset: Int64, bytes: [UInt8])
    case truncate(size: Int64)

    var offset: Int64 {
        switch self {
        case .write(let offset, _): offset
        case .truncate(let size): size
        }
    }

    var length: Int {
        switch self {
        case .write(_, let bytes): bytes.count
        case .truncate: 0
        }
    }
}

/// SQLite's extended I/O result codes: macros Swift does not import (SQLITE_IOERR | n << 8).
enum ExtendedCode {
    static let ioErrRead = SQLITE_IOERR | (1 << 8)  // SQLITE_IOERR_READ
    static let ioErrShortRead = SQLITE_IOERR | (2 << 8)  // SQLITE_IOERR_SHORT_READ
    static let ioErrWrite = SQLITE_IOERR | (3 << 8)  // SQLITE_IOERR_WRITE
    static let ioErrFsync = SQLITE_IOERR | (4 << 8)  // SQLITE_IOERR_FSYNC
    static let ioErrTruncate = SQLITE_IOERR | (6 << 8)  // SQLITE_IOERR_TRUNCATE
    static let ioErrFstat = SQLITE_IOERR | (7 << 8)  // SQLITE_IOERR_FSTAT
    static let ioErrDelete = SQLITE_IOERR | (10 << 8)  // SQLITE_IOERR_DELETE
    static let ioErrLock = SQLITE_IOERR | (15 << 8)  // SQLITE_IOERR_LOCK
    static let ioErrShmLock = SQLITE_IOERR | (20 << 8)  // SQLITE_IOERR_SHMLOCK
    static let ioErrShmMap = SQLITE_IOERR | (21 << 8)  // SQLITE_IOERR_SHMMAP
}
