import Foundation
@testable import LatchkeyHousehold
import LatchkeyTransport
import Testing

/// The agents' random octets in the simulator come from its seed (`RandomSource.seeded`, one
/// stream per agent): the same seed gives the same challenges on the air, another seed others.
@Suite struct HouseholdRandomTests {
    /// The challenges the lock gave the owner's phone (its Read Responses of a grant's size: 16
    /// octets and a 2-octet lifetime) in a world from `seed`, over the phone's link and two taps.
    static func challenges(seed: UInt64) throws -> [[UInt8]] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("household-random-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let world = try HouseholdWorld(seed: seed, directory: directory, judge: HouseholdJudge(), trace: Trace())
        var seen: [[UInt8]] = []
        let kept = world.air.sniffer
        world.air.sniffer = { from, to, pdu in
            kept?(from, to, pdu)
            if from == HouseholdWorld.lockAddress, to == HouseholdWorld.ownerAddress, pdu.count == 19, pdu[0] == 0x0B {
                seen.append(Array(pdu[1...16]))
            }
        }
        world.startLock()
        world.startPhone(guest: false)
        world.loop.advance(by: .seconds(5))
        world.tap(.unlock, guest: false)
        world.loop.advance(by: .seconds(5))
        world.tap(.lock, guest: false)
        world.loop.advance(by: .seconds(5))
        world.killLock(powerCut: false)
        world.killPhone(guest: false)
        return seen
    }

    @Test func theSameSeedDrawsTheSameChallenges() throws {
        let first = try Self.challenges(seed: 4242), second = try Self.challenges(seed: 4242)
        #expect(first.count >= 2, "the taps read challenges")
        #expect(first == second)
    }

    @Test func anotherSeedDrawsOtherChallenges() throws {
        let first = try Self.challenges(seed: 4242), other = try Self.challenges(seed: 4243)
        #expect(!first.isEmpty && !other.isEmpty)
        #expect(Set(first).isDisjoint(with: Set(other)))
    }
}
