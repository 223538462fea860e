import LatchkeyKernelSockets
import LatchkeyPosix
import LatchkeyTransport

/// The phone's side of a link the kernel made from the auto-connect list: an ATT socket
/// connecting to it, opened as soon as Device Connected arrives (before the kernel drops the
/// unused link, ~2 s). It owns the sockets still connecting and their writable watches; a
/// connected one goes to the transport (`onConnected`), a failed one is closed and reported.
final class LinkClaims {
    private let sockets: any LinkSocketProvider
    private let loop: PosixEventLoop
    /// ATT sockets connecting, by peer (fd and its writable watch).
    private var claims: [BluetoothAddress: (fd: CInt, watch: Watch)] = [:]

    /// A claim that was still connecting connected: the link is up on its socket.
    var onConnected: ((CInt, BluetoothAddress) -> Void)?
    /// A claim that was still connecting failed (its socket is closed).
    var onFailure: ((KernelError) -> Void)?

    init(sockets: any LinkSocketProvider, loop: PosixEventLoop) {
        self.sockets = sockets
        self.loop = loop
    }

    /// Whether a socket to `peer` is connecting.
    func isClaiming(_ peer: BluetoothAddress) -> Bool { claims[peer] != nil }

    enum Outcome {
        /// Connected at once (a link that is up usually is): the link's socket.
        case connected(CInt)
        /// Connecting: `onConnected` or `onFailure` follows.
        case connecting
        case failed(KernelError)
    }

    /// Opens the ATT channel from `local` to `peer`.
    func claim(_ peer: BluetoothAddress, from local: BluetoothAddress) -> Outcome {
        do {
            let (fd, connected) = try sockets.claim(from: local, to: peer)
            if connected { return .connected(fd) }
            let watch = loop.watch(fd: fd, events: .writable) { [weak self] _ in self?.finished(peer) }
            claims[peer] = (fd, watch)
            return .connecting
        } catch {
            return .failed(KernelError(error.code, "could not open the ATT channel to \(peer): \(error.message)",
                                       errno: error.errno))
        }
    }

    /// Closes every socket still connecting.
    func cancelAll() {
        for claim in claims.values {
            claim.watch.cancel()
            Syscalls.close(claim.fd)
        }
        claims = [:]
    }

    private func finished(_ peer: BluetoothAddress) {
        guard let claim = claims.removeValue(forKey: peer) else { return }
        claim.watch.cancel()
        if let errno = sockets.connectError(claim.fd) {
            Syscalls.close(claim.fd)
            onFailure?(KernelError(.system, "could not open the ATT channel to \(peer): \(errno)", errno: errno))
            return
        }
        onConnected?(claim.fd, peer)
    }
}
