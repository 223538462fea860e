#if canImport(Glibc)
import Glibc
#endif
import LatchkeyPhoneAgent
import LatchkeySim
import LatchkeyStore

/// `latchkey-sim`: a household's life with faults, on simulated time, judged after every step.
public enum HouseholdCommand {
    static let usage = """
        usage: latchkey-sim [--days N] [--seed S] [--scratch DIR] [--log-retention N] [--plant V] [--self-test]
          --days N       simulated days (default 365)
          --seed S       the seed (decimal or 0x hex; default: drawn from the clock, and printed)
          --scratch DIR  where the state directories go (default /dev/shm, a tmpfs: what the timings assume)
          --log-retention N
                         the lock's lock.log_retention_events (default 10000): a small one trims the
                         audit log many times in a short run, and a broker outage then leaves gaps
          --plant V      plants one violation on day 3 (one of: \(PlantedViolation.allCases.map(\.rawValue).joined(separator: ", ")))
          --self-test    plants each violation in a short run and fails unless the judge catches it
        """

    public static func main(_ arguments: [String]) -> Int32 {
        deterministicHashing(arguments)
        var days = 365, seed: UInt64?, scratch = "/dev/shm", selfTest = false, plant: PlantedViolation?
        var logRetention: Int?
        var i = 1
        func value() -> String? { i += 1; return i < arguments.count ? arguments[i] : nil }
        while i < arguments.count {
            switch arguments[i] {
            case "--days": guard let v = value(), let n = Int(v), (1...3650).contains(n) else { return bad("--days needs 1...3650") }; days = n
            case "--seed": guard let v = value(), let s = parseSeed(v) else { return bad("--seed needs a number") }; seed = s
            case "--scratch": guard let v = value() else { return bad("--scratch needs a directory") }; scratch = v
            case "--plant": guard let v = value(), let p = PlantedViolation(rawValue: v) else { return bad("--plant needs a violation's name") }; plant = p
            case "--log-retention":
                guard let v = value(), let n = Int(v), (1...10_000_000).contains(n) else { return bad("--log-retention needs 1...10000000") }
                logRetention = n
            case "--self-test": selfTest = true
            case "-h", "--help": print(usage); return 0
            default: return bad("unknown argument \(arguments[i])")
            }
            i += 1
        }
        if selfTest { return runSelfTest(scratch: scratch, seed: seed ?? 0x5EED_0001) }
        let chosen = seed ?? UInt64(truncatingIfNeeded: time(nil)) &* 0x9E37_79B9_7F4A_7C15
        let replay = "latchkey-sim --days \(days) --seed \(chosen)" + (logRetention.map { " --log-retention \($0)" } ?? "")
        print("latchkey-sim: seed \(chosen) (replay: \(replay))")
        fflush(nil)
        do {
            let report = try HouseholdRun(seed: chosen, days: days, plant: plant, scratch: scratch,
                                          logRetention: logRetention).run { print("  " + $0); fflush(nil) }
            printReport(report)
            return report.violations.isEmpty ? 0 : 1
        } catch {
            print("latchkey-sim: \(error)")
            return 1
        }
    }

    static func bad(_ why: String) -> Int32 {
        print("latchkey-sim: \(why)\n\(usage)")
        return 64
    }

    static func parseSeed(_ text: String) -> UInt64? {
        text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
    }

    /// Swift seeds its hash tables per process: a replay needs them seeded alike, so the
    /// simulator runs itself again with SWIFT_DETERMINISTIC_HASHING set.
    static func deterministicHashing(_ arguments: [String]) {
        guard getenv("SWIFT_DETERMINISTIC_HASHING") == nil else { return }
        setenv("SWIFT_DETERMINISTIC_HASHING", "1", 1)
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        execv("/proc/self/exe", &argv)
        print("latchkey-sim: cannot run itself again with SWIFT_DETERMINISTIC_HASHING=1 (\(String(cString: strerror(errno)))); "
              + "set it yourself for a replayable trace")
    }

