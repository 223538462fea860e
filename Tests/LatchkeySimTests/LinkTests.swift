import LatchkeySim
import LatchkeyTransport
import Testing

let connectionInterval = ConnectionParameters.kernelDefault.connectionInterval  // 30 ms
let supervisionTimeout = ConnectionParameters.kernelDefault.supervisionTimeout  // 420 ms

extension World {
    /// When the link came up: its first connection event, the anchor of all later ones.
    var anchor: Instant { phoneApp.connects[0].time }
    /// The k-th connection event after the anchor.
    func event(_ k: Int) -> Instant { anchor + connectionInterval * k }
    /// The first event that carries ATT PDUs, after the link-layer setup.
    var firstDataEvent: Int { 1 + LinkLayerTiming.setupEvents }
}

@Suite struct LinkTests {
    @Test func walkingOutOfRangeDropsTheLinkExactlyAtTheSupervisionTimeout() throws {
        let world = try World.linked()
        world.loop.advance(to: world.event(10))
        world.air.setPosition(100, of: World.phoneAddress)

        world.loop.advance(by: supervisionTimeout - .milliseconds(1))
        #expect(world.phoneLink.isConnected && world.lockLink.isConnected)
        #expect(world.phoneApp.disconnects.isEmpty && world.lockApp.disconnects.isEmpty)

        world.loop.advance(by: .milliseconds(1))
        #expect(world.phoneApp.disconnectReasons == [.connectionTimeout])
        #expect(world.lockApp.disconnectReasons == [.connectionTimeout])
        #expect(world.phoneApp.disconnects.map(\.time) == [world.event(10) + supervisionTimeout])
        #expect(!world.phoneLink.isConnected && world.phone.connectedLinks.isEmpty)
    }

    @Test func theSupervisionTimeoutCountsFromTheLastConnectionEventNotFromTheMove() throws {
        let world = try World.linked()
        world.loop.advance(to: world.event(4) + .milliseconds(10))
        world.air.setPosition(100, of: World.phoneAddress)
        world.loop.advance(to: world.event(4) + supervisionTimeout - .nanoseconds(1))
        #expect(world.phoneApp.disconnects.isEmpty)
        world.loop.advance(by: .nanoseconds(1))
        #expect(world.phoneApp.disconnects.map(\.time) == [world.event(4) + supervisionTimeout])
    }

    @Test func comingBackBeforeTheSupervisionTimeoutKeepsTheLink() throws {
        let world = try World.linked()
        world.air.setPosition(100, of: World.phoneAddress)
        world.loop.advance(by: .milliseconds(400))
        world.air.setPosition(1, of: World.phoneAddress)
        world.loop.advance(by: .seconds(10))
        #expect(world.phoneLink.isConnected && world.phoneApp.disconnects.isEmpty)
        #expect(world.loop.pendingCount == 0)
    }

    @Test func anIdleLinkCostsNoTimerForThirtyDays() throws {
        let world = try World.linked()
        world.loop.run()
        #expect(world.loop.pendingCount == 0)
        world.loop.advance(by: .days(30))
        #expect(world.phoneLink.isConnected && world.lockLink.isConnected)
        #expect(world.phoneApp.disconnects.isEmpty)
    }

    @Test func aPDUArrivesAtTheNextConnectionEvent() throws {
        let world = try World.linked()
        world.loop.advance(to: world.event(3) + .milliseconds(10))
        #expect(world.phoneLink.send([0x0A, 0x01, 0x00]) == .sent)
        #expect(world.lockApp.received.isEmpty, "nothing is delivered from inside send")
        world.loop.advance(to: world.event(4) - .nanoseconds(1))
        #expect(world.lockApp.received.isEmpty)
        world.loop.advance(to: world.event(4))
        #expect(world.lockApp.received.map(\.time) == [world.event(4)])
        #expect(world.lockApp.receivedPDUs == [[0x0A, 0x01, 0x00]])
    }

