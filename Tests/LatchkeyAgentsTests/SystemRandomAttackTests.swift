import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyTransport
import Testing

/// The agents' random octets (challenges, command nonces) come from the system's generator
/// unless the simulator or a test injects a seeded source (`RandomSource`). Attacked here:
/// two worlds built the same way with the defaults, on airs with the same seed, must still
/// put different challenges and nonces on the air — else an attacker who rebuilt the setup
/// could predict them.
struct SystemRandomAttackTests {
    /// What crossed the air while the phone sent `commands` commands: the lock's challenges
    /// (its Read Responses carrying a grant) and the nonces of the phone's command frames
    /// (its Write Requests to the lock carrying a frame).
    static func drawn(commands: Int) throws -> (challenges: [[UInt8]], nonces: [[UInt8]]) {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 1)
        var challenges: [[UInt8]] = [], nonces: [[UInt8]] = []
        w.air.sniffer = { from, _, pdu in
            if from == w.lockAddress, pdu.first == 0x0B, let grant = try? ChallengeGrant(decoding: Array(pdu.dropFirst())) {
                challenges.append(grant.challenge)
            }
            if from == w.phoneAddress, pdu.count > 3, pdu[0] == 0x12,
               let frame = try? CommandFrame(decoding: Array(pdu[3...])) {
                nonces.append(frame.nonce)
            }
        }
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockPhonePresent.name) }, limit: .seconds(5)))
        for n in 0..<commands { #expect(w.command(n % 2 == 0 ? .unlock : .lock) == nil) }
        return (challenges, nonces)
    }

    @Test func twoAgentsBuiltWithTheDefaultsDrawDifferentChallengesAndNonces() throws {
        let first = try Self.drawn(commands: 3), second = try Self.drawn(commands: 3)
        #expect(first.challenges.count >= 3 && second.challenges.count >= 3)
        #expect(first.nonces.count >= 3 && second.nonces.count >= 3, "the commands, and the `present` each link sends")
        #expect(Set(first.challenges).isDisjoint(with: Set(second.challenges)))
        #expect(Set(first.nonces).isDisjoint(with: Set(second.nonces)))
        #expect(Set(first.challenges).count == first.challenges.count, "no challenge repeats within one life either")
    }
}
