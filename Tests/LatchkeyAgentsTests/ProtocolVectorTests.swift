import Foundation
import LatchkeyATT
import LatchkeyGATT
import LatchkeyLock
import LatchkeyLockProtocol
@testable import LatchkeySecurity
import LatchkeySim
import LatchkeyTransport
import Testing

/// docs/PROTOCOL.md's test vectors (Tests/protocol/vectors.json, written by a client built
/// from the document alone) against the lock's and the phone's own code, in both directions:
/// from the inputs the code builds exactly these octets, and from these octets it reads
/// exactly these values, answers exactly these errors.
/// Both directions: a command frame sealed by the phone's code with the vector's nonce is the
/// vector's octets, and the vector's octets open (and pass the lock's whole check).
/// ChaCha20-Poly1305 is deterministic for a key, nonce, associated data and plaintext, so a
/// frame that opens to the body under that header is the only frame the seal could write.
struct ProtocolVectorTests {
    let v = ProtocolVectors.load()
    let loop = ManualEventLoop()
    let link = LinkID(1)

    @Test func theServiceUUIDsAreTheDocumented() {
        let service = v.object("service")
        let pairs: [(String, BluetoothUUID)] = [
            ("service", LockServiceUUID.service), ("lock_state", LockServiceUUID.lockState),
            ("lock_control", LockServiceUUID.lockControl), ("challenge", LockServiceUUID.challenge),
            ("data_transfer", LockServiceUUID.dataTransfer), ("pairing", LockServiceUUID.pairing),
        ]
        for (name, uuid) in pairs {
            let hex = ProtocolVectors.hex(uuid.littleEndianBytes.reversed())
            #expect(service.string(name).replacingOccurrences(of: "-", with: "") == hex, "\(name)")
        }
    }

    @Test func theChallengeGrantIsTheDocumentedOctets() throws {
        let c = v.object("command")
        let challenge = c.octets("challenge")
        let grant = c.object("challenge_grant")
        let issuer = ChallengeIssuer(loop: loop, random: { challenge })
        #expect(issuer.issue(for: link).bytes == grant.octets("octets"))
        let decoded = try ChallengeGrant(decoding: grant.octets("octets"))
        #expect(decoded.challenge == challenge && Int(decoded.lifetimeMilliseconds) == grant.int("lifetime_ms"))
    }

    /// Each operation's frame: built from its inputs, opened and accepted by the verifier,
    /// and the session it opens seals the documented first reply.
    @Test func everyCommandFrameIsBuiltReadAndAcceptedAsDocumented() throws {
        let c = v.object("command")
        let secret = c.octets("key_secret"), challenge = c.octets("challenge")
        let keyID = UInt32(c.int("key_id"))
        let statusPayload = v.object("session").object("status").octets("payload")
        let frames = c.array("frames")
        #expect(frames.count == LockOperation.allCases.count)
        for f in frames {
            let op = try #require(LockOperation(rawValue: UInt8(f.int("operation_code"))))
            #expect("\(op)" == f.string("operation"))
            let body = CommandBody(operation: op, commandID: UInt64(f.int("command_id")),
                                   timeoutSeconds: f.optionalInt("timeout_s").map { UInt16($0) },
                                   operatingMode: f.optionalInt("operating_mode").map { UInt8($0) })
            #expect(body.bytes == f.octets("body"), "\(op) body")
            #expect(try CommandBody(decoding: f.octets("body")) == body)

            let octets = f.octets("frame")
            let built = CommandFrame(keyID: keyID, counter: UInt64(f.int("counter")), challenge: challenge,
                                     nonce: f.octets("nonce"), sealed: Array(octets[CommandFrame.headerLength...]))
            #expect(built.associatedData == f.octets("associated_data"), "\(op) header")
            #expect(built.bytes == octets)
            let frame = try CommandFrame(decoding: octets)
            #expect(frame == built)
            #expect(try CommandSealing.open(frame, secret: secret) == f.octets("body"), "\(op) opens")
            // And the other way: the phone's sealing, given the vector's nonce, makes these octets.
            let sealed = try CommandSealing.seal(body, keyID: keyID, secret: secret, counter: UInt64(f.int("counter")),
                                                 challenge: challenge, nonce: f.octets("nonce"))
            #expect(sealed.bytes == octets, "\(op) sealed by the phone's code")

            // The lock's whole check, with the vector's challenge issued on the link.
            let key = PhoneKey(id: keyID, name: "vector", secret: secret, role: .admin, mayRequestArrivalUnlock: true)
            let verifier = CommandVerifier(keys: InMemoryKeyStore([key]), challenges: ChallengeIssuer(loop: loop, random: { challenge }),
                                           lockout: LockoutGuard(store: InMemoryLockoutStore(), policy: LockoutPolicy(), loop: loop))
            _ = verifier.challenges.issue(for: link)
            let verified = try verifier.verify(octets, on: link).get()
            #expect(verified.body == body && verified.counter == UInt64(f.int("counter")))

            var lockSide = verified.session
            #expect(lockSide.seal(statusPayload, as: .status).bytes == f.octets("first_status_reply"), "\(op) session")
            var phoneSide = LinkSession(opening: built, secret: secret)
            #expect(try phoneSide.open(f.octets("first_status_reply"), as: .status) == statusPayload)
        }
    }

