import LatchkeyMgmt
import LatchkeyPosix

/// A client of the kernel's Bluetooth management interface over one socket (shaped like BlueZ's
/// `mgmt.c`): commands queue, at most one outstanding per controller index, each completed by
/// its Command Complete or Status; other events go to `onEvent`. Built from any socket-like fd,
/// so a socketpair end is a full test transport; only `openDefault` opens the kernel. What the
/// socket does not take waits in `outbox`. The kernel answers every command, so there is no
/// timeout; a closed socket fails every queued command with `.closed`.
public final class MgmtClient {
    public typealias Completion = (Result<[UInt8], MgmtError>) -> Void

    private struct Request {
        let command: MgmtCommand
        let index: MgmtIndex
        let completion: Completion
        var sent = false
        /// What waits for this answer (`afterAnswers`), run after `completion`.
        var followers: [() -> Void] = []

        func answer(_ result: Result<[UInt8], MgmtError>) {
            completion(result)
            for body in followers { body() }
        }
    }

    public let loop: PosixEventLoop
    private var fd: CInt
    private var watch: Watch?
    /// Per index: the command in flight (first, once sent) and those waiting behind it.
    private var queues: [MgmtIndex: [Request]] = [:]
    /// Encoded packets the socket had no room for, in order.
    private var outbox: [[UInt8]] = []

    /// Every event that is not a command's answer, with the index it concerns.
    public var onEvent: ((MgmtIndex, MgmtEvent) -> Void)?
    /// Called once when the socket closes: nil for end of stream or `close()`.
    public var onClose: ((KernelError?) -> Void)?
    /// Every packet in (`"<"`) and out (`">"`), for `.trace` logs.
    public var trace: ((String, MgmtPacket) -> Void)?

    /// The largest mgmt message: a 6-byte header and up to 65535 parameter bytes.
    package static let maximumMessageLength = MgmtPacket.headerLength + 0xFFFF
    /// Messages read per readiness callback before yielding to other fds (fairness).
    package static let receiveBatch = 64

    /// Takes ownership of `fileDescriptor`, which must be non-blocking.
    public init(fileDescriptor: CInt, loop: PosixEventLoop) {
        fd = fileDescriptor
        self.loop = loop
        watch = loop.watch(fd: fileDescriptor, events: .readable) { [weak self] events in self?.handle(events) }
    }

    deinit { if fd >= 0 { Syscalls.close(fd) } }

    /// The kernel's mgmt socket (HCI_CHANNEL_CONTROL, bound to HCI_DEV_NONE).
    public static func openDefault(loop: PosixEventLoop) throws(KernelError) -> MgmtClient {
        do {
            return MgmtClient(fileDescriptor: try Syscalls.mgmtSocket(), loop: loop)
        } catch {
            throw KernelError(error)
        }
    }

    public var isOpen: Bool { fd >= 0 }

    /// Commands queued or in flight.
    public var pendingCount: Int { queues.values.reduce(0) { $0 + $1.count } }

    /// Queues `command` for controller `index`; `completion` gets the Return_Parameters,
    /// always on a later turn of the loop.
    public func send(_ command: MgmtCommand, to index: MgmtIndex, _ completion: @escaping Completion) {
        guard isOpen else {
            loop.execute { completion(.failure(MgmtError(.closed, command: command.opcode, index: index))) }
            return
        }
        queues[index, default: []].append(Request(command: command, index: index, completion: completion))
        startNext(on: index)
    }

    /// Runs `body` once every command queued so far for `index` has been answered (after the
    /// last one's completion), or on the next turn when none is. The kernel answers every
    /// command and `close` fails the rest, so it always runs.
    public func afterAnswers(on index: MgmtIndex, _ body: @escaping () -> Void) {
        guard let last = queues[index]?.indices.last else { return loop.execute(body) }
        queues[index]![last].followers.append(body)
    }

