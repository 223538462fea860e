import LatchkeyPosix
import Logging

/// What a daemon's control socket (`<state_directory>/control.sock`) answers, one command per
/// message: `status`, the application layer's (`ApplicationControl`), then the agent's own. An
/// unknown command gets one error line naming every command, wrong arguments the usage. The
/// MQTT bridge's user (`ControlPeer.bridge`) gets only `peerCommands`; any other peer that is
/// not the agent's user or root gets nothing. A refusal is an error line and a
/// `*.control_refused` warning (`onPeerRefused`), and changes nothing (docs/SECURITY.md,
/// "Control sockets").
package struct ControlDispatcher {
    /// The agent's commands: false when the first word is not one of them.
    package typealias AgentCommands = (_ words: [String], _ reply: @escaping (String) -> Void) -> Bool

    package let application: ApplicationControl
    /// The agent's part of `status` ("presence=home linked=true", "lock=locked ...").
    package let agentStatus: () -> String
    package let agentCommands: AgentCommands
    /// The agent's commands, for the unknown-command line.
    package let agentUsage: String
    /// The first words the bridge's user may send: what the bridge needs, nothing that pairs,
    /// suspends, or acts as a key the caller picks.
    package var peerCommands: [String] = ["status"]
    /// Each command refused to a peer: who, and the command's first word.
    package var onPeerRefused: ((ControlPeer, String) -> Void)?

    package init(application: ApplicationControl, agentStatus: @escaping () -> String,
                 agentCommands: @escaping AgentCommands, agentUsage: String) {
        self.application = application; self.agentStatus = agentStatus
        self.agentCommands = agentCommands; self.agentUsage = agentUsage
    }

    package func handle(_ words: [String], peer: ControlPeer = .owner, reply: @escaping (String) -> Void) {
        switch peer {
        case .owner: break
        case .bridge:
            guard let first = words.first, !peerCommands.contains(first) else { break }
            reply("error `\(Self.shown(first))` is only for the agent's own user and root; the bridge's user, "
                  + "\(peer.who), may use " + peerCommands.joined(separator: ", "))
            onPeerRefused?(peer, Self.shown(first))
            return
        case .stranger:
            reply("error \(peer.who) is not this agent's user, root, or its bridge_user: every command is refused")
            onPeerRefused?(peer, Self.shown(words.first ?? ""))
            return
        }
        if words.first == "status" {
            guard words.count == 1 else { reply("error usage: status (no arguments)"); return }
            reply("ok \(agentStatus()) \(application.status)")
            return
        }
        if application.handle(words, reply: reply) || agentCommands(words, reply) { return }
        let what = words.first.map { "\"\($0)\"" } ?? "(empty)"
        reply("error unknown command \(what); use status, \(agentUsage), \(ApplicationControl.usage)")
    }

    /// A peer's word as logged: at most 32 characters, so a refused peer cannot flood the journal.
    package static func shown(_ word: String) -> String { word.count > 32 ? String(word.prefix(32)) + "…" : word }

    /// Listens on `<stateDirectory>/control.sock` and answers there — or, when the state
    /// directory is on a read-only file system, on `ControlSocketPath.readOnlyFallback` (said
    /// as a warning); returns the server and the path. `access` opens the socket to
    /// `bridge_user` (a warning when that user is not in the socket's group) and tells `peers`
    /// which uid is the bridge. An accept error (out of descriptors) pauses the socket and is
    /// logged as a warning.
    package func serve(in stateDirectory: String, loop: PosixEventLoop, logger: Logger,
               peers: ControlPeerIdentification = .kernel,
               access: ControlSocketAccess = .owner) throws(RuntimeError) -> (LocalControlServer, String) {
        var peers = peers
        if case .bridge(let user) = access {
            // The agent's own user already has every command: naming it would make the bridge the owner.
            guard user.uid != peers.agentUserID else {
                var error = user.site
                error.message += " is this agent's own user, who has every command already: the MQTT bridge must "
                    + "run as a user of its own (latchkey-mqtt)"
                throw RuntimeError.configuration("\(error)")
            }
            peers.bridgeUserID = user.uid
        }
        var path = ControlSocketPath.primary(stateDirectory)
        let server: LocalControlServer
        do {
            server = try listen(on: path, loop: loop, peers: peers)
        } catch where RuntimeDirectory.isOnReadOnlyFileSystem(stateDirectory) == true {
            path = ControlSocketPath.readOnlyFallback(stateDirectory)
            do {
                try RuntimeDirectory.makeAll(ControlSocketPath.directory(of: path))
                server = try listen(on: path, loop: loop, peers: peers)
            } catch {
                throw RuntimeError("control socket: \(stateDirectory) is on a read-only file system and \(path) "
                                   + "cannot be made either: \(error)")
            }
            logger.warning("control socket: \(stateDirectory) is on a read-only file system; listening on \(path)")
        } catch { throw RuntimeError("control socket in \(stateDirectory): \(error)") }
        server.onAcceptPause = { failure, delay in
            logger.warning("control socket: \(failure); accepting again in \(delay)")
        }
        do throws(RuntimeError) { try access.apply(socket: path, directory: ControlSocketPath.directory(of: path)) } catch {
            server.close()
            throw error
        }
        if let why = access.unreachable(socket: path) { logger.warning("control socket: \(why)") }
        return (server, path)
    }

    private func listen(on path: String, loop: PosixEventLoop, peers: ControlPeerIdentification) throws(SystemError)
        -> LocalControlServer
    {
        try LocalControlServer(path: path, loop: loop, peers: peers) { words, peer, reply in
            handle(words, peer: peer, reply: reply)
        }
    }
}