    @Test func sealedRepliesStatusLogAndChunksAreTheDocumentedOctets() throws {
        let c = v.object("command"), s = v.object("session")
        let present = try #require(c.array("frames").first { $0.string("operation") == s.string("opened_by") })
        let frame = try CommandFrame(decoding: present.octets("frame"))
        var lock = LinkSession(opening: frame, secret: c.octets("key_secret"))
        var phone = lock

        let st = s.object("status")
        let status = LockStatusFrame(lockState: UInt8(st.int("lock_state")), doorState: UInt8(st.int("door_state")),
                                     operatingMode: UInt8(st.int("operating_mode")), actuatorEnabled: st.bool("actuator_enabled"),
                                     lastEventSequence: UInt32(st.int("last_event_sequence")))
        #expect(status.bytes == st.octets("payload"))
        #expect(try LockStatusFrame(decoding: st.octets("payload")) == status)
        let statusReply = lock.seal(status.bytes, as: .status)
        #expect(Int(statusReply.sequence) == st.int("sequence") && statusReply.bytes == st.octets("reply"))
        #expect(try phone.open(st.octets("reply"), as: .status) == status.bytes)

        let lr = s.object("log_request")
        let request = LogRequest(fromSequence: UInt32(lr.int("from_sequence")), maximumCount: UInt16(lr.int("maximum_count")))
        #expect(request.bytes == lr.octets("octets"))
        #expect(try LogRequest(decoding: lr.octets("octets")) == request)

        let log = s.object("log")
        var payload: [UInt8] = []
        for e in log.array("events") {
            let event = try LockEvent(decoding: e.octets("octets"))
            #expect(event.encoded == e.octets("octets"))
            #expect(event.keyID == KeyID(UInt32(e.int("key_id"))))
            #expect(event.lockStateBefore.rawValue == UInt8(e.int("lock_state_before")))
            #expect(event.lockStateAfter.rawValue == UInt8(e.int("lock_state_after")))
            #expect(event.doorState.rawValue == UInt8(e.int("door_state")))
            #expect(event.time == Instant(nanoseconds: Int64(e.int("time_ns"))))
            switch (e.int("kind"), event.kind) {
            case (0, .lockOperation(let r)):
                #expect(r.operation?.rawValue == UInt8(e.int("operation")) && r.source.rawValue == UInt8(e.int("source")))
                #expect(r.decision == DecisionID(UInt64(e.int("decision"))))
            case (1, .lockOperationError(let r, let error)):
                #expect(r.operation == nil && e.int("operation") == 0xFF && r.source.rawValue == UInt8(e.int("source")))
                #expect(error.rawValue == UInt8(e.int("code")) && r.decision == nil)
            default:
                Issue.record("event \(e.int("sequence")) is \(event.kind), not kind \(e.int("kind"))")
            }
            LogTransferRecord.append(sequence: UInt32(e.int("sequence")), event: event.encoded, to: &payload)
        }
        #expect(payload == log.octets("payload"))
        let split = try #require(LogTransferRecord.split(log.octets("payload")))
        #expect(split.map { Int($0.sequence) } == log.array("events").map { $0.int("sequence") })

        let logReply = lock.seal(payload, as: .logTransfer)
        #expect(Int(logReply.sequence) == log.int("sequence") && logReply.bytes == log.octets("reply"))
        #expect(try phone.open(log.octets("reply"), as: .logTransfer) == payload)

        var sender = ChunkedSender(value: log.octets("reply"), mtu: log.int("mtu"))
        var sent: [[UInt8]] = []
        while let chunk = sender.peek() { sent.append(chunk); sender.advance() }
        #expect(sent == log.strings("notifications").map(ProtocolVectors.octets))
        var assembler = ChunkAssembler(maximumSize: SealedReply.headerLength + SealedReply.maximumPayloadLength + SealedReply.tagLength)
        var whole: [UInt8]?
        for chunk in sent { whole = try assembler.receive(chunk) }
        #expect(whole == log.octets("reply"))
    }

