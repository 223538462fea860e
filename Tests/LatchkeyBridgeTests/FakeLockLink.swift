import LatchkeyTransport
@testable import LatchkeyBridge

/// A lock agent behind the control-socket text protocol, in process: what
/// BridgeControlCommands answers, with an audit log the test appends to.
final class FakeLockLink: AgentLink {
    let loop: any EventLoop
    var events: [(UInt64, String)] = []
    var lockState = "locked"
    var actuator = "enabled"
    var reachable = true
    var commands: [String] = []
    var page = 200
    /// Every request sent, in order.
    var requests: [String] = []
    /// Wrong codes the bridge reported (`bridge wrong-code`).
    var wrongCodes = 0
    static let lockedOut = "key 9 is locked out after failed attempts"
    private var followers: [(String) -> Void] = []
    private var closers: [(String) -> Void] = []

    init(loop: any EventLoop) { self.loop = loop }

    func log(_ summary: String) {
        let seq = (events.last?.0 ?? 0) + 1
        events.append((seq, "{\"seq\":\(seq),\"summary\":\"\(summary)\"}"))
        let followers = followers
        for f in followers { loop.execute { f("logged \(seq)") } }
    }

    /// The agent stops: follow streams close.
    func stop() {
        reachable = false
        let closers = closers
        followers = []; self.closers = []
        for c in closers { loop.execute { c("the agent closed the connection") } }
    }

    func request(_ command: String, line: @escaping (String) -> Void, done: @escaping (Bool, String) -> Void) {
        let words = command.split(separator: " ").map(String.init)
        requests.append(command)
        loop.execute { [self] in
            guard reachable else { return done(false, "error cannot reach the agent") }
            switch words.first {
            case "events":
                let from = UInt64(words[1])!
                let rows = events.filter { $0.0 >= from }.prefix(page)
                for r in rows { line("event \(r.0) \(r.1)") }
                done(true, "ok events next=\((rows.last?.0 ?? from - 1) + 1) last=\(events.last?.0 ?? 0)")
            case "state":
                done(true, "ok lock=\(lockState) door=closed actuator=\(actuator)")
            case "bridge" where words[1] == "wrong-code":
                // The lock's per-key count (LockAgent.bridgeWrongCode): the third locks the key out.
                commands.append(command)
                guard wrongCodes < 3 else { return done(false, "error \(Self.lockedOut)") }
                wrongCodes += 1
                done(true, "ok counted key=9" + (wrongCodes == 3 ? " locked_out_seconds=15" : ""))
            case "bridge" where wrongCodes >= 3:
                commands.append(command)
                done(false, "error \(Self.lockedOut)")
            case "bridge":
                commands.append(command)
                lockState = words[1] == "lock" ? "locked" : "unlocked"
                log("\(words[1])ed by the bridge's key")
                done(true, "ok accepted decision=\(commands.count)")
            default:
                done(false, "error unknown command")
            }
        }
    }

    func stream(_ command: String, line: @escaping (String) -> Void, closed: @escaping (String) -> Void) {
        loop.execute { [self] in
            guard reachable else { return closed("cannot reach the agent") }
            followers.append(line)
            closers.append(closed)
            line("ok following last=\(events.last?.0 ?? 0)")
        }
    }
}
