import LatchkeyPosix

/// A local control socket for an agent (`<state_directory>/control.sock`, mode 0600 via the
/// 0700 state directory): one text command per message, one or more text replies, the
/// last one starting with "ok" or "error". Only processes that can reach the state
/// directory — the service user and root — can talk to it.
final class LocalControlServer {
    typealias Handler = (_ words: [String], _ reply: @escaping (String) -> Void) -> Void
    private let loop: PosixEventLoop
    private let listener: SeqPacketListener
    private var watch: Watch?
    private var clients: [ObjectIdentifier: PacketChannel] = [:]
    private let handler: Handler

    init(path: String, loop: PosixEventLoop, handler: @escaping Handler) throws(SystemError) {
        self.loop = loop
        self.handler = handler
        listener = try SeqPacketListener(path: path)
        watch = loop.watch(fd: listener.fileDescriptor, events: .readable) { [weak self] _ in self?.acceptAll() }
    }

    private func acceptAll() {
        while let socket = try? listener.accept() {
            let channel = PacketChannel(socket: socket, loop: loop)
            let id = ObjectIdentifier(channel)
            clients[id] = channel
            channel.onMessage = { [weak self, weak channel] bytes in
                guard let self, let channel else { return }
                let words = String(decoding: bytes, as: UTF8.self).split(separator: " ").map(String.init)
                self.handler(words) { [weak channel] line in channel?.send(Array(line.utf8)) }
            }
            channel.onClose = { [weak self] _ in self?.clients[id] = nil }
        }
    }

    func close() {
        watch?.cancel()
        for c in clients.values { c.close() }
        listener.close()
    }
}
