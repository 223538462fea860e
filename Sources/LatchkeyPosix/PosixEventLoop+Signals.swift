/// Signals delivered as loop callbacks, through a self-pipe: a C handler writes the
/// signal number into a non-blocking pipe, and the loop reads it like any fd. Unlike
/// signalfd, this needs no signal mask in every thread, so it works in a process where
/// the Swift runtime (or a test runner) has other threads.
///
/// The disposition of a signal is process-wide: if two loops in one process ask for the
/// same signal, the most recent one receives it.
extension PosixEventLoop {
    /// Calls `handler` on the loop each time `signal` arrives (several arrivals before the
    /// loop runs may coalesce into one call, as pending signals do). Installing a handler
    /// replaces the signal's default action (e.g. SIGTERM no longer terminates) until the
    /// returned watch is cancelled.
    public func onSignal(_ signal: Signal, _ handler: @escaping () -> Void) throws(SystemError) -> SignalWatch {
        let relay: SignalRelay
        if let existing = signalRelay {
            relay = existing
        } else {
            relay = try SignalRelay(loop: self)
            signalRelay = relay
        }
        return try relay.add(signal, handler)
    }
}

/// A registered signal handler; `cancel()` removes it and, when it was the last handler
/// for its signal, restores the previous disposition.
public final class SignalWatch {
    public let signal: Signal
    var handler: (() -> Void)?
    private weak var relay: SignalRelay?

    init(signal: Signal, handler: @escaping () -> Void, relay: SignalRelay) {
        self.signal = signal
        self.handler = handler
        self.relay = relay
    }

    public var isCancelled: Bool { handler == nil }

    public func cancel() {
        guard handler != nil else { return }
        handler = nil
        relay?.removeCancelled(signal)
    }
}

/// The self-pipe and the per-signal handler lists of one loop.
final class SignalRelay {
    private let readFD: CInt
    private let writeFD: CInt
    private var watch: Watch?
    private var handlers: [Signal: [SignalWatch]] = [:]

    init(loop: PosixEventLoop) throws(SystemError) {
        (readFD, writeFD) = try Syscalls.pipe()
        watch = loop.watch(fd: readFD, events: .readable) { [weak self] _ in self?.drain() }
    }

    func add(_ signal: Signal, _ handler: @escaping () -> Void) throws(SystemError) -> SignalWatch {
        try Syscalls.forwardSignal(signal.rawValue, to: writeFD)
        let signalWatch = SignalWatch(signal: signal, handler: handler, relay: self)
        handlers[signal, default: []].append(signalWatch)
        return signalWatch
    }

    func removeCancelled(_ signal: Signal) {
        handlers[signal]?.removeAll { $0.isCancelled }
        if handlers[signal]?.isEmpty == true {
            handlers[signal] = nil
            Syscalls.restoreSignal(signal.rawValue)
        }
    }

    private func drain() {
        // Only wake-up bytes are in the pipe: a failed read ends the drain like an empty pipe, and the handlers still run.
        while case .done(let bytes) = (try? Syscalls.read(readFD, capacity: 64)) ?? .wouldBlock, !bytes.isEmpty {
            for byte in bytes {
                for signalWatch in handlers[Signal(rawValue: CInt(byte))] ?? [] { signalWatch.handler?() }
            }
        }
    }

    func close() {
        for signal in handlers.keys { Syscalls.restoreSignal(signal.rawValue) }
        handlers = [:]
        watch?.cancel()
        Syscalls.close(readFD)
        Syscalls.close(writeFD)
    }
}
