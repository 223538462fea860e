import LatchkeyPosix

/// A local control socket for an agent (`<state_directory>/control.sock`, mode 0600 via the
/// 0700 state directory): one text command per message, one or more text replies, the
/// last one starting with "ok" or "error". Only processes that can reach the state
/// directory — the service user and root, and with `bridge_user:` the agent's group, through
/// which that user connects — can talk to it; each connection's peer is identified when it
/// connects (`ControlPeerIdentification`), and the handler decides what that peer may do.
package final class LocalControlServer {
    package typealias Handler = (_ words: [String], _ peer: ControlPeer, _ reply: @escaping (String) -> Void) -> Void
    private let loop: PosixEventLoop
    private let listener: SeqPacketListener
    private var acceptor: Acceptor?
    private var clients: [ObjectIdentifier: PacketChannel] = [:]
    private let handler: Handler
    private let peers: ControlPeerIdentification

    package init(path: String, loop: PosixEventLoop, peers: ControlPeerIdentification = .kernel,
         handler: @escaping Handler) throws(SystemError) {
        self.loop = loop
        self.handler = handler
        self.peers = peers
        listener = try SeqPacketListener(path: path)
        acceptor = Acceptor(fileDescriptor: listener.fileDescriptor, loop: loop) { [weak self] in self?.acceptOne() ?? .empty }
    }

    /// Each pause after an accept error (out of descriptors): the daemon logs it.
    package var onAcceptPause: ((String, Duration) -> Void)? {
        get { acceptor?.onPause }
        set { acceptor?.onPause = newValue }
    }

    private func acceptOne() -> Acceptor.Attempt { listener.acceptOne(serve) }

    private func serve(_ socket: SeqPacketSocket) {
        let peer = peers.peer(of: socket)
        let channel = PacketChannel(socket: socket, loop: loop)
        let id = ObjectIdentifier(channel)
        clients[id] = channel
        channel.onMessage = { [weak self, weak channel] bytes in
            guard let self, let channel else { return }
            let words = String(decoding: bytes, as: UTF8.self).split(separator: " ").map(String.init)
            self.handler(words, peer) { [weak channel] line in channel?.send(Array(line.utf8)) }
        }
        channel.onClose = { [weak self] _ in self?.clients[id] = nil }
    }

    package func close() {
        acceptor?.cancel()
        for c in clients.values { c.close() }
        listener.close()
    }
}
