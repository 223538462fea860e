import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLock
@testable import LatchkeyLockAgent
import LatchkeyLockProtocol
import LatchkeySecurity
import LatchkeySim
import LatchkeySimGPIO
import LatchkeyTransport
import Testing

/// `PhoneCommands` on its own, with the real verifier, `LockAuthority` and the lock's other
/// components but no `LockAgent` and no radio: a phone's frame from its bytes to its answer.
@Suite struct PhoneCommandsTests {
    let loop = ManualEventLoop()
    let rig: ControllerRig
    let owner = PhoneKey(id: 1, name: "owner", secret: CommandSealing.newSecret(), role: .admin,
                         mayRequestArrivalUnlock: true)
    let verifier: CommandVerifier
    let links: LinkRegistry<FakeLink>
    let link = FakeLink(5)
    private let heard = PhoneHeard()
    let commands: PhoneCommands<FakeLink>

    init() throws {
        rig = try ControllerRig(loop: loop)
        let (heard, link, loop) = (heard, link, loop)
        let emit: (Event) -> Void = { heard.events.append($0.name) }
        let keys = InMemoryKeyStore([owner])
        verifier = CommandVerifier(keys: keys, challenges: ChallengeIssuer(loop: loop),
                                   lockout: LockoutGuard(store: InMemoryLockoutStore(), loop: loop))
        links = LinkRegistry(loop: loop, unauthenticatedLinkTimeout: .seconds(5), emit: emit, liveLinks: { [link] },
                             disconnect: { _ in heard.disconnected += 1 })
        let audit = AuditTrail(loop: loop, emit: emit, logSecurity: { heard.log.append($0) })
        let arrivals = ArrivalTracker(loop: loop, policy: ArrivalPolicy(), departureGrace: .seconds(5), lock: rig.controller,
                                      emit: emit, logSecurity: { heard.log.append($0) })
        let verifier = verifier
        let pipeline = LockCommandPipeline(controller: rig.controller, outputClock: rig.clock, validity: .seconds(5),
                                       commitStagedCounter: { try verifier.commitCounter() }, emit: emit)
        let links = links
        commands = PhoneCommands(loop: loop, verifier: verifier, links: links, audit: audit, arrivals: arrivals,
                                 pipeline: pipeline, emit: emit,
                                 opened: { session, link in if let session { _ = links.adopt(session, on: link) } },
                                 bind: { link, key in links.bind(link, to: key); heard.bound.append(key) },
                                 setOperatingMode: { raw, _ in heard.modes.append(raw); return nil }, moving: { heard.moving += 1 })
    }

    func frame(_ op: LockOperation, counter: UInt64, secret: [UInt8]? = nil) throws -> [UInt8] {
        let challenge = verifier.challenges.issue(for: link.linkID).challenge
        let mode: UInt8? = op == .setOperatingMode ? OperatingMode.noRemoteLockUnlock.rawValue : nil
        return try CommandSealing.seal(CommandBody(operation: op, commandID: counter, operatingMode: mode), keyID: owner.id,
                                       secret: secret ?? owner.secret, counter: counter, challenge: challenge).bytes
    }

    @Test func aSealedUnlockIsDecidedAndTheLinkIsTheKeys() throws {
        #expect(commands.handle(try frame(.unlock, counter: 1), from: link) == nil)
        #expect(rig.chip.isHigh("latch"))
        #expect(heard.bound == [1])
        #expect(links.sessionKey(on: link.linkID) == 1)
        #expect(heard.events.contains(EventKind.lockSessionOpened.name))
        #expect(heard.events.last == EventKind.lockCommandAccepted.name)
        #expect(heard.moving == 1)
    }

    @Test func theSameFrameTwiceIsRefused() throws {
        let bytes = try frame(.unlock, counter: 1)
        #expect(commands.handle(bytes, from: link) == nil)
        #expect(commands.handle(bytes, from: link) != nil)
        #expect(heard.events.last == EventKind.lockCommandRejected.name)
    }

    @Test func aForgedFrameMovesNothingAndOpensNoSession() throws {
        let rejection = commands.handle(try frame(.unlock, counter: 1, secret: CommandSealing.newSecret()), from: link)
        #expect(rejection != nil)
        #expect(!rig.chip.isHigh("latch"))
        #expect(!links.hasSession(link.linkID))
        #expect(heard.events == [EventKind.lockCommandRejected.name])
    }

    @Test func junkFramesGetTheirLinkDroppedOnce() {
        for _ in 0..<(CommandVerifier.defaultUnauthenticatedFrameLimit + 2) {
            #expect(commands.handle([0x01, 0x02], from: link) != nil)
        }
        #expect(links.isDropping(link.linkID))
        #expect(heard.events.filter { $0 == EventKind.lockLinkDropped.name }.count == 1)
        #expect(heard.log.count == 1, "the stranger's frames are in the audit log once")
    }

    @Test func anArrivalWithNoDepartureSeenIsRefusedAndAudited() throws {
        #expect(commands.handle(try frame(.arrivalUnlock, counter: 1), from: link) == .refusedByPolicy)
        #expect(!rig.chip.isHigh("latch"))
        #expect(heard.events.contains(EventKind.lockArrivalRefused.name))
        guard case .lockOperationError(_, .arrivalNotExpected) = heard.log.first else { Issue.record("\(heard.log)"); return }
    }

    @Test func anAdminsModeChangeIsAnsweredAsTheCoordinatorDid() throws {
        #expect(commands.handle(try frame(.setOperatingMode, counter: 1), from: link) == nil)
        #expect(heard.modes == [OperatingMode.noRemoteLockUnlock.rawValue])
        #expect(heard.bound.isEmpty && !rig.chip.isHigh("latch"))
    }

    @Test func presentBindsTheLinkAndMovesNothing() throws {
        #expect(commands.handle(try frame(.present, counter: 1), from: link) == nil)
        #expect(heard.bound == [1])
        #expect(!rig.chip.isHigh("latch"))
        #expect(heard.events.last == EventKind.lockPhonePresent.name)
    }
}

private final class PhoneHeard {
    var events: [String] = []
    var log: [LockEvent.Kind] = []
    var bound: [UInt32] = []
    var moving = 0
    var disconnected = 0
    var modes: [UInt8?] = []
}
