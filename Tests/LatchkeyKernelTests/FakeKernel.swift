#if canImport(Glibc)
import Glibc
#endif
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport
import Testing

import LatchkeyKernelSockets
@testable import LatchkeyKernel

/// "03 00 ff ff" → bytes.
func bytes(_ text: String) -> [UInt8] {
    text.split(whereSeparator: { $0 == " " || $0 == "\n" }).map { UInt8($0, radix: 16)! }
}

/// A connected pair of non-blocking SOCK_SEQPACKET sockets.
func socketPair() -> (CInt, CInt) {
    try! Syscalls.seqPacketPair()
}

/// The kernel end of a mgmt socketpair, as BlueZ unit/test-mgmt.c fakes it: commands
/// arrive here, are checked against a script of exact bytes, and the scripted replies and
/// events go back. Commands beyond the script are answered by `respond` (by default,
/// Command Complete with Success and no parameters) and all are recorded in `received`.
final class FakeKernel {
    let loop: PosixEventLoop
    /// The client's end: hand it to `MgmtClient(fileDescriptor:loop:)`.
    let clientDescriptor: CInt
    private let fd: CInt
    private var watch: Watch?
    private var script: [(expect: [UInt8], reply: [[UInt8]])] = []
    private(set) var received: [MgmtPacket] = []
    /// Default answers for commands past the script.
    var respond: (MgmtPacket) -> [[UInt8]] = { [FakeKernel.complete($0.code, $0.index)] }

    init(loop: PosixEventLoop) {
        self.loop = loop
        (clientDescriptor, fd) = socketPair()
        watch = loop.watch(fd: fd, events: .readable) { [weak self] _ in self?.readCommands() }
    }

    deinit {
        watch?.cancel()
        Glibc.close(fd)
    }

    /// The next command must be exactly `command`; `replies` go back in order.
    func expect(_ command: [UInt8], reply replies: [UInt8]...) {
        script.append((command, replies))
    }

    var scriptIsDone: Bool { script.isEmpty }

    /// Sends an unsolicited event.
    func emit(_ packet: [UInt8]) {
        _ = packet.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
    }

    /// The peer closes its end (as if the kernel went away).
    func hangUp() {
        watch?.cancel()
        watch = nil
        shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Commands received with this opcode.
    func commands(_ opcode: MgmtOpcode) -> [MgmtPacket] { received.filter { $0.code == opcode.rawValue } }

    private func readCommands() {
        var buffer = [UInt8](repeating: 0, count: 70_000)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            guard n > 0 else { return }
            let command = Array(buffer.prefix(n))
            guard let packet = try? MgmtPacket(decoding: command) else {
                Issue.record("undecodable command \(command)")
                continue
            }
            received.append(packet)
            let replies: [[UInt8]]
            if let step = script.first {
                script.removeFirst()
                #expect(command == step.expect, "expected \(step.expect), got \(command)")
                replies = step.reply
            } else {
                replies = respond(packet)
            }
            for reply in replies { emit(reply) }
        }
    }

    // MARK: Packet builders

    static func event(_ code: UInt16, _ index: MgmtIndex, _ parameters: [UInt8]) -> [UInt8] {
        MgmtPacket(code: code, index: index, parameters: parameters).encoded()
    }

    /// Command Complete (0x0001) for `opcode` with `status` and return parameters.
    static func complete(_ opcode: UInt16, _ index: MgmtIndex, status: UInt8 = 0, _ parameters: [UInt8] = []) -> [UInt8] {
        event(0x0001, index, [UInt8(opcode & 0xff), UInt8(opcode >> 8), status] + parameters)
    }

    /// Command Status (0x0002) with a failure.
    static func status(_ opcode: UInt16, _ index: MgmtIndex, _ status: UInt8) -> [UInt8] {
        event(0x0002, index, [UInt8(opcode & 0xff), UInt8(opcode >> 8), status])
    }

    static func settings(_ settings: MgmtSettings) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: settings.rawValue >> (8 * $0)) }
    }

    static func newSettings(_ index: MgmtIndex, _ settings: MgmtSettings) -> [UInt8] {
        event(0x0006, index, Self.settings(settings))
    }

    static func deviceConnected(_ index: MgmtIndex, _ address: BluetoothAddress, initiated: Bool = true) -> [UInt8] {
        event(0x000B, index, address.littleEndianBytes + [address.kind == .random ? 2 : 1, initiated ? 8 : 0, 0, 0, 0, 0, 0])
    }

    static func deviceDisconnected(_ index: MgmtIndex, _ address: BluetoothAddress, reason: UInt8) -> [UInt8] {
        event(0x000C, index, address.littleEndianBytes + [address.kind == .random ? 2 : 1, reason])
    }
}