    /// Reads and dispatches whatever the socket holds now. A link socket that saw its
    /// link end calls this first, so the Device Disconnected event (which the kernel
    /// queues before it fails the link's sockets) has been seen.
    public func readAvailable() { receive(atMost: .max) }

    /// Closes the socket; queued commands fail with `.closed` on the next turn.
    public func close() { finish(nil) }

    // MARK: Writing

    private func startNext(on index: MgmtIndex) {
        guard let head = queues[index]?.first, !head.sent else { return }
        queues[index]![0].sent = true
        let packet = head.command.packet(index: index)
        trace?(">", packet)
        write(packet.encoded())
    }

    private func write(_ bytes: [UInt8]) {
        guard outbox.isEmpty else { return outbox.append(bytes) }
        do {
            if case .wouldBlock = try Syscalls.send(fd, bytes) {
                outbox.append(bytes)
                watch?.events = [.readable, .writable]
            }
        } catch {
            finish(KernelError(error))
        }
    }

    private func flush() {
        while let next = outbox.first {
            do {
                guard case .done = try Syscalls.send(fd, next) else { return }
            } catch {
                return finish(KernelError(error))
            }
            outbox.removeFirst()
        }
        watch?.events = .readable
    }

    // MARK: Reading

    private func handle(_ events: IOEvents) {
        if events.contains(.writable) { flush() }
        receive(atMost: Self.receiveBatch)
    }

    private func receive(atMost count: Int) {
        var left = count
        while isOpen && left > 0 {
            left -= 1
            let received: IOResult<[UInt8]>
            do { received = try Syscalls.receive(fd, capacity: Self.maximumMessageLength) } catch {
                return finish(KernelError(error))
            }
            guard case .done(let bytes) = received else { return }
            guard !bytes.isEmpty else { return finish(nil) }
            dispatch(bytes)
        }
    }

    /// One packet from the kernel. Undecodable packets are dropped (traced): a bad event
    /// must not take the adapter down.
    private func dispatch(_ bytes: [UInt8]) {
        let packet: MgmtPacket
        let event: MgmtEvent
        do {
            packet = try MgmtPacket(decoding: bytes)
            trace?("<", packet)
            event = try MgmtEvent(code: MgmtEventCode(rawValue: packet.code), parameters: packet.parameters)
        } catch {
            trace?("<!", MgmtPacket(code: 0, index: .none, parameters: bytes))
            return
        }
        switch event {
        case .commandComplete(let opcode, let status, let parameters):
            complete(opcode, on: packet.index, status: status, parameters: parameters)
        case .commandStatus(let opcode, let status) where status != .success:
            complete(opcode, on: packet.index, status: status, parameters: [])
        case .commandStatus:
            break  // early success: the Command Complete follows
        default:
            onEvent?(packet.index, event)
        }
    }

    private func complete(_ opcode: MgmtOpcode, on index: MgmtIndex, status: MgmtStatus, parameters: [UInt8]) {
        guard let head = queues[index]?.first, head.sent, head.command.opcode == opcode else {
            return  // an answer to nobody's command (another client of this fd): ignored
        }
        queues[index]!.removeFirst()
        if queues[index]!.isEmpty { queues[index] = nil }
        startNext(on: index)
        if status == .success {
            head.answer(.success(parameters))
        } else {
            head.answer(.failure(MgmtError(.commandFailed, command: opcode, index: index, status: status)))
        }
    }

    // MARK: Closing

    private func finish(_ error: KernelError?) {
        guard isOpen else { return }
        watch?.cancel()
        watch = nil
        Syscalls.close(fd)
        fd = -1
        outbox = []
        let failed = queues.values.flatMap { $0 }
        queues = [:]
        loop.execute {
            for request in failed {
                request.answer(.failure(MgmtError(.closed, command: request.command.opcode, index: request.index)))
            }
        }
        let callback = onClose
        onClose = nil
        callback?(error)
    }
}
