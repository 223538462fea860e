#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LatchkeyLock
import LatchkeyStore
import LatchkeyTransport

/// Measurements for docs/PERFORMANCE.md, printed by `latchkey-bench`. They run on a
/// real file system: `directory` must be disk-backed (the default /var/tmp is, by the FHS;
/// /tmp may be tmpfs, where fsync costs nothing and the figures would lie).
public enum StoreBenchmark {
    public struct Figures: Hashable, Sendable, CustomStringConvertible {
        public var samples: Int
        public var median: Duration
        public var p99: Duration
        public var description: String {
            "median \(median.milliseconds.formatted2) ms, p99 \(p99.milliseconds.formatted2) ms over \(samples)"
        }
    }

    /// The time `record` takes to make one decision durable (commit + fsync of the WAL),
    /// `count` times, in a fresh store, after `warmUp` decisions that are not timed.
    /// Completing each decision is not timed.
    /// Cold (no warm-up) and warm alike, a commit overwrites WAL blocks in place: the store
    /// lays its WAL file out to its working size when it opens (`AgentStore.prepareWAL`).
    /// Before it did, each of a new store's first ~1,000 pages made the file longer, and the
    /// sync also had to commit the new size, which costs more under I/O load; so did every
    /// clean restart, since a clean close empties the WAL file.
    public static func durableDecisions(count: Int, warmUp: Int = 0, directory: String = "/var/tmp") throws -> Figures {
        precondition(count > 0, "measure at least one decision")
        return try withScratchStore(in: directory) { store in
            var monotonic = Instant.zero
            let journal = store.decisionJournal(monotonicNow: { monotonic })
            let clock = ContinuousClock()
            var samples: [Duration] = []
            samples.reserveCapacity(count)
            for index in 1...(warmUp + count) {
                monotonic += .milliseconds(10)
                let decision = LockDecision(id: DecisionID(UInt64(index)), operation: index % 2 == 0 ? .lock : .unlock,
                                            source: .remote, who: KeyID(1), decidedAt: monotonic,
                                            deadline: monotonic + .seconds(5))
                let sample = try clock.measure { try journal.record(decision) }
                if index > warmUp { samples.append(sample) }
                try journal.complete(decision.id, outcome: .succeeded)
            }
            return figures(samples)
        }
    }

    /// The floor under `durableDecisions`: one 4 KiB write and `fdatasync` of a file in
    /// `directory`, `count` times, overwriting in place. No durable commit can be faster than
    /// the device's flush.
    public static func syncFloor(count: Int, directory: String = "/var/tmp") throws -> Figures {
        precondition(count > 0, "measure at least once")
        return try withScratchStore(in: directory) { store in
            let path = store.directory + "/sync-floor"
            let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw StoreError.fileSystem(path: path, call: "open", errno: errno) }
            defer { close(fd) }
            let block = [UInt8](repeating: 0x5A, count: 4096)
            // A short write or a failed flush would make the floor a lie: each is checked.
            func write(at index: Int) throws {
                guard pwrite(fd, block, block.count, off_t(index * block.count)) == block.count else {
                    throw StoreError.fileSystem(path: path, call: "pwrite", errno: errno)
                }
            }
            for index in 0..<16 { try write(at: index) }
            guard fsync(fd) == 0 else { throw StoreError.fileSystem(path: path, call: "fsync", errno: errno) }
            let clock = ContinuousClock()
            var samples: [Duration] = []
            for index in 0..<count {
                samples.append(try clock.measure {
                    try write(at: index % 16)
                    guard fdatasync(fd) == 0 else { throw StoreError.fileSystem(path: path, call: "fdatasync", errno: errno) }
                })
            }
            return figures(samples)
        }
    }

    /// What a restarted lock agent spends in the store before it can restore its state:
    /// open (integrity check, migrations) and read the interrupted decision, with a log of
    /// `logRows` events. Measured `repeats` times on the same file.
    public static func reopen(logRows: Int, repeats: Int = 20, directory: String = "/var/tmp") throws -> Figures {
        precondition(repeats > 0, "measure at least once")
        return try withScratchStore(in: directory) { store in
            let event = LockEvent(kind: .doorStateChange(.closed), time: .zero, lockStateBefore: .locked,
                                  lockStateAfter: .locked, doorState: .closed)
            try store.fillEventLog(with: event.encoded, count: logRows)  // one transaction: not measured
            try store.decisionJournal(monotonicNow: { .zero }).record(
                LockDecision(id: DecisionID(1), operation: .lock, source: .auto, decidedAt: .zero, deadline: .zero + .seconds(5)))
            let clock = ContinuousClock()
            var samples: [Duration] = []
            for _ in 0..<repeats {
                samples.append(try clock.measure {
                    let reopened = try AgentStore(directory: store.directory, fileName: "bench.db")
                    _ = try reopened.decisionJournal(monotonicNow: { .zero }).interrupted()
                    try reopened.close()
                })
            }
            return figures(samples)
        }
    }

    private static func withScratchStore<T>(in directory: String, _ body: (AgentStore) throws -> T) throws -> T {
        var template = Array("\(directory)/latchkey-bench-XXXXXX".utf8CString)
        // The name is read inside the closure: the buffer mkdtemp fills lives only there.
        guard let scratch = template.withUnsafeMutableBufferPointer({ buffer in
            mkdtemp(buffer.baseAddress!).map { String(cString: $0) }
        }) else {
            throw StoreError.fileSystem(path: directory, call: "mkdtemp", errno: errno)
        }
        // A scratch directory left behind is litter in /var/tmp, not a wrong figure.
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let store = try AgentStore(directory: scratch, fileName: "bench.db")
        defer { try? store.close() }  // the figures are taken; a failed close changes none
        return try body(store)
    }

    private static func figures(_ samples: [Duration]) -> Figures {
        let sorted = samples.sorted()
        let p99Index = min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)
        return Figures(samples: sorted.count, median: sorted[sorted.count / 2], p99: sorted[max(0, p99Index)])
    }
}

extension Double {
    /// Two decimals, rounded half up (no `String(format:)`: it needs full Foundation).
    fileprivate var formatted2: String {
        let hundredths = Int((self * 100).rounded())
        let fraction = abs(hundredths % 100)
        return (hundredths < 0 && hundredths > -100 ? "-" : "") + String(hundredths / 100) + "."
            + (fraction < 10 ? "0" : "") + String(fraction)
    }
}
