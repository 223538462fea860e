import LatchkeyTransport

/// Accepts connections on a listening socket from the loop so that no accept error stops the
/// listener or spins the loop (a listener with a connection waiting polls readable at once):
/// an error of the one connection being accepted (ECONNABORTED, EPROTO, network errors) drops
/// it and the next is accepted, at most `perTurn` per readiness; any other (EMFILE, ENFILE,
/// ENOMEM, ENOBUFS) pauses the watch, reports, and retries after a backoff doubling from
/// `first` to `cap` on the loop's clock, reset by a successful accept.
public final class Acceptor {
    /// What one accept call did.
    public enum Attempt {
        case accepted
        /// Nothing waiting (EAGAIN).
        case empty
        case failed(Errno?, String)
    }

    /// Our choice: a descriptor shortage usually ends when a client closes, within a
    /// fraction of a second; at worst the listener looks again every 2 s.
    public static let first: Duration = .milliseconds(50)
    public static let cap: Duration = .seconds(2)
    static let perTurn = 64

    /// Per-connection errors: the listener is fine, the connection was lost before it was taken.
    static let connectionErrors: Set<Errno> = [
        .connectionAborted, .protocolError, .networkDown, .protocolNotAvailable, .hostDown, .noNetwork,
        .hostUnreachable, .operationNotSupported, .networkUnreachable, .operationNotPermitted,
    ]

    private let loop: PosixEventLoop
    private var watch: Watch?
    private let accept: () -> Attempt
    private var pause: Scheduled?
    private var nextDelay: Duration
    private let first: Duration
    private let cap: Duration
    /// Each failure that pauses the listener: what failed and when it is tried again.
    public var onPause: ((String, Duration) -> Void)?
    /// Connections dropped for their own errors, and pauses so far (for `status`/tests).
    public private(set) var droppedConnections = 0
    public private(set) var pauses = 0
    public var isPaused: Bool { pause != nil }

    /// `accept` takes one connection (and hands it on) or says why not.
    public init(fileDescriptor: CInt, loop: PosixEventLoop, first: Duration = Acceptor.first, cap: Duration = Acceptor.cap,
                accept: @escaping () -> Attempt) {
        self.loop = loop
        self.accept = accept
        self.first = first
        self.cap = cap
        nextDelay = first
        watch = loop.watch(fd: fileDescriptor, events: .readable) { [weak self] _ in self?.acceptWaiting() }
    }

    deinit { cancel() }

    public func cancel() {
        watch?.cancel()
        watch = nil
        pause?.cancel()
        pause = nil
    }

    /// Accepts what is waiting (the watch's handler; a test may call it).
    public func acceptWaiting() {
        var dropped = 0
        while watch != nil, pause == nil {
            switch accept() {
            case .accepted:
                nextDelay = first
            case .empty:
                return
            case .failed(let errno, _) where errno.map(Self.connectionErrors.contains) == true && dropped < Self.perTurn:
                dropped += 1
                droppedConnections += 1
            case .failed(_, let description):
                return pauseListening(description)
            }
        }
    }

    private func pauseListening(_ description: String) {
        let delay = nextDelay
        nextDelay = min(nextDelay * 2, cap)
        pauses += 1
        watch?.events = []
        pause = loop.schedule(after: delay) { [weak self] in
            guard let self else { return }
            self.pause = nil
            self.watch?.events = .readable
            self.acceptWaiting()
        }
        onPause?(description, delay)
    }
}

extension SeqPacketListener {
    /// One accept for an `Acceptor`: the new socket goes to `take`.
    public func acceptOne(_ take: (SeqPacketSocket) -> Void) -> Acceptor.Attempt {
        do throws(SystemError) {
            guard let socket = try accept() else { return .empty }
            take(socket)
            return .accepted
        } catch {
            return .failed(error.errno, "\(error)")
        }
    }
}
