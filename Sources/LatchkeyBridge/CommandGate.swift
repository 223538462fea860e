import FoundationEssentials
import LatchkeyTransport

/// A command from the broker, as `<prefix>/set` carries it (Home Assistant's
/// `command_template` makes it): `{"action":"unlock","ts":1732451234.5,"code":"1234","id":"x"}`.
public struct BrokerCommand: Equatable, Sendable {
    public var action: String
    /// Seconds since the Unix epoch when it was sent.
    public var timestamp: Double?
    public var code: String?
    /// Echoed on the result topic, so a sender can match its answer.
    public var id: String?
}

/// Why a command from the broker is not carried out.
public enum CommandRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    case retained
    case malformed(String)
    case noTimestamp
    case stale(ageSeconds: Double)
    case notEnabled(String)
    case wrongCode
    case duplicate
    case rateLimited(perMinute: Int, retryInSeconds: Int)

    public var description: String {
        switch self {
        case .retained: "a retained command is never carried out (it was cleared)"
        case .malformed(let why): "malformed command: \(why)"
        case .noTimestamp: "the command carries no timestamp (ts), so its age is unknown"
        case .stale(let age): "stale command: sent \(Int(age.rounded())) s from the bridge's clock, beyond the bound"
        case .notEnabled(let action): "'\(action)' is not enabled for this lock (mqtt.yaml `commands`)"
        case .wrongCode: "wrong code"
        case .duplicate: "duplicate: this command (same action, ts and id) was received already and is not carried out twice"
        case .rateLimited(let n, let wait):
            "rate limited: at most \(n) commands a minute for this lock (mqtt.yaml `commands_per_minute`); "
                + "try again in \(wait) s"
        }
    }
}

/// The checks between a broker message and the lock (docs/CONFIGURATION.md, "Commands"):
/// retained messages never run, a command must say when it was sent and be younger than the
/// bound (the broker's MQTT 5 expiry already drops what waited longer than its sender allowed),
/// only the actions this lock enables run, and `unlock` wants the code when one is set.
public struct CommandGate: Sendable {
    public var enabled: Set<BridgeAction>
    public var maximumAge: Duration
    public var unlockCode: String?

    public init(enabled: Set<BridgeAction>, maximumAge: Duration, unlockCode: String?) {
        self.enabled = enabled; self.maximumAge = maximumAge; self.unlockCode = unlockCode
    }

    private struct Payload: Decodable {
        var action: String
        var ts: Double?
        var code: String?
        var id: String?
    }

    /// The command to run, or why not. `now` is the bridge's wall clock, Unix seconds.
    public func check(_ message: [UInt8], retained: Bool, now: Double) -> Result<(BridgeAction, BrokerCommand), CommandRefusal> {
        let command: BrokerCommand
        switch Self.parse(message, retained: retained, now: now, maximumAge: maximumAge) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let c): command = c
        }
        guard let action = BridgeAction(rawValue: command.action) else {
            return .failure(.malformed("unknown action '\(command.action)'"))
        }
        guard enabled.contains(action) else { return .failure(.notEnabled(action.rawValue)) }
        if action == .unlock, let expected = unlockCode {
            guard let given = command.code, Self.sameCode(given, expected) else { return .failure(.wrongCode) }
        }
        return .success((action, command))
    }

    /// A fresh, unretained command with its action, or why not (the checks every command topic shares).
    public static func parse(_ message: [UInt8], retained: Bool, now: Double,
                             maximumAge: Duration) -> Result<BrokerCommand, CommandRefusal> {
        if retained { return .failure(.retained) }
        let command: BrokerCommand
        do {
            let p = try JSONDecoder().decode(Payload.self, from: Data(message))
            command = BrokerCommand(action: p.action.lowercased(), timestamp: p.ts, code: p.code, id: p.id)
        } catch {
            return .failure(.malformed("expected {\"action\":...,\"ts\":...}"))
        }
        guard let ts = command.timestamp, ts.isFinite else { return .failure(.noTimestamp) }
        let age = now - ts
        let bound = Double(maximumAge.components.seconds) + Double(maximumAge.components.attoseconds) / 1e18
        guard abs(age) <= bound else { return .failure(.stale(ageSeconds: age)) }
        return .success(command)
    }

    /// The `id` of a payload that failed the checks, when it still names one (for its answer).
    public static func commandID(_ message: [UInt8]) -> String? {
        struct OnlyID: Decodable { var id: String? }
        return (try? JSONDecoder().decode(OnlyID.self, from: Data(message)))?.id  // nil: nothing to echo
    }

    /// Compares without stopping at the first difference.
    static func sameCode(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var diff = UInt8(x.count == y.count ? 0 : 1)
        for i in 0..<max(x.count, y.count) {
            diff |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0)
        }
        return diff == 0
    }
}

/// What a broker message costs the lock is bounded (docs/SECURITY.md, "The network door"):
/// at most `perMinute` commands in any 60 s — each one that reaches the lock is an fsync
/// and a motor run, and each code guess a try — and a command seen once (its action, `ts`
/// and `id`) is not carried out again while its `ts` is inside the age bound, after which
/// the gate refuses it as stale anyway. Time is the bridge loop's (monotonic); `ts` is the
/// sender's.
public struct CommandFlood: Sendable {
    public let perMinute: Int
    private var recent: [Instant] = []
    private var seen: [String: Double] = [:]

    public init(perMinute: Int) { self.perMinute = max(1, perMinute) }

    /// Counts one message arriving at `now`; a refusal when it is over the rate.
    public mutating func admit(at now: Instant) -> CommandRefusal? {
        recent.removeAll { now - $0 >= .seconds(60) }
        guard recent.count < perMinute else {
            let wait = recent.first.map { (.seconds(60) - (now - $0)).components.seconds + 1 } ?? 60
            return .rateLimited(perMinute: perMinute, retryInSeconds: Int(wait))
        }
        recent.append(now)
        return nil
    }

    /// Records `command` (already found fresh); `.duplicate` when it was seen before.
    /// `wallNow` and `maximumAge` say which remembered commands the age bound refuses by now.
    public mutating func firstTime(_ command: BrokerCommand, wallNow: Double, maximumAge: Duration) -> CommandRefusal? {
        let bound = Double(maximumAge.components.seconds) + Double(maximumAge.components.attoseconds) / 1e18
        seen = seen.filter { abs(wallNow - $0.value) <= bound }
        guard let ts = command.timestamp else { return nil }
        let identity = "\(command.action)|\(ts.bitPattern)|\(command.id ?? "")"
        guard seen[identity] == nil else { return .duplicate }
        seen[identity] = ts
        return nil
    }
}
