import LatchkeyKernelSockets
import LatchkeyPosix
import LatchkeyTransport

/// The lock's listening ATT socket and its accept loop. An accept error pauses it and it tries
/// again after a backoff (`Acceptor`): closing it would leave the lock advertising and taking no
/// connection. It owns the socket, the acceptor and the backoff; each accepted link goes to the
/// transport (`onAccept`), a pause to `onFailure`.
final class ATTListener {
    private let sockets: any LinkSocketProvider
    private let loop: PosixEventLoop
    private var listener: (any LinkListener)?
    private var acceptor: Acceptor?

    /// How it backs off after an accept error (EMFILE and the like).
    var backoff = (first: Acceptor.first, cap: Acceptor.cap)
    /// A link came in: its socket and the peer's address.
    var onAccept: ((CInt, BluetoothAddress) -> Void)?
    /// An accept error paused it.
    var onFailure: ((KernelError) -> Void)?

    init(sockets: any LinkSocketProvider, loop: PosixEventLoop) {
        self.sockets = sockets
        self.loop = loop
    }

    var isOpen: Bool { listener != nil }

    /// Listens on `address`'s ATT channel unless it already does.
    func open(on address: BluetoothAddress) throws(KernelError) {
        guard listener == nil else { return }
        let opened = try sockets.listen(on: address)
        listener = opened
        let acceptor = Acceptor(fileDescriptor: opened.fileDescriptor, loop: loop, first: backoff.first, cap: backoff.cap) {
            [weak self] in self?.acceptOne() ?? .empty
        }
        acceptor.onPause = { [weak self] failure, delay in
            self?.onFailure?(KernelError(.system, "ATT listener: \(failure); accepting again in \(delay)"))
        }
        self.acceptor = acceptor
    }

    func close() {
        acceptor?.cancel()
        acceptor = nil
        listener?.close()
        listener = nil
    }

    private func acceptOne() -> Acceptor.Attempt {
        guard let listener else { return .empty }
        do {
            guard let accepted = try listener.accept() else { return .empty }
            onAccept?(accepted.0, accepted.1)
            return .accepted
        } catch {
            return .failed(error.errno, "\(error)")
        }
    }
}
