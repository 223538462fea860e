import LatchkeyDaemons
import LatchkeyDemo
import LatchkeyGPIO
import LatchkeyLock
import LatchkeyPosix
import LatchkeySim
import LatchkeySimGPIO
import LatchkeyStore
import LatchkeyTransport

/// `latchkey-torture --self-test`: shows that the torture's judge sees what it is there to
/// see. Each case lays out a real store and a real file-backed chip in a scratch directory,
/// drives the unlock line through the chip as the lock would, reads it back through the
/// torture's own `LineObserver` and asks `TortureAudit` — and each injected fault must be
/// reported as an unintended unlock, for its own reason; the clean case must not be.
///
/// Time is a `ManualEventLoop`'s (the lock side stamps edges and decisions with it), so a
/// "6 s later" takes no time and every run is the same.
public enum TortureSelfTest {
    /// One case: what it does to the lock's records and line, and what the audit must say.
    struct Case: Sendable {
        var name: String
        /// The reason expected for the one unexplained rise; nil: none expected.
        var expected: (@Sendable (UnlockRiseAudit.Reason) -> Bool)?
        var play: @Sendable (Bench) throws -> Void
    }

    static let cases: [Case] = [
        Case(name: "a clean unlock: decided, recorded, driven once, completed", expected: nil) { bench in
            let id = try bench.decide(.unlock)
            try bench.pulse()
            try bench.complete(id, .succeeded)
        },
        Case(name: "an unrecorded pulse: 1 ms high, between two reads of the line, no decision",
             expected: { $0 == .noDecision }) { bench in
            bench.loop.advance(by: .seconds(1))
            try bench.pulse(width: .milliseconds(1))
        },
        Case(name: "a stale decision: an unlock recorded, the line rising 6 s later (window 5 s)",
             expected: { if case .pastWindow = $0 { true } else { false } }) { bench in
            let id = try bench.decide(.unlock)
            bench.loop.advance(by: .seconds(6))
            try bench.pulse()
            try bench.complete(id, .succeeded)
        },
        Case(name: "a twice-used decision: one unlock, two pulses from one process (open at a kill, so resumable)",
             expected: { if case .spent = $0 { true } else { false } }) { bench in
            let id = try bench.decide(.unlock)
            try bench.pulse()
            try bench.pulse()
            try bench.restart()  // the next start finds it open, and finds the bolt there already
            try bench.complete(id, .succeeded)
        },
        Case(name: "a decision whose outcome forbids it: abandoned at a start, the line rising after",
             expected: { if case .ended(_, .abandoned) = $0 { true } else { false } }) { bench in
            let id = try bench.decide(.unlock)
            try bench.restart()
            try bench.complete(id, .abandoned)
            try bench.pulse()
        },
    ]

    /// Runs every case; `say` gets one line per case. True when each came out as it must.
    public static func run(say: (String) -> Void) -> Bool {
        var passed = true
        for test in cases {
            let verdict: String
            do {
                let unexplained = try outcome(of: test)
                let ok: Bool
                if let expected = test.expected {
                    ok = unexplained.count == 1 && expected(unexplained[0].reason)
                } else {
                    ok = unexplained.isEmpty
                }
                passed = passed && ok
                let said = unexplained.isEmpty ? "no unintended unlock" : unexplained.map(\.description).joined(separator: "; ")
                verdict = (ok ? "ok: " : "WRONG: ") + said
            } catch {
                passed = false
                verdict = "ERROR: \(error)"
            }
            say("self-test: \(test.name) -> \(verdict)")
        }
        return passed
    }

    /// What the audit says about one case.
    static func outcome(of test: Case) throws -> [UnlockRiseAudit.Unexplained] {
        let bench = try Bench()
        defer { bench.tearDown() }
        try test.play(bench)
        return try bench.unexplained()
    }

    /// A lock's store and unlock line in a scratch directory, driven by hand.
    final class Bench {
        let loop = ManualEventLoop()
        let directory: String
        let store: AgentStore
        let journal: StoredDecisionJournal
        let output: any GPIOOutput
        let observer: LineObserver
        /// Only the observer's inotify watch lives on it; it never runs, so the observer
        /// reads the line when told — at the end, long after any pulse ended.
        private let observerLoop = PosixEventLoop()
        private var audit = TortureAudit()
        private var nextID: UInt64 = 1
        static let line = "motor_unlock"
        static let wallBase: Int64 = 1_750_000_000_000_000_000

        init() throws {
            directory = try RuntimeDirectory.makeTemporary(prefix: "latchkey-torture-self-test")
            let loop = self.loop
            store = try AgentStore(directory: directory, fileName: StateStores.lockFile,
                                   wallClock: WallClock { Self.wallBase + loop.now.nanoseconds })
            journal = store.decisionJournal(monotonicNow: { loop.now })
            let chipDirectory = directory + "/chip"
            try FileGPIOChip.create(at: chipDirectory, label: "self-test", lineNames: [Self.line])
            output = try FileGPIOChip(directory: chipDirectory, loop: loop)
                .requestOutput(Self.line, GPIOLineConfig(consumer: "latchkey-torture-self-test"))
            observer = try LineObserver(chipDirectory: chipDirectory, lines: [Self.line], loop: observerLoop)
            audit.noteStart(at: loop.now, wall: wallNow, open: nil)
        }

        var wallNow: Int64 { Self.wallBase + loop.now.nanoseconds }

        func tearDown() {
            try? store.close()
            removeTree(directory)
        }

        /// Records a decision as the lock does before it moves (window 5 s).
        func decide(_ operation: LockOperationType) throws -> DecisionID {
            let id = DecisionID(nextID)
            nextID += 1
            loop.advance(by: .milliseconds(5))
            try journal.record(LockDecision(id: id, operation: operation, source: .remote, decidedAt: loop.now,
                                            deadline: loop.now + .seconds(5)))
            loop.advance(by: .milliseconds(5))  // the fsync
            return id
        }

        func complete(_ id: DecisionID, _ outcome: DecisionOutcome) throws {
            loop.advance(by: .milliseconds(5))
            try journal.complete(id, outcome: outcome)
        }

        /// The unlock line high for `width`, then low (a motor run).
        func pulse(width: Duration = .milliseconds(300)) throws {
            try output.set(true)
            loop.advance(by: width)
            try output.set(false)
            loop.advance(by: .milliseconds(5))
        }

        /// The lock process killed and started again: the start finds what the journal holds
        /// open (or, told so, nothing).
        func restart(findingOpen: Bool = true) throws {
            loop.advance(by: .milliseconds(500))
            let open = findingOpen ? try TortureAudit.read(lockState: directory).open : nil
            audit.noteStart(at: loop.now, wall: wallNow, open: open)
            loop.advance(by: .milliseconds(100))
        }

        /// What the torture would report: one read of the line (a late, coalesced wake-up), then the audit.
        func unexplained() throws -> [UnlockRiseAudit.Unexplained] { try verdict().unexplained }

        func verdict() throws -> UnlockRiseAudit.Verdict {
            observer.sample()
            if let failure = observer.readFailure { throw failure }
            let rises = observer.changes.filter { $0.line == Self.line && $0.high }.map(\.at)
            return audit.judgeRises(rises, try TortureAudit.read(lockState: directory))
        }
    }
}
