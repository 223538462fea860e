import LatchkeyPosix
import Logging

/// What a daemon's control socket (`<state_directory>/control.sock`) answers, one command
/// per message: `status`, then the application layer's commands (`ApplicationControl`:
/// suspend, resume, execution), then the agent's own (`PhoneControlCommands`,
/// `LockControlCommands`). A command nobody knows gets one error line naming every
/// command; a known one with wrong arguments gets its usage. Neither changes anything.
struct ControlDispatcher {
    /// The agent's commands: false when the first word is not one of them.
    typealias AgentCommands = (_ words: [String], _ reply: @escaping (String) -> Void) -> Bool

    let application: ApplicationControl
    /// The agent's part of `status` ("presence=home linked=true", "lock=locked ...").
    let agentStatus: () -> String
    let agentCommands: AgentCommands
    /// The agent's commands, for the unknown-command line.
    let agentUsage: String

    func handle(_ words: [String], reply: @escaping (String) -> Void) {
        if words.first == "status" {
            guard words.count == 1 else { reply("error usage: status (no arguments)"); return }
            reply("ok \(agentStatus()) \(application.status)")
            return
        }
        if application.handle(words, reply: reply) || agentCommands(words, reply) { return }
        let what = words.first.map { "\"\($0)\"" } ?? "(empty)"
        reply("error unknown command \(what); use status, \(agentUsage), \(ApplicationControl.usage)")
    }

    /// Listens on `<stateDirectory>/control.sock` and answers there — or, when the state
    /// directory is on a read-only file system, on `ControlSocketPath.readOnlyFallback` (said
    /// as a warning); returns the server and the path. An accept error (out of descriptors)
    /// pauses the socket and is logged as a warning.
    func serve(in stateDirectory: String, loop: PosixEventLoop, logger: Logger) throws(RuntimeError)
        -> (LocalControlServer, String)
    {
        var path = ControlSocketPath.primary(stateDirectory)
        let server: LocalControlServer
        do {
            server = try listen(on: path, loop: loop)
        } catch where RuntimeDirectory.isOnReadOnlyFileSystem(stateDirectory) == true {
            path = ControlSocketPath.readOnlyFallback(stateDirectory)
            do {
                try RuntimeDirectory.makeAll(ControlSocketPath.directory(of: path))
                server = try listen(on: path, loop: loop)
            } catch {
                throw RuntimeError("control socket: \(stateDirectory) is on a read-only file system and \(path) "
                                   + "cannot be made either: \(error)")
            }
            logger.warning("control socket: \(stateDirectory) is on a read-only file system; listening on \(path)")
        } catch { throw RuntimeError("control socket in \(stateDirectory): \(error)") }
        server.onAcceptPause = { failure, delay in
            logger.warning("control socket: \(failure); accepting again in \(delay)")
        }
        return (server, path)
    }

    private func listen(on path: String, loop: PosixEventLoop) throws(SystemError) -> LocalControlServer {
        try LocalControlServer(path: path, loop: loop) { words, reply in handle(words, reply: reply) }
    }
}
