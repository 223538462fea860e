/// A `SeqPacketSocket` driven by a `PosixEventLoop`: messages in through `onMessage`,
/// messages out through `send`, which never blocks and never drops. When the socket is
/// full, messages wait in an ordered queue and writable interest is armed only while that
/// queue is non-empty (BlueZ's `wakeup_chan_writer`). A peer that does not read lets the
/// queue grow to `maximumQueuedMessages`; past that the channel closes itself, because an
/// unbounded queue would let a stuck peer exhaust our memory.
public final class PacketChannel {
    public let socket: SeqPacketSocket
    /// Called on the loop with each whole message received.
    public var onMessage: (([UInt8]) -> Void)?
    /// Called once when the channel closes: nil for end of stream or `close()`, else the error.
    public var onClose: ((SystemError?) -> Void)?

    public let maximumQueuedMessages: Int
    /// Our choice: far above what a well-behaved peer lets pile up (a burst of advertising
    /// reports and PDUs between two turns of its loop), small enough to bound memory.
    public static let defaultMaximumQueuedMessages = 4096

    /// Messages received per readiness callback before yielding to other fds (fairness).
    static let receiveBatch = 64

    private var outbox: [[UInt8]] = []
    private var outboxStart = 0
    private var watch: Watch?

    public init(socket: SeqPacketSocket, loop: PosixEventLoop,
                maximumQueuedMessages: Int = PacketChannel.defaultMaximumQueuedMessages) {
        self.socket = socket
        self.maximumQueuedMessages = maximumQueuedMessages
        watch = loop.watch(fd: socket.fileDescriptor, events: .readable) { [weak self] events in
            self?.handle(events)
        }
    }

    public var isOpen: Bool { watch != nil }

    /// Messages waiting for the socket to drain.
    public var queuedCount: Int { outbox.count - outboxStart }

    /// Sends `message` now if the socket has room, else queues it behind earlier ones.
    public func send(_ message: [UInt8]) {
        guard isOpen else { return }
        if queuedCount == 0 {
            do {
                if try socket.send(message) == .sent { return }
            } catch {
                return finish(error)
            }
        }
        guard queuedCount < maximumQueuedMessages else {
            return finish(SystemError(.wouldBlock, call: "send (peer not reading: \(queuedCount) messages queued)"))
        }
        outbox.append(message)
        watch?.events = [.readable, .writable]
    }

    /// Closes the socket; `onClose(nil)` follows synchronously.
    public func close() { finish(nil) }

    private func handle(_ events: IOEvents) {
        if events.contains(.writable) { flush() }
        if events.contains(.readable) || events.contains(.hangUp) || events.contains(.error) { receive() }
    }

    private func receive() {
        for _ in 0..<Self.receiveBatch where isOpen {
            let received: SeqPacketSocket.Received
            do { received = try socket.receive() } catch { return finish(error) }
            switch received {
            case .message(let bytes): onMessage?(bytes)
            case .wouldBlock: return
            case .endOfStream: return finish(nil)
            }
        }
    }

    private func flush() {
        while isOpen && queuedCount > 0 {
            do {
                    guard try socket.send(outbox[outboxStart]) == .sent else { return }
            } catch {
                return finish(error)
            }
            outboxStart += 1
            if outboxStart * 2 >= outbox.count { outbox.removeFirst(outboxStart); outboxStart = 0 }
        }
        if isOpen { watch?.events = .readable }
    }

    private func finish(_ error: SystemError?) {
        guard let w = watch else { return }
        w.cancel()
        watch = nil
        socket.close()
        outbox = []
        outboxStart = 0
        let callback = onClose
        onClose = nil
        onMessage = nil
        callback?(error)
    }
}
