#if canImport(Glibc)
import Glibc
#endif
import LatchkeyControl
import LatchkeyEvents
import LatchkeyPosix
import LatchkeyTransport

/// `latchkey demo --mqtt`: the lock agent on the simulated radio and GPIO, Debian's
/// `mosquitto` on 127.0.0.1 (a free port, a scratch directory), `latchkey mqtt` between them,
/// and `mosquitto_sub` / `mosquitto_pub` as Home Assistant. Every step is checked outside the
/// process that claims it: the GPIO line files, and what the broker delivered to the observer.
public enum MQTTDemo {
    /// Debian's broker and its clients (packages mosquitto, mosquitto-clients).
    struct Programs {
        var broker = "/usr/sbin/mosquitto", subscriber = "/usr/bin/mosquitto_sub", publisher = "/usr/bin/mosquitto_pub"
        var missing: [String] { [broker, subscriber, publisher].filter { access($0, X_OK) != 0 } }
    }
    /// What to install when the broker or its clients are missing.
    public static let install = "sudo apt-get install mosquitto mosquitto-clients"

    public static func run(json: Bool, verbose: Bool) -> DemoReport { run(json: json, verbose: verbose, programs: Programs()) }

    static func run(json: Bool, verbose: Bool, programs: Programs) -> DemoReport {
        var report = DemoReport(live: !json)
        guard programs.missing.isEmpty else {
            report.record("Debian's mosquitto broker and clients are installed", false,
                          "not found: \(programs.missing.joined(separator: ", ")); install them with `\(install)`, "
                            + "then run `latchkey demo --mqtt` again")
            return report
        }
        let stage: MQTTStage
        do { stage = try MQTTStage(verbose: verbose, programs: programs) } catch {
            report.record("set up the stage", false, "\(error)")
            return report
        }
        defer { stage.shutdown() }
        do { try play(stage, &report) } catch {
            report.record("story aborted", false, "\(error)")
        }
        return report
    }

