import LatchkeyATT
import LatchkeyGATT
import LatchkeyTestKit
import Testing

@Suite("GATT server: notifications and indications")
struct GATTServerValueUpdateTests {
    @Test("GAN/SR/BV-01-C notification after the client subscribed")
    func notification() throws {
        try ServerScript(.small()).exchange(
            .in([0x12, 0x04, 0x00, 0x01, 0x00]), .out([0x13]),
            .notify([0x01, 0x02, 0x03], at: SmallDB.batteryLevel),
            .out([0x1B, 0x03, 0x00, 0x01, 0x02, 0x03]))
    }

    @Test("no notification without a subscription, or after unsubscribing")
    func notSubscribed() throws {
        let script = ServerScript(.small())
        #expect(script.server.notification([0x01], forValueAt: SmallDB.batteryLevel) == .failure(.notSubscribed))
        try script.exchange(.in([0x12, 0x04, 0x00, 0x01, 0x00]), .out([0x13]),
                            .in([0x12, 0x04, 0x00, 0x00, 0x00]), .out([0x13]))
        #expect(script.server.notification([0x01], forValueAt: SmallDB.batteryLevel) == .failure(.notSubscribed))
        // Subscribed for indications only: no notifications.
        let large = ServerScript(.large())
        try large.exchange(.in([0x12, 0x23, 0x00, 0x02, 0x00]), .out([0x13]))
        #expect(large.server.notification([0x01], forValueAt: LargeDB.lockState) == .failure(.notSubscribed))
    }

    @Test("a notification carries at most ATT_MTU − 3 octets")
    func notificationFitsMTU() throws {
        let script = ServerScript(.small())
        try script.exchange(.in([0x12, 0x04, 0x00, 0x01, 0x00]), .out([0x13]))
        #expect(script.server.notification([UInt8](repeating: 7, count: 21), forValueAt: 3) == .failure(.tooLong(maximum: 20)))
        try script.exchange(.notify([UInt8](repeating: 7, count: 20), at: 3),
                            .out([0x1B, 0x03, 0x00] + [UInt8](repeating: 7, count: 20)))
        try script.exchange(.in([0x02, 0x64, 0x00]), .out([0x03, 0x05, 0x02]))  // ATT_MTU 100
        #expect(script.server.notification([UInt8](repeating: 7, count: 98), forValueAt: 3) == .failure(.tooLong(maximum: 97)))
        try script.exchange(.notify([UInt8](repeating: 7, count: 97), at: 3),
                            .out([0x1B, 0x03, 0x00] + [UInt8](repeating: 7, count: 97)))
    }

    @Test("GAI/SR/BV-01-C indication, confirmed by the client")
    func indication() throws {
        let script = ServerScript(.large())
        try script.exchange(
            .in([0x12, 0x23, 0x00, 0x02, 0x00]), .out([0x13]),
            .indicate([0x01], at: LargeDB.lockState),
            .out([0x1D, 0x22, 0x00, 0x01]),
            .in([0x1E]))
        #expect(!script.server.indicationPending)
    }

    @Test("one indication in flight: the next waits for the confirmation")
    func oneIndicationInFlight() throws {
        let script = ServerScript(.large())
        try script.exchange(.in([0x12, 0x23, 0x00, 0x02, 0x00]), .out([0x13]),
                            .indicate([0x01], at: LargeDB.lockState), .out([0x1D, 0x22, 0x00, 0x01]))
        #expect(script.server.indicationPending)
        #expect(script.server.indication([0x00], forValueAt: LargeDB.lockState) == .failure(.indicationInFlight))
        // A malformed confirmation confirms nothing.
        try script.exchange(.in([0x1E, 0x00]))
        #expect(script.server.indication([0x00], forValueAt: LargeDB.lockState) == .failure(.indicationInFlight))
        try script.exchange(.in([0x1E]),
                            .indicate([0x00], at: LargeDB.lockState), .out([0x1D, 0x22, 0x00, 0x00]))
    }

    @Test("an indication that does not fit is refused without taking the in-flight slot")
    func indicationTooLong() throws {
        let script = ServerScript(.large())
        try script.exchange(.in([0x12, 0x23, 0x00, 0x02, 0x00]), .out([0x13]))
        #expect(script.server.indication([UInt8](repeating: 1, count: 21), forValueAt: LargeDB.lockState)
                == .failure(.tooLong(maximum: 20)))
        #expect(!script.server.indicationPending)
    }
}
