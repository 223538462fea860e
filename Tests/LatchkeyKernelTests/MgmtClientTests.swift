#if canImport(Glibc)
import Glibc
#endif
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport
import Testing

import LatchkeyKernelSockets
@testable import LatchkeyKernel

/// The mgmt client over a socketpair whose far end plays the kernel (BlueZ
/// unit/test-mgmt.c): exact bytes out, scripted bytes back.
@Suite struct MgmtClientTests {
    let loop = PosixEventLoop()

    @Test func aCommandCompletesWithItsReturnParameters() throws {
        let kernel = FakeKernel(loop: loop)
        kernel.expect(bytes("03 00 ff ff 00 00"), reply: bytes("01 00 ff ff 09 00 03 00 00 02 00 00 00 01 00"))
        let client = MgmtClient(fileDescriptor: kernel.clientDescriptor, loop: loop)
        var result: Result<[UInt8], MgmtError>?
        client.send(.readControllerIndexList, to: .none) { result = $0 }
        #expect(try loop.run(until: { result != nil }, timeout: .seconds(2)))
        #expect(try result?.get() == bytes("02 00 00 00 01 00"))
        #expect(kernel.scriptIsDone)
        #expect(client.pendingCount == 0)
    }

    @Test func oneCommandInFlightPerIndexCompletedByOpcode() throws {
        let kernel = FakeKernel(loop: loop)
        kernel.respond = { _ in [] }  // the test answers by hand
        let client = MgmtClient(fileDescriptor: kernel.clientDescriptor, loop: loop)
        var done: [String] = []
        client.send(.setLowEnergy(true), to: MgmtIndex(0)) { _ in done.append("le0") }
        client.send(.setPowered(true), to: MgmtIndex(0)) { _ in done.append("power0") }
        client.send(.setPowered(true), to: MgmtIndex(1)) { _ in done.append("power1") }
        #expect(try loop.run(until: { kernel.received.count == 2 }, timeout: .seconds(2)))
        try loop.runOnce(timeout: .milliseconds(20))
        // hci0's second command waits for its first; hci1 has its own queue.
        #expect(kernel.received.map(\.code) == [0x000D, 0x0005])
        #expect(kernel.received.map(\.index) == [MgmtIndex(0), MgmtIndex(1)])

        // An answer to a command that is not in flight on that index completes nothing.
        kernel.emit(FakeKernel.complete(0x0005, MgmtIndex(0)))
        kernel.emit(FakeKernel.complete(0x000D, MgmtIndex(1)))
        try loop.runOnce(timeout: .milliseconds(20))
        #expect(done.isEmpty)

        kernel.emit(FakeKernel.complete(0x000D, MgmtIndex(0), FakeKernel.settings([.lowEnergy])))
        #expect(try loop.run(until: { kernel.received.count == 3 }, timeout: .seconds(2)))
        #expect(done == ["le0"])
        #expect(kernel.received.last?.code == 0x0005)
        #expect(kernel.received.last?.index == MgmtIndex(0))
        kernel.emit(FakeKernel.complete(0x0005, MgmtIndex(1)))
        kernel.emit(FakeKernel.complete(0x0005, MgmtIndex(0)))
        #expect(try loop.run(until: { done.count == 3 }, timeout: .seconds(2)))
        #expect(done == ["le0", "power1", "power0"])
    }