    static func play(_ s: MQTTStage, _ r: inout DemoReport) throws(RuntimeError) {
        let w = s.world
        let obs = w.observer!
        func since(_ t: Instant) -> Double { (w.loop.now - t).milliseconds }

        // 1. The lock, with a key of its own for the bridge (lock.yaml's bridge_key_id).
        var t = w.loop.now
        let air = try w.startAir()
        var heard = false
        air.onLine = { if $0.contains("listening") { heard = true } }
        r.record("simulated air started", w.wait(.seconds(10)) { heard }, latencyMs: since(t))
        let key = try w.runTool(["keys", "add", "--state-dir", w.lockState, "--id", "\(MQTTStage.bridgeKey)",
                                 "--name", "mqtt-bridge", "--role", "user",
                                 // Required by `keys add`; the bridge never holds a secret (the lock's socket is its proof).
                                 "--export-secret", w.directory + "/bridge.key"])
        r.record("the bridge's key added to the lock (bridge_key_id: \(MQTTStage.bridgeKey))", key.status == 0,
                 key.output.split(separator: "\n").last.map(String.init) ?? "")
        guard key.status == 0 else { return }
        t = w.loop.now
        _ = try w.startLock()
        let lockUp = w.wait(.seconds(10)) { w.lockEvent(.lockAdvertising, since: t) != nil }
        r.record("lock agent started", lockUp, latencyMs: since(t))
        guard lockUp else { return }
        w.wait(.seconds(3)) { w.lockEvent(.lockEvent, since: t, where: { $0.field("state") == "locked" }) != nil }

        // 2. The broker, an observer standing in for Home Assistant, the bridge.
        t = w.loop.now
        let brokerUp = try s.startBroker()
        r.record("mosquitto listening on 127.0.0.1:\(s.port)", brokerUp, latencyMs: since(t))
        guard brokerUp else { return }
        let observing = try s.startObserver()
        r.record("observer subscribed (mosquitto_sub, a persistent session)", observing)
        guard observing else { return }
        t = w.loop.now
        try s.startBridge()
        let discovered = w.wait(.seconds(10)) {
            MQTTStage.discoveryTopics.allSatisfy { !s.payloads($0).isEmpty } && s.payloads(s.topic("state")).last == "LOCKED"
        }
        let lockConfig = s.payloads(MQTTStage.discoveryTopics[0]).last ?? ""
        r.record("Home Assistant discovery seen: lock, door, problem, last event; state LOCKED", discovered
                    && lockConfig.contains("\"optimistic\":false"), latencyMs: since(t),
                 "\(s.received.filter { $0.topic.hasPrefix("homeassistant/") }.count) retained config messages")
        guard discovered else { return }

        // 3. Unlock and lock from MQTT, each checked on the GPIO line.
        for (action, line) in [("unlock", "motor_unlock"), ("lock", "motor_lock")] {
            w.wait(.seconds(3)) { !obs.isHigh("motor_unlock") && !obs.isHigh("motor_lock") }
            t = w.loop.now
            let sent = try s.command(action, id: "demo-\(action)")
            let moved = w.wait(.seconds(10)) { obs.rise(of: line, since: t) != nil && s.result("demo-\(action)") != nil }
            let lineMs = obs.rise(of: line, since: t).map { ($0.at - t).milliseconds }
            let answer = s.result("demo-\(action)") ?? "no answer"
            r.record("\(action) from MQTT drives the \(line) line", sent && moved && answer.contains("\"ok\":true"),
                     latencyMs: lineMs, "result: \(answer)")
            if let lineMs { r.figure("mqtt_\(action)_to_line_ms", lineMs) }
        }
        w.wait(.seconds(3)) { !obs.isHigh("motor_unlock") && !obs.isHigh("motor_lock") }

        // 4. A stale command and a retained one never move the lock; the retained one is cleared.
        t = w.loop.now
        _ = try s.command("unlock", id: "demo-stale", age: 60)
        let stale = w.wait(.seconds(10)) { s.result("demo-stale")?.contains("stale command") == true }
        _ = try s.command("unlock", id: "demo-retained", retained: true)
        let retained = w.wait(.seconds(10)) {
            s.result("demo-retained")?.contains("retained") == true
                && s.received.contains { $0.topic == s.topic("set") && $0.payload.isEmpty }  // the clearing message
        }
        w.wait(.milliseconds(500)) { false }  // a line that moved late would show now
        let still = obs.rise(of: "motor_unlock", since: t) == nil
        r.record("a stale command (60 s old) is refused", stale && still, s.result("demo-stale") ?? "no answer")
        r.record("a retained command is refused and cleared", retained && still, s.result("demo-retained") ?? "no answer")

        // 5. The broker stops; the lock moves twice meanwhile; the broker returns: every event once, in order.
        let settled = try s.settleObserver()
        s.stopBroker()
        r.record("broker stopped", !s.brokerRunning, settled ? "" : "the observer had not caught up before the stop")
        for action in ["unlock", "lock"] {
            _ = try w.runTool(["lock-ctl", "--state-dir", w.lockState, "bridge", action])
            w.wait(.seconds(3)) { obs.rise(of: action == "unlock" ? "motor_unlock" : "motor_lock", since: t) != nil }
            w.wait(.seconds(3)) { !obs.isHigh("motor_unlock") && !obs.isHigh("motor_lock") }
        }
        let last = try s.lastEventSequence()
        t = w.loop.now
        let back = try s.startBroker()
        let caughtUp = w.wait(.seconds(20)) { s.sequences().last == last }
        let seqs = s.sequences()
        r.record("broker restarted: every audit event delivered once, in order", back && caughtUp && last > 0
                    && seqs == Array(1...max(1, last)), latencyMs: since(t),
                 "events 1...\(last); the observer got \(seqs.count) (\(seqs.first.map(String.init) ?? "-")...\(seqs.last.map(String.init) ?? "-"))")

        // 6. The owner revokes the bridge's key while everything runs: the next unlock from MQTT is
        // refused, the result topic says why, and the unlock line never rises.
        w.wait(.seconds(3)) { !obs.isHigh("motor_unlock") && !obs.isHigh("motor_lock") }
        let revoke = try w.runTool(["keys", "revoke", "--state-dir", w.lockState, "\(MQTTStage.bridgeKey)"])
        t = w.loop.now
        _ = try s.command("unlock", id: "demo-revoked")
        let refused = w.wait(.seconds(10)) { s.result("demo-revoked") != nil }
        w.wait(.milliseconds(500)) { false }  // a line that moved late would show now
        let answer = s.result("demo-revoked") ?? "no answer"
        r.record("the bridge's key revoked (latchkey keys revoke): an unlock from MQTT is refused, the line never rises",
                 revoke.status == 0 && refused && answer.contains("\"ok\":false") && answer.contains("revoked")
                    && obs.rise(of: "motor_unlock", since: t) == nil,
                 "result: \(answer)")
    }
}
