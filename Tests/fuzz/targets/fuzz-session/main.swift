// libFuzzer target: the link session's two parsers (docs/SECURITY.md, "Sessions") — the
// session-opening command frame through the `CommandVerifier`, and the sealed reply
// (`SealedReply`, `LinkSession.open`). The first input octet picks one (mod 2); the rest is
// its input. Each input gets a fresh lock and a fresh session, so a crash replays from its
// input alone.
//
// Invariants: nothing crashes; a frame opens a session only once its tag verified under a
// key the lock holds, and then the phone's derivation from the same octets opens what the
// lock seals; a frame that opened none never counts towards a lockout; a reply opens at
// most once; a decoded reply re-encodes to its own octets.
import FuzzSupport
import LatchkeyLockProtocol
import LatchkeySecurity
import LatchkeySim
import LatchkeyTransport

/// The fuzzing lock's fixed material, so seeds can carry frames that verify.
enum Material {
    static let user = PhoneKey(id: 1, name: "user", secret: Array(repeating: 0x11, count: 32), role: .user)
    static let revoked = PhoneKey(id: 2, name: "gone", secret: Array(repeating: 0x22, count: 32), role: .user,
                                  revoked: true)
    static let challenge: [UInt8] = Array(0x40..<0x50)
    static let link = LinkID(1)
    /// The session whose replies selector 1 opens: the one a fixed `present` opens.
    static let frame = try! CommandSealing.seal(CommandBody(operation: .present, commandID: 1), keyID: user.id,
                                                secret: user.secret, counter: 9, challenge: challenge)
}

func openSession(_ bytes: [UInt8]) {
    let loop = ManualEventLoop()
    let keys = InMemoryKeyStore([Material.user, Material.revoked])
    keys.counters[Material.user.id] = 5
    let verifier = CommandVerifier(keys: keys, challenges: ChallengeIssuer(loop: loop, random: { Material.challenge }),
                                   lockout: LockoutGuard(store: InMemoryLockoutStore(), loop: loop))
    _ = verifier.challenges.issue(for: Material.link)
    let result = verifier.verify(bytes, on: Material.link)
    guard var lockSide = result.session else {
        if case .failure(let f) = result {
            FuzzDriver.check(!f.counted, "a frame that opened no session counted towards a lockout")
        }
        return
    }
    guard let frame = try? CommandFrame(decoding: bytes), let key = keys.key(id: frame.keyID) else {
        FuzzDriver.check(false, "a session from a frame that does not decode or names no key")
        return
    }
    FuzzDriver.check(!key.revoked, "a revoked key opened a session")
    FuzzDriver.check((try? CommandSealing.open(frame, secret: key.secret)) != nil, "a session without a valid tag")
    var phoneSide = LinkSession(opening: frame, secret: key.secret)
    let probe: [UInt8] = [1, 2, 3, 4]
    let sealed = lockSide.seal(probe, as: .status).bytes
    FuzzDriver.check((try? phoneSide.open(sealed, as: .status)) == probe, "the phone cannot open the lock's reply")
}

func openReply(_ bytes: [UInt8]) {
    if let r = try? SealedReply(decoding: bytes) { FuzzDriver.check(r.bytes == bytes, "reply re-encodes differently") }
    for kind in SealedReply.Kind.allCases {
        var session = LinkSession(opening: Material.frame, secret: Material.user.secret)
        guard (try? session.open(bytes, as: kind)) != nil else { continue }
        FuzzDriver.check((try? session.open(bytes, as: kind)) == nil, "a reply opened twice")
    }
}

func seeds() -> [[UInt8]] {
    var out: [[UInt8]] = []
    // Session-opening frames (selector 0): every operation from the user key, one from the
    // revoked key, one naming no key.
    for op in LockOperation.allCases {
        let b = CommandBody(operation: op, commandID: 7, timeoutSeconds: op == .unlockWithTimeout ? 30 : nil,
                            operatingMode: op == .setOperatingMode ? 3 : nil)
        out.append([0] + (try! CommandSealing.seal(b, keyID: Material.user.id, secret: Material.user.secret, counter: 6,
                                                  challenge: Material.challenge)).bytes)
    }
    let present = CommandBody(operation: .present, commandID: 1)
    out.append([0] + (try! CommandSealing.seal(present, keyID: Material.revoked.id, secret: Material.revoked.secret,
                                              counter: 6, challenge: Material.challenge)).bytes)
    out.append([0] + (try! CommandSealing.seal(present, keyID: 77, secret: Material.user.secret, counter: 6,
                                              challenge: Material.challenge)).bytes)
    // Sealed replies of both kinds from the fixed session (selector 1).
    var lock = LinkSession(opening: Material.frame, secret: Material.user.secret)
    let status = LockStatusFrame(lockState: 1, doorState: 1, operatingMode: 0, actuatorEnabled: true,
                                 lastEventSequence: 3).bytes
    out.append([1] + lock.seal(status, as: .status).bytes)
    var log: [UInt8] = []
    LogTransferRecord.append(sequence: 1, event: [0x01, 0x02, 0x03], to: &log)
    out.append([1] + lock.seal(log, as: .logTransfer).bytes)
    out.append([1] + lock.seal([], as: .status).bytes)
    return out
}

/// libFuzzer's callback (see fuzz-command-frame for why it is `@_cdecl`).
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzDriver.select(data, size, among: [openSession, openReply])
    return 0
}

FuzzDriver.main(seeds: seeds, testOneInput)
