import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyManagers
@testable import LatchkeyPhoneAgent
import LatchkeyTransport
import Testing

/// A command's way to the lock alone, over a stand-in link: challenge, durable counter, sealed
/// write, the answer as a value; a refusal never drops the commands behind it; the held
/// challenge's stale refusal sends the command again once; a command with no answer is given up.
struct CommandPipelineTests {
    typealias Outcome = Result<Void, PhoneAgent.CommandError>
    static let configuration = PhoneAgentConfiguration(lockAddress: BluetoothAddress(0xA1), keyID: 4,
                                                       secret: Array(repeating: 3, count: 32))
    static let grant = ChallengeGrant(challenge: Array(repeating: 9, count: 16), lifetimeMilliseconds: 5_000).bytes

    final class Rig {
        let rig = PhoneComponentRig()
        var ready = true
        var reads = 0
        var writes: [[UInt8]] = []
        var drops = 0
        var counter: UInt64 = 0
        /// The phone's store refuses the counter's save (a full or read-only disk).
        var storeRefuses = false
        var staleCache = false
        var outcomes: [Outcome] = []
        lazy var readAhead = ChallengeReadAhead(events: rig.output)
        lazy var session = PhoneLinkSession(secret: CommandPipelineTests.configuration.secret, events: rig.output)
        lazy var pipeline = CommandPipeline(
            configuration: CommandPipelineTests.configuration,
            link: CommandPipeline.Link(
                isReady: { [unowned self] in self.ready }, hasChallenge: { true },
                readChallenge: { [unowned self] in self.reads += 1 }, canWrite: { true },
                write: { [unowned self] in self.writes.append($0) },
                rediscoverIfStale: { [unowned self] _ in self.staleCache },
                drop: { [unowned self] in self.drops += 1 },
                nextCounter: { [unowned self] in self.counter += 1; return self.storeRefuses ? nil : self.counter }),
            readAhead: readAhead, session: session,
            wakeWork: WakeWork(backgroundTasks: BackgroundTasks(), events: rig.output), events: rig.output)

        func submit(_ op: LockOperation) {
            pipeline.append(op, mode: nil) { [unowned self] in self.outcomes.append($0) }
            pipeline.pump()
        }
        func failures() -> [PhoneAgent.CommandError?] {
            outcomes.map { if case .failure(let e) = $0 { e } else { nil } }
        }
    }

    @Test func aCommandReadsItsChallengeSealsWithADurableCounterAndReturnsTheAnswer() {
        let r = Rig()
        r.ready = false
        r.submit(.unlock)
        #expect(r.reads == 0 && !r.pipeline.isIdle)  // waits for the setup
        r.ready = true
        r.pipeline.pump()
        #expect(r.reads == 1 && r.writes.isEmpty)
        r.pipeline.challengeRead(value: CommandPipelineTests.grant, error: nil)
        #expect(r.writes.count == 1 && r.counter == 1)
        #expect(r.rig.sink.events.last?.name == EventKind.phoneCommandSent.name)
        #expect(r.rig.sink.events.last?.field("counter") == "1")
        #expect(r.pipeline.writeAnswered(error: nil) == .answered(.unlock, nil))
        #expect(r.failures() == [nil] && r.pipeline.isIdle && r.session.isOpen)
        #expect(!r.readAhead.beginRead(), "no read ahead while the bolt moves")
        #expect(r.pipeline.writeAnswered(error: nil) == .none)
    }

    @Test func aCommandWhoseCounterCouldNotBeSavedIsNotSent() {
        // Sent, a restart would load the counter before it and send this one again (the
        // household simulator found it with the phone's disk read-only, then a kill).
        let r = Rig()
        r.storeRefuses = true
        r.submit(.unlock)
        r.pipeline.challengeRead(value: CommandPipelineTests.grant, error: nil)
        #expect(r.writes.isEmpty && r.pipeline.isIdle)
        guard case .notDelivered(let why)?? = r.failures().first else { Issue.record("\(r.outcomes)"); return }
        #expect(why.contains("counter could not be saved"))
        r.storeRefuses = false
        r.submit(.unlock)
        r.pipeline.challengeRead(value: CommandPipelineTests.grant, error: nil)
        #expect(r.writes.count == 1 && r.rig.sink.events.last?.field("counter") == "2")
    }

