import LatchkeyEvents
import LatchkeyLock
@testable import LatchkeyLockAgent
import LatchkeyLockProtocol
import LatchkeySecurity
import LatchkeySim
import LatchkeySimGPIO
import LatchkeyTransport
import Testing

/// `LockCommandPipeline` on its own, over a lock controller on simulated GPIO: what it decided
/// comes back as a value, the counter is committed with the decision, the latency is measured.
@Suite struct LockCommandPipelineTests {
    let loop = ManualEventLoop()
    let chip: SimulatedGPIOChip
    let controller: LockController
    let journal: InMemoryDecisionJournal
    let authority: LockAuthority
    private let counter = CounterCommits()
    private let events = EmittedNames()
    let pipeline: LockCommandPipeline

    init() throws {
        let rig = try ControllerRig(loop: loop)
        (chip, controller, journal) = (rig.chip, rig.controller, rig.journal)
        authority = LockAuthority(keys: InMemoryKeyStore([
            PhoneKey(id: 2, name: "member", secret: CommandSealing.newSecret(), role: .user),
        ]), lockout: LockoutGuard(store: InMemoryLockoutStore(), loop: loop))
        let (counter, events) = (counter, events)
        pipeline = LockCommandPipeline(controller: controller, outputClock: rig.clock, validity: .seconds(30),
                                   commitStagedCounter: { try counter.commit() }, emit: { events.names.append($0.name) })
    }

    func allowed(_ operation: LockOperation, via entry: Entry = .bluetooth) throws -> Authorization {
        try authority.authorize(operation, keyID: 2, via: entry).get()
    }

    @Test func anUnlockComesBackDecidedWithItsLatency() throws {
        let outcome = pipeline.submit(try allowed(.unlock), counter: KeyCounter(keyID: 2, counter: 1), received: loop.now)
        guard case .accepted(let accepted) = outcome else { Issue.record("refused: \(outcome)"); return }
        let held = journal.entries.compactMap { if case .recorded(let decision) = $0 { decision.id } else { nil } }
        #expect(accepted.decision != nil)
        #expect(held == [accepted.decision].compactMap { $0 }, "the outcome names the decision the journal holds")
        #expect(accepted.actuatorLatency == .zero, "the latch rose in the same instant on the manual loop")
        #expect(chip.isHigh("latch"))
        #expect(pipeline.commandLatencies == [0])
        #expect(counter.commits == 1)
    }

    @Test func aRefusalComesBackAsTheLocksReasonAndDecidesNothing() throws {
        controller.setOperatingMode(.noRemoteLockUnlock, source: .auto)
        let outcome = pipeline.submit(try allowed(.unlock), counter: KeyCounter(keyID: 2, counter: 1), received: loop.now)
        #expect(outcome == .refused(.restricted))
        #expect(journal.entries.isEmpty, "a refusal journals nothing")
        #expect(!chip.isHigh("latch"))
        #expect(pipeline.commandLatencies.isEmpty)
        #expect(counter.commits == 0, "the caller commits after a refusal (`LockAgent`)")
    }

    @Test func anUnlockWhoseCounterCannotBeStoredIsAStorageFailure() throws {
        counter.failing = true
        let outcome = pipeline.submit(try allowed(.unlock), counter: KeyCounter(keyID: 2, counter: 1), received: loop.now)
        #expect(outcome == .counterNotStored)
        #expect(events.names == [EventKind.lockCommandRefused.name])
        #expect(pipeline.commandLatencies.isEmpty)
    }

    @Test func aLockMovesWhateverTheStoreSaysOfItsCounter() throws {
        _ = pipeline.submit(try allowed(.unlock), counter: KeyCounter(keyID: 2, counter: 1), received: loop.now)
        loop.advance(by: .seconds(10))
        counter.failing = true
        let outcome = pipeline.submit(try allowed(.lock), counter: KeyCounter(keyID: 2, counter: 2), received: loop.now)
        guard case .accepted = outcome else { Issue.record("refused: \(outcome)"); return }
        #expect(events.names == [EventKind.lockCounterWriteFailed.name])
    }

    /// The journal refuses writes (a full disk) and the latch's line cannot be set: the lock the
    /// phone asked for never happened, so it is refused, never accepted as done.
    @Test func aLockThatFailsAtOnceWhileTheJournalRefusesIsRefused() throws {
        _ = pipeline.submit(try allowed(.unlock), counter: KeyCounter(keyID: 2, counter: 1), received: loop.now)
        loop.run()
        try #require(controller.lockState == .unlocked)
        journal.recordFailure = .init("disk full")
        chip.failWrites(to: "latch")
        let outcome = pipeline.submit(try allowed(.lock), counter: KeyCounter(keyID: 2, counter: 2), received: loop.now)
        #expect(outcome == .refused(.hardwareFault), "the bolt did not lock")
        #expect(controller.lockState == .notFullyLocked)
    }

    @Test func aBridgesCommandHasNoCounterAndNoLatency() throws {
        let outcome = pipeline.submit(try allowed(.unlock, via: .bridge))
        guard case .accepted(let accepted) = outcome else { Issue.record("refused: \(outcome)"); return }
        #expect(accepted.decision != nil)
        #expect(accepted.actuatorLatency == nil)
        #expect(pipeline.commandLatencies.isEmpty)
        #expect(counter.commits == 0)
    }
}

private final class CounterCommits {
    var commits = 0
    var failing = false
    struct Refused: Error {}
    func commit() throws {
        if failing { throw Refused() }
        commits += 1
    }
}

private final class EmittedNames { var names: [String] = [] }