    @Test func pairingBothSidesDeriveTheDocumentedKeyMACAndCode() throws {
        let p = v.object("pairing")
        let phone = try LockIdentity(rawPrivateKey: p.octets("phone_ephemeral_private"))
        let identity = try LockIdentity(rawPrivateKey: p.octets("lock_identity_private"))
        let lockEphemeral = try LockIdentity(rawPrivateKey: p.octets("lock_ephemeral_private"))
        #expect(phone.publicKey == p.octets("phone_ephemeral_public"))
        #expect(identity.publicKey == p.octets("lock_identity_public"))
        #expect(lockEphemeral.publicKey == p.octets("lock_ephemeral_public"))

        let request = PairingRequest(phonePublicKey: phone.publicKey, nonce: p.octets("phone_nonce"), name: p.string("name"))
        #expect(request.bytes == p.octets("request"))
        #expect(try PairingRequest(decoding: p.octets("request")) == request)

        let grant = PairingKeyAgreement.Grant(keyID: UInt32(p.int("key_id")), role: p.int("role") == 1 ? .admin : .user,
                                              mayRequestArrivalUnlock: p.int("flags") & 1 == 1)
        let publics = PairingKeyAgreement.Publics(lockIdentity: identity.publicKey, phonePublic: phone.publicKey,
                                                  phoneNonce: p.octets("phone_nonce"), lockPublic: lockEphemeral.publicKey,
                                                  lockNonce: p.octets("lock_nonce"))
        let transcript = PairingKeyAgreement.transcript(publics, grant: grant, name: p.string("name"))
        #expect(transcript == p.octets("transcript"))

        // The lock's side (its two private keys with the phone's public) and the phone's.
        let lockEphShared = try lockEphemeral.privateKey.sharedSecretFromKeyAgreement(with: phone.privateKey.publicKey)
        let lockIdShared = try identity.privateKey.sharedSecretFromKeyAgreement(with: phone.privateKey.publicKey)
        let phoneEphShared = try phone.privateKey.sharedSecretFromKeyAgreement(with: lockEphemeral.privateKey.publicKey)
        let phoneIdShared = try phone.privateKey.sharedSecretFromKeyAgreement(with: identity.privateKey.publicKey)
        #expect(lockEphShared.withUnsafeBytes { Array($0) } == p.octets("ephemeral_shared"))
        #expect(lockIdShared.withUnsafeBytes { Array($0) } == p.octets("identity_shared"))
        let lockDerived = try PairingKeyAgreement.derive(ephemeralShared: lockEphShared, identityShared: lockIdShared,
                                                         transcript: transcript)
        let phoneDerived = try PairingKeyAgreement.derive(ephemeralShared: phoneEphShared, identityShared: phoneIdShared,
                                                          transcript: transcript)
        #expect(lockDerived == phoneDerived)
        #expect(lockDerived.secret == p.octets("key"))
        #expect(lockDerived.lockConfirmation == p.octets("lock_confirmation"))
        #expect(lockDerived.comparisonCode == p.string("code"))

        let response = PairingResponse(lockIdentityKey: identity.publicKey, lockPublicKey: lockEphemeral.publicKey,
                                       nonce: p.octets("lock_nonce"), keyID: grant.keyID, role: grant.roleByte,
                                       flags: grant.flags, confirmation: lockDerived.lockConfirmation)
        #expect(response.bytes == p.octets("response"))
        #expect(try PairingResponse(decoding: p.octets("response")) == response)

        #expect(PairingKeyAgreement.fingerprintOctets(of: identity.publicKey) == p.octets("fingerprint"))
        #expect(identity.fingerprint == p.string("fingerprint_text"))
        let beacon = PairingBeacon(fingerprint: p.octets("fingerprint"))
        #expect(beacon.manufacturerData == p.octets("beacon"))
        #expect(PairingBeacon(manufacturerData: p.octets("beacon")) == beacon)
    }