    @Test func aRefusalNamesTheCommand() throws {
        let kernel = FakeKernel(loop: loop)
        kernel.expect(bytes("05 00 00 00 01 00 01"), reply: bytes("02 00 00 00 03 00 05 00 0a"))
        kernel.expect(bytes("33 00 00 00 08 00 01 00 00 ee ff c0 01 02"),
                      reply: bytes("01 00 00 00 0a 00 33 00 0d 01 00 00 ee ff c0 01"))
        let client = MgmtClient(fileDescriptor: kernel.clientDescriptor, loop: loop)
        var errors: [String] = []
        client.send(.setPowered(true), to: MgmtIndex(0)) { if case .failure(let e) = $0 { errors.append("\(e)") } }
        client.send(.addDevice(BluetoothAddress(string: "C0:FF:EE:00:00:01")!, .autoConnect), to: MgmtIndex(0)) {
            if case .failure(let e) = $0 { errors.append("\(e)") }
        }
        #expect(try loop.run(until: { errors.count == 2 }, timeout: .seconds(2)))
        #expect(errors == ["Set Powered (0x0005) on hci0 failed: Busy (0x0a)",
                           "Add Device (0x0033) on hci0 failed: Invalid Parameters (0x0d)"])
    }

    @Test func eventsReachOnEventWithTheirIndexAndBadPacketsAreSkipped() throws {
        let kernel = FakeKernel(loop: loop)
        let client = MgmtClient(fileDescriptor: kernel.clientDescriptor, loop: loop)
        var events: [(MgmtIndex, MgmtEvent)] = []
        client.onEvent = { events.append(($0, $1)) }
        kernel.emit(bytes("04 00 02 00 00 00"))
        kernel.emit(bytes("06 00 00"))                        // a torn header: dropped
        kernel.emit(bytes("0b 00 00 00 05 00 01 00"))         // length says 5, 2 follow: dropped
        kernel.emit(bytes("06 00 00 00 04 00 01 02 00 00"))
        #expect(try loop.run(until: { events.count == 2 }, timeout: .seconds(2)))
        #expect(events[0] == (MgmtIndex(2), .indexAdded))
        #expect(events[1] == (MgmtIndex(0), .newSettings([.powered, .lowEnergy])))
    }

    @Test func aClosedSocketFailsEveryQueuedCommand() throws {
        let kernel = FakeKernel(loop: loop)
        kernel.respond = { _ in [] }
        let client = MgmtClient(fileDescriptor: kernel.clientDescriptor, loop: loop)
        var closed = false
        client.onClose = { error in closed = error == nil }
        var failures: [MgmtError] = []
        client.send(.setPowered(true), to: MgmtIndex(0)) { if case .failure(let e) = $0 { failures.append(e) } }
        client.send(.setConnectable(true), to: MgmtIndex(0)) { if case .failure(let e) = $0 { failures.append(e) } }
        #expect(try loop.run(until: { kernel.received.count == 1 }, timeout: .seconds(2)))
        kernel.hangUp()
        #expect(try loop.run(until: { failures.count == 2 }, timeout: .seconds(2)))
        #expect(closed)
        #expect(!client.isOpen)
        #expect(failures.map(\.code) == [.closed, .closed])
        #expect(Set(failures.compactMap(\.command)) == [.setPowered, .setConnectable])

        var late: MgmtError?
        client.send(.getConnections, to: MgmtIndex(0)) { if case .failure(let e) = $0 { late = e } }
        #expect(late == nil, "never answered inside send")
        #expect(try loop.run(until: { late != nil }, timeout: .seconds(2)))
        #expect(late?.code == .closed)
    }

    @Test func anInterruptedSendIsRetriedAndAFullSocketIsFlushedLater() throws {
        let kernel = FakeKernel(loop: loop)
        kernel.expect(bytes("05 00 00 00 01 00 01"), reply: FakeKernel.complete(0x0005, MgmtIndex(0), FakeKernel.settings([.powered])))
        kernel.expect(bytes("05 00 01 00 01 00 01"), reply: FakeKernel.complete(0x0005, MgmtIndex(1), FakeKernel.settings([.powered])))
        let client = MgmtClient(fileDescriptor: kernel.clientDescriptor, loop: loop)
        let mock = SyscallMock()
        mock.fail("send", with: .interrupted)
        var answered = 0
        try SyscallMock.with(mock) { () throws in
            client.send(.setPowered(true), to: MgmtIndex(0)) { _ in answered += 1 }
            #expect(mock.trace == ["send", "send"], "EINTR is retried at once")
            mock.fail("send", with: .wouldBlock)
            client.send(.setPowered(true), to: MgmtIndex(1)) { _ in answered += 1 }
            #expect(try loop.run(until: { answered == 2 }, timeout: .seconds(2)))
        }
        #expect(kernel.scriptIsDone, "the command the socket refused went out once it was writable")
        #expect(mock.trace.filter { $0 == "send" }.count == 4)
    }

    @Test func noBluetoothInTheKernelIsATypedError() {
        let mock = SyscallMock()
        mock.fail("socket", with: .addressFamilyNotSupported)
        let noBluetooth = SyscallMock.with(mock) {
            #expect(throws: KernelError.self) { _ = try MgmtClient.openDefault(loop: loop) }
        }
        #expect(noBluetooth?.code == .noBluetooth)
        mock.fail("socket", with: Errno(rawValue: 1))  // EPERM: no CAP_NET_ADMIN
        let denied = SyscallMock.with(mock) {
            #expect(throws: KernelError.self) { _ = try MgmtClient.openDefault(loop: loop) }
        }
        #expect(denied?.code == .permissionDenied)
        #expect(mock.trace == ["socket", "socket"])
    }
}