    static func printReport(_ r: HouseholdRun.Report) {
        print("seed \(r.seed), \(r.days) simulated days, \(r.steps) steps, wall time \(format(r.wallSeconds)) s, "
              + "CPU \(format(r.cpuSeconds)) s (per simulated month: \(format(r.wallSeconds / Double(r.days) * 30)) s wall, "
              + "\(format(r.cpuSeconds / Double(r.days) * 30)) s CPU)")
        print("played:")
        for (kind, n) in r.counts.sorted(by: { $0.key < $1.key }) {
            print("  \(kind): \(n) (\(format(Double(n) / Double(r.days))) a day)")
        }
        print("unlock line rises: \(r.rises)")
        print("re-links after a return: \(r.relinkCount), slowest \(r.relinkMax.map { "\($0)" } ?? "-") "
              + "(bound \(HouseholdJudge.relinkBound))")
        print("re-links after the owner's phone's disk came back: \(r.relinkAfterBackoffCount), slowest "
              + "\(r.relinkAfterBackoffMax.map { "\($0)" } ?? "-") (bound: its back-off's longest step, "
              + "\(PhoneAgentConfiguration.defaultStoreRetryLimit), then \(HouseholdJudge.relinkBound))")
        print("broker: \(r.brokerEvents) events, \(r.brokerDuplicates) repeated after a bridge restart, "
              + "\(r.brokerGaps) gaps (\(r.brokerGapsExplained) explained by the log's retention)")
        print("audit log: at most \(r.logCountMax) events at a sample (retention \(r.logRetention)), "
              + "\(r.logTrimmed.map { "\($0)" } ?? "-") trimmed by the end")
        print("phones: \(r.firstCommandsAfterRestart) first commands after a restart, each counter above the last sent")
        for s in r.samples {
            print("  day \(s.day): store \(s.store) bytes, allocated \(s.allocated) bytes (mallinfo2), data size \(s.data) bytes (statm)")
        }
        print("growth bounds from the second sample to the last: store \(HouseholdJudge.storeGrowthBound) bytes, "
              + "allocated \(HouseholdJudge.heapGrowthBound) bytes" + (r.samples.count < 3 ? " (not judged: fewer than 3 samples)" : ""))
        if r.violations.isEmpty {
            print("no violations")
        } else {
            print("VIOLATIONS (seed \(r.seed)):")
            for v in r.violations.prefix(50) { print("  seed \(r.seed) \(v)") }
            if r.violations.count > 50 { print("  ... \(r.violations.count - 50) more") }
            print("the trace's last lines:")
            for line in r.lastTrace { print("  " + line) }
        }
        print("trace hash \(hex(r.traceHash)) (disk \(hex(r.diskTraceHash)))")
    }

    static func hex(_ v: UInt64) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }

    static func format(_ v: Double) -> String {
        let x = (v * 10).rounded() / 10
        return "\(x)"
    }

    /// A clean run, then one run per planted violation: each must be caught, and only by its rule.
    static func runSelfTest(scratch: String, seed: UInt64) -> Int32 {
        let days = 5
        // A log that trims within the five days: the retention plant then has a bound to break.
        let retention = 50
        var failed = false
        do {
            let clean = try HouseholdRun(seed: seed, days: days, scratch: scratch, logRetention: retention).run()
            if clean.violations.isEmpty {
                print("self-test: the clean run (seed \(seed), \(days) days, log retention \(retention), "
                      + "\(clean.logTrimmed.map { "\($0)" } ?? "-") events trimmed) has no violations: ok")
            } else {
                failed = true
                print("self-test: FAIL: the clean run has violations:")
                printReport(clean)
            }
            for plant in PlantedViolation.allCases {
                let run = try HouseholdRun(seed: seed, days: days, plant: plant, scratch: scratch, logRetention: retention).run()
                let caught = run.violations.filter { $0.rule == plant.expected }
                if let first = caught.first {
                    print("self-test: planted \(plant.rawValue): caught: \(first)")
                } else {
                    failed = true
                    print("self-test: FAIL: planted \(plant.rawValue) was not caught (\(plant.expected.rawValue)); "
                          + "found: \(run.violations.map(\.description))")
                }
            }
        } catch {
            print("self-test: \(error)")
            return 1
        }
        print(failed ? "self-test: FAILED" : "self-test: every planted violation was caught")
        return failed ? 1 : 0
    }
}