    /// Every refused frame gets the documented answer from the verifier, set up as the
    /// vectors say (its keys, their counters, the challenge issued on the link).
    @Test func everyRefusedCommandGetsTheDocumentedAnswer() throws {
        let e = v.object("errors").object("commands")
        for f in e.array("frames") {
            let store = InMemoryKeyStore()
            for k in e.array("keys") {
                let id = UInt32(k.int("id"))
                store.keys[id] = PhoneKey(id: id, name: "vector", secret: k.octets("secret"),
                                          role: k.string("role") == "admin" ? .admin : .user, revoked: k.bool("revoked"))
                if k.int("last_counter") > 0 { try store.recordCounter(UInt64(k.int("last_counter")), keyID: id) }
            }
            let issued = f.optionalOctets("issued_challenge")
            let verifier = CommandVerifier(keys: store, challenges: ChallengeIssuer(loop: loop, random: { issued ?? [] }),
                                           lockout: LockoutGuard(store: InMemoryLockoutStore(), policy: LockoutPolicy(), loop: loop))
            if issued != nil { _ = verifier.challenges.issue(for: link) }
            let answer = verifier.verify(f.octets("frame"), on: link).rejection
            #expect(answer?.rawValue == f.optionalInt("answer").map { UInt8($0) }, "\(f.string("name")): \(f.string("why"))")
        }
    }

