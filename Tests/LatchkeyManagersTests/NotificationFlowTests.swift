import LatchkeyATT
import LatchkeyCentral
import LatchkeyGATT
import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeySim
import LatchkeyTransport
import Testing

/// The sending half of chunked transfer as a lock application writes it: offer the next chunk, advance
/// only when `updateValue` accepted it, and resume from `peripheralManagerIsReady`.
final class ChunkPump {
    let manager: PeripheralManager
    let characteristic: LocalCharacteristic
    private(set) var sender: ChunkedSender
    /// How many times `updateValue` said false (each must be followed by one "ready").
    private(set) var refusals = 0

    init(manager: PeripheralManager, characteristic: LocalCharacteristic, sender: ChunkedSender) {
        self.manager = manager; self.characteristic = characteristic; self.sender = sender
    }

    func pump() {
        while let chunk = sender.peek() {
            guard manager.updateValue(chunk, for: characteristic) else { refusals += 1; return }
            sender.advance()
        }
    }
}

extension Home {
    /// Connected, discovered, and subscribed to `uuid`.
    func subscribed(to uuid: BluetoothUUID) throws -> (Peripheral, RemoteCharacteristic, LocalCharacteristic) {
        let (p, s) = try discovered()
        let remote = try s.at(uuid)
        p.setNotifyValue(true, for: remote)
        guard loop.advance(until: { lockApp.events.last == .subscribed(Addresses.phone, uuid) }, limit: .seconds(5))
        else { throw NotLinked() }
        settle()
        return (p, remote, lock.characteristic(uuid))
    }
}

@Suite struct NotificationFlowTests {
    @Test func updateValueSaysFalseWhenTheLinkIsFullThenReadyFollowsAndNothingIsLost() throws {
        let home = try Home()
        let (_, _, local) = try home.subscribed(to: TestGATT.state)
        let manager = home.lock.manager
        let total = 300
        func value(_ n: Int) -> [UInt8] { [UInt8(n >> 8), UInt8(n & 0xFF)] }
        var next = 0, refusals = 0
        func pump() {
            while next < total {
                guard manager.updateValue(value(next), for: local) else { refusals += 1; return }
                next += 1
            }
        }

        pump()
        #expect(next == SimulatedLink.defaultTransmitCapacity, "accepted until the link's 8-PDU queue was full")
        #expect(refusals == 1 && home.lockApp.readyCount == 0)
        #expect(!manager.updateValue(value(next), for: local), "full stays full until the link drains")
        refusals += 1

        // Ready comes once the next connection event has carried some of the queue.
        let refused = home.loop.now
        #expect(home.loop.advance(until: { home.lockApp.readyCount == 1 }, limit: .seconds(1)))
        #expect(home.loop.now > refused && home.loop.now - refused <= Timing.connection.connectionInterval)
        #expect(home.lockApp.readyCount == 1, "one ready per full episode, however many refusals")

        home.lockApp.onReady = pump
        pump()
        #expect(home.loop.advance(until: { home.phoneApp.values(of: TestGATT.state).count == total }, limit: .seconds(30)))
        #expect(home.phoneApp.values(of: TestGATT.state) == (0..<total).map(value), "every value, in order")
        #expect(home.lockApp.readyCount > 10)
    }

    @Test(arguments: [SimulatedLink.defaultTransmitCapacity, 1])
    func aTenKilobyteValueCrossesInMTUSizedChunksWithZeroLoss(transmitCapacity: Int) throws {
        let home = try Home { $0.transmitCapacity = transmitCapacity }
        let (p, _, local) = try home.subscribed(to: TestGATT.transfer)
        let central = try #require(home.lock.manager.centrals.first)
        // The negotiated ATT_MTU, as both ends see it, not the 23-octet default.
        let mtu = central.maximumUpdateValueLength + 3
        #expect(mtu == p.mtu && mtu == SimulatedLink.defaultMaximumTransmissionUnit)

        let value = (0..<10_240).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
        let pump = ChunkPump(manager: home.lock.manager, characteristic: local,
                             sender: ChunkedSender(value: value, mtu: mtu))
        let chunkCount = pump.sender.chunkCount
        home.lockApp.onReady = pump.pump
        let start = home.loop.now
        pump.pump()
        #expect(home.loop.advance(until: { home.phoneApp.values(of: TestGATT.transfer).count == chunkCount },
                                  limit: .seconds(60)))
        let elapsed = home.loop.now - start
        home.settle()

        let chunks = home.phoneApp.values(of: TestGATT.transfer)
        #expect(pump.sender.isFinished && chunks.count == chunkCount)
        #expect(chunks.dropLast().allSatisfy { $0.count == mtu - 3 }, "each notification is MTU − 3 octets")
        var assembler = ChunkAssembler()
        var values: [[UInt8]] = []
        for chunk in chunks { if let whole = try assembler.receive(chunk) { values.append(whole) } }
        #expect(values == [value], "zero loss, exact bytes")
        #expect(pump.refusals > 0 && home.lockApp.readyCount == pump.refusals, "back-pressure met and resumed")

        let interval = Timing.connection.connectionInterval
        if transmitCapacity == 1 {
            // One PDU in the queue: one chunk per connection event.
            #expect(elapsed >= interval * (chunkCount - 1))
        } else {
            // Full rate: the sender keeps the queue topped up, so every event carries the most a
            // simulated event carries (4 PDUs).
            let events = (chunkCount + SimulatedLink.defaultPacketsPerEvent - 1) / SimulatedLink.defaultPacketsPerEvent
            #expect(elapsed <= interval * events)
        }
    }
}