    @Test func eachEventCarriesAtMostFourPDUsPerDirectionInOrder() throws {
        let world = try World.linked()
        for i in 0..<6 {
            #expect(world.phoneLink.send([UInt8(i)]) == .sent)
            #expect(world.lockLink.send([UInt8(100 + i)]) == .sent)
        }
        let first = world.firstDataEvent
        world.loop.advance(to: world.event(first))
        #expect(world.lockApp.receivedPDUs == [[0], [1], [2], [3]])
        #expect(world.phoneApp.receivedPDUs == [[100], [101], [102], [103]])
        world.loop.advance(to: world.event(first + 1))
        #expect(world.lockApp.receivedPDUs == (0..<6).map { [UInt8($0)] })
        #expect(world.phoneApp.receivedPDUs == (100..<106).map { [UInt8($0)] })
        #expect(world.lockApp.received.map(\.time)
                    == Array(repeating: world.event(first), count: 4) + [world.event(first + 1), world.event(first + 1)])
    }

    @Test func aFullTransmitBufferRefusesThenSignalsWritableOnceAndLosesNothing() throws {
        let world = try World.linked()
        let link = world.phoneLink
        var sent = 0
        while sent < 100, link.send([UInt8(sent)]) == .sent { sent += 1 }
        #expect(sent == SimulatedLink.defaultTransmitCapacity)
        #expect(link.send([0xFF]) == .full, "full stays full and queues nothing")
        #expect(world.phoneApp.writableCount == 0)

        world.loop.advance(to: world.event(world.firstDataEvent))
        #expect(world.phoneApp.writableCount == 1, "one linkIsWritable per full episode")
        world.loop.advance(to: world.event(world.firstDataEvent + 1))
        #expect(world.phoneApp.writableCount == 1, "no full since: no second signal")

        // Pump 200 PDUs, refilling only on linkIsWritable.
        var next = sent
        let total = 200
        func pump(_ link: any ATTLink) {
            while next < total, link.send([UInt8(next % 256), UInt8(next / 256)]) == .sent { next += 1 }
        }
        world.phoneApp.onWritable = pump
        pump(link)
        world.loop.advance(by: .seconds(5))
        #expect(next == total)
        let expected = (0..<sent).map { [UInt8($0)] } + (sent..<total).map { [UInt8($0 % 256), UInt8($0 / 256)] }
        #expect(world.lockApp.receivedPDUs == expected)
        #expect(world.phoneApp.writableCount > 10)
    }

    @Test func disconnectReachesBothEndsAtTheNextEventAndDropsWhatIsQueued() throws {
        let world = try World.linked()
        world.loop.advance(to: world.event(2) + .milliseconds(5))
        #expect(world.lockLink.send([1]) == .sent)
        #expect(world.phoneLink.send([2]) == .sent)
        world.phoneLink.disconnect()
        #expect(world.phoneApp.disconnects.isEmpty, "never called back from inside disconnect")
        #expect(world.phoneLink.send([3]) == .disconnected)

        world.loop.advance(to: world.event(3))
        #expect(world.phoneApp.disconnects.map(\.time) == [world.event(3)])
        #expect(world.phoneApp.disconnectReasons == [.localHostTerminated])
        #expect(world.lockApp.disconnectReasons == [.remoteUserTerminated])
        #expect(world.lockApp.received.isEmpty && world.phoneApp.received.isEmpty)
        #expect(world.lockLink.send([4]) == .disconnected)
    }

    @Test func trafficWaitsWhileOutOfRangeAndFlowsWhenBack() throws {
        let world = try World.linked()
        world.loop.advance(to: world.event(2))
        world.air.setPosition(100, of: World.phoneAddress)
        #expect(world.phoneLink.send([7]) == .sent)
        world.loop.advance(by: .milliseconds(300))
        #expect(world.lockApp.received.isEmpty)
        world.air.setPosition(1, of: World.phoneAddress)
        let back = world.loop.now
        world.loop.advance(by: .milliseconds(100))
        #expect(world.lockApp.receivedPDUs == [[7]])
        let arrival = try #require(world.lockApp.received.first).time
        #expect(arrival > back && arrival <= back + connectionInterval)
    }

    @Test func aDisconnectTheOtherEndCannotHearLeavesItToTimeOut() throws {
        let world = try World.linked()
        world.loop.advance(to: world.event(5))
        world.air.setPosition(100, of: World.phoneAddress)
        world.phoneLink.disconnect()
        world.loop.advance(to: world.event(6))
        #expect(world.phoneApp.disconnectReasons == [.localHostTerminated])
        #expect(world.lockLink.isConnected)
        world.air.setPosition(1, of: World.phoneAddress)  // too late: the phone is gone from this link
        world.loop.advance(to: world.event(5) + supervisionTimeout)
        #expect(world.lockApp.disconnects.map(\.time) == [world.event(5) + supervisionTimeout])
        #expect(world.lockApp.disconnectReasons == [.connectionTimeout])
    }
}
