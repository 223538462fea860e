// libFuzzer target: the lock's command and pairing parsers and the command verifier
// (LatchkeyLockProtocol, LatchkeySecurity), and the audit-log event decoder (LatchkeyLock).
// The first input octet picks the parser (mod 5); the rest is its input. Each input gets a
// fresh lock (keys, challenges, lockout state), so a crash replays from its input alone.
//
// Invariants: nothing crashes; a command the verifier accepts named a key that may perform
// it, recorded its counter, and cannot be accepted twice; a decoded frame or event
// re-encodes to its own octets.
import FuzzSupport
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeySecurity
import LatchkeySim
import LatchkeyTransport

/// The fuzzing lock's fixed material, so seeds can carry frames that verify.
enum Material {
    static let user = PhoneKey(id: 1, name: "user", secret: Array(repeating: 0x11, count: 32), role: .user,
                               mayRequestArrivalUnlock: false)
    static let admin = PhoneKey(id: 2, name: "admin", secret: Array(repeating: 0x22, count: 32), role: .admin)
    static let challenge: [UInt8] = Array(0x40..<0x50)
    static let link = LinkID(1)
    static let identity = try! LockIdentity(rawPrivateKey: Array(repeating: 0x33, count: 32))
}

func verify(_ bytes: [UInt8]) {
    let loop = ManualEventLoop()
    let keys = InMemoryKeyStore([Material.user, Material.admin])
    keys.counters[Material.user.id] = 5
    let verifier = CommandVerifier(keys: keys, challenges: ChallengeIssuer(loop: loop, random: { Material.challenge }),
                                   lockout: LockoutGuard(store: InMemoryLockoutStore(), loop: loop))
    _ = verifier.challenges.issue(for: Material.link)
    guard case .success(let command) = verifier.verify(bytes, on: Material.link) else { return }
    FuzzDriver.check(command.key.permits(command.body.operation), "\(command.key.role) key did \(command.body.operation)")
    FuzzDriver.check(keys.lastCounter(keyID: command.key.id) == command.counter, "counter not recorded")
    _ = verifier.challenges.issue(for: Material.link)
    FuzzDriver.check(verifier.verify(bytes, on: Material.link).rejection != nil, "accepted twice")
}

func body(_ bytes: [UInt8]) {
    guard let b = try? CommandBody(decoding: bytes) else { return }
    FuzzDriver.check(b.bytes == bytes, "body re-encodes differently")
}

func pairingRequest(_ bytes: [UInt8]) {
    let loop = ManualEventLoop()
    let responder = PairingResponder(identity: Material.identity, registry: InMemoryKeyStore(), loop: loop)
    responder.open(for: .seconds(60), offer: PairingOffer(role: .user)) { _ in }
    if let r = try? PairingRequest(decoding: bytes) { FuzzDriver.check(r.bytes == bytes, "request re-encodes differently") }
    guard case .success = responder.handleRequest(bytes, on: Material.link) else { return }
    let response = responder.response(for: Material.link) ?? []
    FuzzDriver.check((try? PairingResponse(decoding: response)) != nil, "the lock's own response does not decode")
}

func pairingResponse(_ bytes: [UInt8]) {
    if let r = try? PairingResponse(decoding: bytes) { FuzzDriver.check(r.bytes == bytes, "response re-encodes differently") }
    _ = try? PairingInitiator(name: "fuzz").complete(bytes)
}

func event(_ bytes: [UInt8]) {
    guard let e = try? LockEvent(decoding: bytes) else { return }
    FuzzDriver.check(e.encoded == bytes, "event re-encodes differently")
}

func seeds() -> [[UInt8]] {
    var out: [[UInt8]] = []
    // Valid sealed commands of every operation, from both keys (selector 0).
    for op in LockOperation.allCases {
        for key in [Material.user, Material.admin] {
            let b = CommandBody(operation: op, commandID: 7, timeoutSeconds: op == .unlockWithTimeout ? 30 : nil,
                                operatingMode: op == .setOperatingMode ? 3 : nil)
            let frame = try! CommandSealing.seal(b, keyID: key.id, secret: key.secret, counter: 6,
                                                 challenge: Material.challenge)
            out.append([0] + frame.bytes)
            out.append([1] + b.bytes)
        }
    }
    out.append([2] + PairingInitiator(name: "seed phone").request.bytes)
    // A genuine response from the fuzzing lock (selector 3).
    let responder = PairingResponder(identity: Material.identity, registry: InMemoryKeyStore(), loop: ManualEventLoop())
    responder.open(for: .seconds(60), offer: PairingOffer(role: .admin)) { _ in }
    _ = responder.handleRequest(PairingInitiator(name: "p").request.bytes, on: Material.link)
    out.append([3] + (responder.response(for: Material.link) ?? []))
    // Audit-log events of every kind (selector 4).
    let events: [LockEvent.Kind] = [
        .lockOperation(LockOperationRecord(operation: .unlock, source: .remote, who: KeyID(1), decision: DecisionID(4))),
        .lockOperationError(LockOperationRecord(operation: .unlock, source: .remote, who: KeyID(1)), .invalidCredential),
        .doorLockAlarm(.wrongCodeEntryLimit), .doorStateChange(.open),
        .lockUserChange(KeyChangeRecord(.add, source: .remote, key: KeyID(3))),
        .lockOperationError(LockOperationRecord(operation: nil, source: .remote, who: KeyID(2)), .disabledUserDenied),
        .operatingModeChange(OperatingModeChangeRecord(.passage, previous: .normal, source: .remote, who: KeyID(1))),
        .suspectedRelay(SuspectedRelayRecord(.tooSlow, who: KeyID(1), elapsed: .milliseconds(212), interval: .milliseconds(30))),
    ]
    for kind in events {
        out.append([4] + LockEvent(kind: kind, time: Instant(nanoseconds: 1_000_000), lockStateBefore: .locked,
                                   lockStateAfter: .locked, doorState: .closed).encoded)
    }
    return out
}

/// libFuzzer's callback. Its C name also satisfies libFuzzer's own `main` object, which the
/// link pulls in even though `main.swift`'s main runs (SwiftPM points `main` at it).
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzDriver.bytes(data, size)
    guard let selector = input.first else { return 0 }
    let rest = Array(input.dropFirst())
    switch selector % 5 {
    case 0: verify(rest)
    case 1: body(rest)
    case 2: pairingRequest(rest)
    case 3: pairingResponse(rest)
    default: event(rest)
    }
    return 0
}

FuzzDriver.main(seeds: seeds, testOneInput)
