import LatchkeyConfig
import Testing
@testable import LatchkeyDaemons
@testable import LatchkeySettings

/// `lock.realtime_priority` (docs/CONFIGURATION.md): SCHED_FIFO 10 unless configured.
struct RealtimePrioritySettingsTests {
    static let base = """
        sim:
          address: "C0:FF:EE:00:00:01"
        gpio:
          chip: c
          unlock_line: latch
        """

    @Test func theLockAsksForFIFO10UnlessTold() throws {
        #expect(try LockSettings.load(ConfigFile(path: "lock.yaml", text: Self.base)).realtimePriority == 10)
        let off = try LockSettings.load(ConfigFile(path: "lock.yaml", text: Self.base + "\nlock:\n  realtime_priority: 0\n"))
        #expect(off.realtimePriority == nil)
        let five = try LockSettings.load(ConfigFile(path: "lock.yaml", text: Self.base + "\nlock:\n  realtime_priority: 5\n"))
        #expect(five.realtimePriority == 5)
    }

    @Test func aPriorityAtOrAboveTheKernelsInterruptThreadsIsAConfigError() {
        // 50 is where the kernel's threaded interrupt handlers run: the lock stays below them.
        let e = #expect(throws: ConfigError.self) {
            try LockSettings.load(ConfigFile(path: "lock.yaml", text: Self.base + "\nlock:\n  realtime_priority: 50\n"))
        }
        #expect(e?.field == "lock.realtime_priority" || e?.field == "realtime_priority")
        #expect(e?.line == 7)
    }
}