    @Test func aRefusedCommandNeverTakesTheNextOneAlong() {
        let r = Rig()
        r.submit(.arrivalUnlock)
        r.submit(.lock)
        r.pipeline.challengeRead(value: CommandPipelineTests.grant, error: nil)
        #expect(r.pipeline.writeAnswered(error: .att(CommandRejection.busy.attError)) == .answered(.arrivalUnlock, .busy))
        #expect(r.reads == 2, "the next command started at once")
        r.pipeline.challengeRead(value: CommandPipelineTests.grant, error: nil)
        #expect(r.pipeline.writeAnswered(error: nil) == .answered(.lock, nil))
        #expect(r.failures() == [.rejected(.busy), nil] && r.counter == 2)
    }

    @Test func aHeldChallengeRefusedAsStaleSendsTheCommandAgainOnce() {
        let r = Rig()
        _ = r.readAhead.beginRead()
        r.readAhead.answered(value: CommandPipelineTests.grant, error: nil)
        r.submit(.unlock)
        #expect(r.reads == 0 && r.writes.count == 1, "sealed at once with the held challenge")
        let stale = BluetoothError.att(CommandRejection.staleChallenge.attError)
        #expect(r.pipeline.writeAnswered(error: stale) == .sentAgain)
        #expect(r.reads == 1 && r.outcomes.isEmpty)
        r.pipeline.challengeRead(value: CommandPipelineTests.grant, error: nil)
        #expect(r.pipeline.writeAnswered(error: stale) == .answered(.unlock, .staleChallenge))
        #expect(r.failures() == [.rejected(.staleChallenge)])
        #expect(r.rig.names().filter { $0 == EventKind.phoneHeldChallengeRefused.name }.count == 1)
    }

    /// The pipeline bounds the resend itself rather than trusting its coordinator never to
    /// read ahead while a command is under way: a command sent again that meets a held
    /// challenge once more and is refused as stale again fails, it is not sent a third time.
    @Test func aCommandSentAgainIsNeverSentAThirdTimeEvenWithAnotherHeldChallenge() {
        let r = Rig()
        _ = r.readAhead.beginRead()
        r.readAhead.answered(value: CommandPipelineTests.grant, error: nil)
        r.submit(.unlock)
        #expect(r.writes.count == 1)
        #expect(r.readAhead.beginRead(), "a read ahead goes while the command is under way")
        let stale = BluetoothError.att(CommandRejection.staleChallenge.attError)
        #expect(r.pipeline.writeAnswered(error: stale) == .sentAgain)
        #expect(r.reads == 0 && r.writes.count == 1, "the command sent again waits for the read ahead")
        r.readAhead.answered(value: CommandPipelineTests.grant, error: nil)
        r.pipeline.readAheadAnswered()
        #expect(r.reads == 0 && r.writes.count == 2, "sealed with the new held challenge")
        #expect(r.pipeline.writeAnswered(error: stale) == .answered(.unlock, .staleChallenge))
        #expect(r.failures() == [.rejected(.staleChallenge)] && r.pipeline.isIdle)
        #expect(r.rig.names().filter { $0 == EventKind.phoneHeldChallengeRefused.name }.count == 1)
    }

    @Test func aCommandWhileTheReadAheadIsOnItsWayWaitsForIt() {
        let r = Rig()
        _ = r.readAhead.beginRead()
        r.submit(.lock)
        #expect(r.reads == 0 && r.writes.isEmpty)
        r.readAhead.answered(value: CommandPipelineTests.grant, error: nil)
        r.pipeline.readAheadAnswered()
        #expect(r.writes.count == 1)
        #expect(r.rig.sink.events.first { $0.name == EventKind.phoneCommandStarted.name }?.field("challenge") == "ahead")
    }

    @Test func noAnswerWithinTheTimeoutGivesUpAndDropsTheLink() {
        let r = Rig()
        r.submit(.unlock)
        r.rig.loop.advance(by: CommandPipelineTests.configuration.commandTimeout)
        #expect(r.drops == 1 && r.failures().count == 1 && r.pipeline.isIdle)
        #expect(r.rig.names().contains(EventKind.phoneCommandTimeout.name))
    }

    @Test func aStaleCacheOnTheChallengeReadKeepsTheCommandForTheNewSetup() {
        let r = Rig()
        r.staleCache = true
        r.submit(.unlock)
        r.pipeline.challengeRead(value: nil, error: .att(.invalidHandle))
        #expect(r.outcomes.isEmpty && !r.pipeline.isBusy && !r.pipeline.isIdle)
        r.pipeline.pump()
        #expect(r.reads == 2)
        r.pipeline.failAll("link lost")
        #expect(r.failures() == [.notDelivered("link lost")] && r.pipeline.isIdle)
    }
}
