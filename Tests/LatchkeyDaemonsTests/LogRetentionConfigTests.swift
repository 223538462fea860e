import Foundation
import LatchkeyConfig
import LatchkeySim
import LatchkeyStore
import Testing
@testable import LatchkeyDaemons
@testable import LatchkeySettings

/// `lock.log_retention_events` (docs/CONFIGURATION.md): the audit log's retention, 10,000
/// unless configured, and what the lock's store is opened with.
struct LogRetentionConfigTests {
    /// The smallest lock configuration (the realtime priority's tests use it too).
    static let base = RealtimePrioritySettingsTests.base

    @Test func theLogKeepsTenThousandEventsUnlessTold() throws {
        #expect(try LockSettings.load(ConfigFile(path: "lock.yaml", text: Self.base)).logRetention == nil)
        let small = try LockSettings.load(ConfigFile(path: "lock.yaml", text: Self.base + "\nlock:\n  log_retention_events: 25\n"))
        #expect(small.logRetention == 25)
    }

    @Test func aRetentionOfNoEventsIsAConfigErrorAtItsLine() {
        for bad in ["0", "-3", "many", "10000001"] {
            let e = #expect(throws: ConfigError.self) {
                try LockSettings.load(ConfigFile(path: "lock.yaml", text: Self.base + "\nlock:\n  log_retention_events: \(bad)\n"))
            }
            #expect(e?.field == "lock.log_retention_events" || e?.field == "log_retention_events", "\(bad)")
            #expect(e?.line == 7, "\(bad)")
            #expect(e?.file == "lock.yaml")
        }
    }

    @Test func theLocksStoreTrimsItsLogToTheConfiguredRetention() throws {
        let dir = NSTemporaryDirectory() + "latchkey-retention-\(UInt32.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = ManualEventLoop()
        let stores = try StateStores.openLock(dir, loop: loop, logRetention: 3)
        let log = try #require((stores.journal as? StoredLockRecords)?.log)
        #expect(log.retention == 3)
        let defaults = try StateStores.openLock(dir + "-default", loop: loop)
        defer { try? FileManager.default.removeItem(atPath: dir + "-default") }
        #expect((defaults.journal as? StoredLockRecords)?.log.retention == StoredEventLog.defaultRetention)
    }
}
