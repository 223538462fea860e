import LatchkeyLockProtocol
import LatchkeySim
import LatchkeyTestKit
import LatchkeyTransport

/// A relay attacker while the owner is away: the owner's phone is somewhere else (a second
/// air, out of the door's range), next to the relay's phone-side radio, which poses as the
/// lock; the relay's door-side radio is beside the door and carries every PDU `latency` later
/// each way. The owner's phone, restarted there, is told it is arriving (a geofence the
/// attacker tripped): its arrival unlock reaches the lock only through the relay, slower than
/// the arrival bound allows, and must be refused.
final class HouseholdRelay {
    static let doorAddress = BluetoothAddress(0xBADBAD000002)
    let street: SimulatedAir
    let attacker: RelayAttacker

    init(world: HouseholdWorld, seed: UInt64, latency: Duration) throws {
        street = SimulatedAir(loop: world.loop, seed: seed)
        _ = street.addDevice(address: HouseholdWorld.ownerAddress, position: 2)
        attacker = try RelayAttacker(phoneAir: street, doorAir: world.air, lockAddress: HouseholdWorld.lockAddress,
                                     doorAddress: Self.doorAddress, phoneSidePosition: 0, doorSidePosition: 1,
                                     advertisement: Advertisement(data: AdvertisingData(
                                         serviceUUIDs: [LockServiceUUID.service], localName: "Latchkey"),
                                                                  interval: .milliseconds(20)),
                                     latency: latency, doorInterval: ConnectionParameters.kernelDefault.connectionInterval)
    }

    var phoneTransport: SimulatedController { street.device(HouseholdWorld.ownerAddress)! }

    /// Both radios off: the door-side one leaves the door's air, the street is forgotten.
    func tearDown(world: HouseholdWorld) {
        attacker.phoneSide.powerOff()
        phoneTransport.powerOff()
        world.air.removeDevice(Self.doorAddress)
    }
}

extension HouseholdWorld {
    /// The relay's visit: only while the owner is away and its phone is up; the phone moves to
    /// the street for `duration`, then comes back to the household's air, still away.
    /// The self-test's relay (inside the arrival bound): at the first moment from now, within
    /// two days, when the owner is away and the lock saw it leave, so the arrival is judged on
    /// its timing alone.
    func plantRelay(seed: UInt64, tries: Int = 288) {
        if !ownerHome && lockSawOwnerLeave && owner != nil && lock != nil {
            relayVisit(for: .seconds(120), seed: seed, latency: .milliseconds(4))
        } else if tries > 0 {
            loop.schedule(after: .seconds(600)) { [weak self] in self?.plantRelay(seed: seed, tries: tries - 1) }
        } else {
            count("relay plant found no moment")
        }
    }

    func relayVisit(for duration: Duration, seed: UInt64, latency: Duration) {
        guard !ownerHome, owner != nil, lock != nil, relay == nil else { count("relay visit skipped"); return }
        let relay: HouseholdRelay
        do { relay = try HouseholdRelay(world: self, seed: seed, latency: latency) } catch {
            count("relay set-up failed")
            trace.add("relay set-up failed: \(error)", loop.now)
            return
        }
        count("relay visit")
        trace.add("relay at \(latency)", loop.now)
        killPhone(guest: false)
        self.relay = relay
        judge.relayStarted(key: Self.ownerKey, at: loop.now)
        startPhone(guest: false, transport: relay.phoneTransport)
        arrivalIntent()
        loop.schedule(after: duration) { [weak self] in
            guard let self, let relay = self.relay else { return }
            self.killPhone(guest: false)
            relay.tearDown(world: self)
            self.relay = nil
            self.judge.relayEnded(at: self.loop.now)
            self.startPhone(guest: false)
        }
    }
}
