/// The bridge's side of one agent's control socket: requests (one command, replies until a
/// line starting "ok" or "error") and one long-lived `follow` stream. `ControlSocketLink`
/// is the Unix socket; tests put an in-process agent behind the same text protocol.
public protocol AgentLink: AnyObject {
    /// Sends `command`; `line` gets each reply before the final one, `done` the final one
    /// (false with the reason when it was an error or the agent could not be reached).
    func request(_ command: String, line: @escaping (String) -> Void, done: @escaping (_ ok: Bool, _ final: String) -> Void)
    /// Sends `command` on a connection kept open: `line` gets every reply, `closed` once
    /// when the agent goes away (or cannot be reached).
    func stream(_ command: String, line: @escaping (String) -> Void, closed: @escaping (String) -> Void)
}

/// `key=value` words of a control reply ("ok lock=locked door=closed ...").
func replyFields(_ line: String) -> [String: String] {
    var fields: [String: String] = [:]
    for word in line.split(separator: " ") {
        guard let eq = word.firstIndex(of: "=") else { continue }
        fields[String(word[..<eq])] = String(word[word.index(after: eq)...])
    }
    return fields
}