    @Test func everyRefusedReplyIsRefusedByThePhoneAsDocumented() throws {
        let c = v.object("command"), s = v.object("session")
        let present = try #require(c.array("frames").first { $0.string("operation") == s.string("opened_by") })
        let opening = LinkSession(opening: try CommandFrame(decoding: present.octets("frame")), secret: c.octets("key_secret"))
        for r in v.object("errors").array("replies") {
            var phone = opening
            for earlier in r.strings("after").map(ProtocolVectors.octets) {
                _ = try phone.open(earlier, as: try #require(SealedReply.Kind(rawValue: earlier[1])))
            }
            let kind = try #require(SealedReply.Kind(rawValue: UInt8(r.int("kind"))))
            do {
                _ = try phone.open(r.octets("reply"), as: kind)
                Issue.record("\(r.string("name")) opened")
            } catch {
                let name = switch error {
                case .malformed: "malformed"
                case .wrongKind: "wrongKind"
                case .authenticationFailed: "authenticationFailed"
                case .replayed: "replayed"
                }
                #expect(name == r.string("error"), "\(r.string("name"))")
            }
        }
    }

    @Test func refusedPairingFramesGetTheDocumentedAnswers() throws {
        let p = v.object("pairing"), e = v.object("errors").object("pairing")
        let identity = try LockIdentity(rawPrivateKey: p.octets("lock_identity_private"))
        for r in e.array("requests") {
            let responder = PairingResponder(identity: identity, registry: InMemoryKeyStore(), loop: loop)
            #expect(responder.open(for: .seconds(60), offer: PairingOffer(role: .user), done: { _ in }))
            let answer = responder.handleRequest(r.octets("octets"), on: link)
            #expect(answer.failureCode == UInt8(r.int("answer")), "\(r.string("name"))")
            #expect(responder.pending == nil)
        }
        // The good request, for contrast: the same responder takes it.
        let responder = PairingResponder(identity: identity, registry: InMemoryKeyStore(), loop: loop)
        #expect(responder.open(for: .seconds(60), offer: PairingOffer(role: .user), done: { _ in }))
        #expect(responder.handleRequest(p.octets("request"), on: link).failureCode == nil)

        let phone = try LockIdentity(rawPrivateKey: p.octets("phone_ephemeral_private"))
        for r in e.array("responses") {
            let octets = r.octets("octets")
            let initiator = try PairingInitiator(name: p.string("name"), expectedFingerprint: p.string("fingerprint_text"))
            let failure: PairingFailure?
            do { _ = try initiator.complete(octets); failure = nil } catch { failure = error }
            switch r.string("error") {
            case "malformed":
                guard case .malformedResponse = failure else { Issue.record("\(r.string("name")): \(String(describing: failure))"); continue }
            case "unexpectedLock":
                guard case .unexpectedLock = failure else { Issue.record("\(r.string("name")): \(String(describing: failure))"); continue }
            default:
                // The initiator's ephemeral key is its own; the phone's check with the vector's.
                let response = try PairingResponse(decoding: octets)
                let lockEphemeral = try LockIdentity(rawPrivateKey: p.octets("lock_ephemeral_private"))
                let identityKey = try LockIdentity(rawPrivateKey: p.octets("lock_identity_private"))
                #expect(response.lockPublicKey == lockEphemeral.publicKey && response.lockIdentityKey == identityKey.publicKey)
                let grant = PairingKeyAgreement.Grant(keyID: response.keyID, role: response.role == 1 ? .admin : .user,
                                                      mayRequestArrivalUnlock: response.flags & 1 == 1)
                let transcript = PairingKeyAgreement.transcript(
                    PairingKeyAgreement.Publics(lockIdentity: response.lockIdentityKey, phonePublic: phone.publicKey,
                                                phoneNonce: p.octets("phone_nonce"), lockPublic: response.lockPublicKey,
                                                lockNonce: response.nonce), grant: grant, name: p.string("name"))
                let derived = try PairingKeyAgreement.derive(
                    ephemeralShared: try phone.privateKey.sharedSecretFromKeyAgreement(with: lockEphemeral.privateKey.publicKey),
                    identityShared: try phone.privateKey.sharedSecretFromKeyAgreement(with: identityKey.privateKey.publicKey),
                    transcript: transcript)
                #expect(r.string("error") == "confirmationFailed")
                #expect(derived.lockConfirmation != response.confirmation, "\(r.string("name"))")
            }
        }
    }
}

extension Result where Success == PendingPairing, Failure == CommandRejection {
    fileprivate var failureCode: UInt8? { if case .failure(let r) = self { r.rawValue } else { nil } }
}

/// Tests/protocol/vectors.json, read with Foundation's JSON parser.
struct ProtocolVectors {
    let root: [String: Any]

    static func load() -> ProtocolVectors {
        // Tests/LatchkeyAgentsTests/ThisFile.swift → Tests/protocol/vectors.json
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("protocol/vectors.json")
        guard let data = try? Data(contentsOf: path),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            fatalError("cannot read \(path.path)")
        }
        return ProtocolVectors(root: object)
    }

    func object(_ key: String) -> ProtocolVectors { ProtocolVectors(root: root[key] as? [String: Any] ?? [:]) }
    func array(_ key: String) -> [ProtocolVectors] { (root[key] as? [[String: Any]] ?? []).map(ProtocolVectors.init) }
    func string(_ key: String) -> String { root[key] as? String ?? "<\(key) missing>" }
    func strings(_ key: String) -> [String] { root[key] as? [String] ?? [] }
    func int(_ key: String) -> Int { (root[key] as? NSNumber)?.intValue ?? -1 }
    func optionalInt(_ key: String) -> Int? { (root[key] as? NSNumber)?.intValue }
    func bool(_ key: String) -> Bool { root[key] as? Bool ?? false }
    func octets(_ key: String) -> [UInt8] { Self.octets(string(key)) }
    func optionalOctets(_ key: String) -> [UInt8]? { (root[key] as? String).map(Self.octets) }

    static func octets(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count - 1, by: 2).map {
            UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16) ?? 0
        }
    }

    static func hex(_ octets: [UInt8]) -> String { octets.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() }
}
