#if canImport(Glibc)
import Glibc
#endif
import LatchkeyControl
import LatchkeyDaemons
import LatchkeyEvents
import LatchkeyPosix
import LatchkeyTransport

/// `latchkey demo`: the air, a lock agent process and a phone agent process play one story.
/// Every step is checked against something outside the agent that claims it — the GPIO
/// line files, the air's own view of pending connects — and timed on the demo's clock.
public enum Demo {
    /// `probeCount`: how many authenticated commands step 5 times (its p50/p99 figures).
    /// `connectionIntervalMs`: the phone's `connection_interval_ms` (nil: its default).
    /// `idleIntervalMs`: the phone's `idle_connection_interval_ms` (nil: none); with it, a
    /// step times a command on the slowed link.
    public static func run(json: Bool, verbose: Bool, probeCount: Int = 20,
                           connectionIntervalMs: Double? = nil, idleIntervalMs: Double? = nil) -> DemoReport {
        var report = DemoReport(live: !json)
        let world: AgentStage
        var tuning = AgentStage.Tuning.demo
        tuning.phoneConnectionIntervalMs = connectionIntervalMs
        tuning.phoneIdleIntervalMs = idleIntervalMs
        do { world = try AgentStage(verbose: verbose, tuning: tuning) } catch {
            report.record("set up the stage", false, "\(error)")
            return report
        }
        defer { world.shutdown() }
        do { try play(world, &report, probeCount: probeCount, idleLink: idleIntervalMs != nil) } catch {
            report.record("story aborted", false, "\(error)")
        }
        return report
    }

    static func play(_ w: AgentStage, _ r: inout DemoReport, probeCount: Int, idleLink: Bool) throws(RuntimeError) {
        let obs = w.observer!
        func since(_ t: Instant) -> Double { (w.loop.now - t).milliseconds }
        func locked(after t: Instant) -> Bool {
            w.lockEvent(.lockEvent, since: t, where: { $0.field("state") == "locked" }) != nil
        }

        // 1. The air, a phone key, the lock.
        var t = w.loop.now
        let air = try w.startAir()
        var heard = false
        air.onLine = { if $0.contains("listening") { heard = true } }
        r.record("simulated air started", w.wait(.seconds(10)) { heard } && w.connectControl(), latencyMs: since(t))

        let (status, output) = try w.runTool(["keys", "add", "--state-dir", w.lockState, "--id", "1", "--name", "demo-phone",
                                              "--role", "admin", "--arrival", "--export-secret", w.keyFile])
        r.record("phone key provisioned on the lock", status == 0, output.split(separator: "\n").last.map(String.init) ?? "")
        guard status == 0 else { return }

        t = w.loop.now
        _ = try w.startLock()
        let lockUp = w.wait(.seconds(10)) { w.lockEvent(.lockAdvertising, since: t) != nil }
        r.record("lock agent started and advertising", lockUp, latencyMs: since(t),
                 "latch lines: unlock=\(obs.isHigh("motor_unlock")) lock=\(obs.isHigh("motor_lock"))")
        guard lockUp else { return }
        w.wait(.seconds(3)) { locked(after: t) || w.lockEvent(.lockStarted, since: t)?.0.field("state") == "locked" }

        // 2. The first link ever: the owner taps "unlock" while out of range; the command waits
        //    for the link, whose setup discovers the lock's services (nothing is cached yet).
        t = w.loop.now
        _ = try w.startPhone()
        let waiting = w.wait(.seconds(10)) { w.phoneEvent(.phoneConnectPending, since: t) != nil }
        r.record("phone agent started out of range, its connect request pending", waiting, latencyMs: since(t))
        guard waiting else { return }
        var firstReply = ""
        let tap = try ChildProcess(name: "phone-ctl", executable: w.executable,
                                   arguments: ["phone-ctl", "--state-dir", w.phoneState, "unlock"], loop: w.loop)
        tap.onLine = { firstReply = $0 }
        w.wait(.seconds(10)) { w.phoneEvent(.phoneCommandWaitsForLink, since: t) != nil }
        try timedArrival(w, r: &r, name: "first", step: "first link ever: the tapped unlock waits for the link, "
                             + "discovers the lock and drives the unlock line", accepted: "unlock")
        _ = w.wait(.seconds(5)) { !tap.isRunning }
        w.wait(.seconds(10)) { obs.rise(of: "motor_lock", since: t) != nil && locked(after: t) }
        if !firstReply.isEmpty && !firstReply.hasPrefix("ok") { r.record("phone-ctl unlock answered", false, firstReply) }

        t = w.loop.now
        _ = w.movePhone(to: AgentStage.away)
        let away = w.wait(.seconds(10)) {
            w.phoneEvent(.phoneAway, since: t) != nil && w.lockEvent(.lockDeparture, since: t) != nil
        }
        r.record("owner leaves: the lock sees the departure, the phone counts itself away", away, latencyMs: since(t),
                 "pending at the air: \(w.pendingConnects(of: w.phoneAddress)?.map(\.description) ?? [])")

        // 2b. A re-link alone asks nothing (a relay could make one): no arrival intent, no request.
        t = w.loop.now
        _ = w.movePhone(to: AgentStage.home)
        let bare = w.wait(.seconds(10)) { w.phoneEvent(.phoneLinked, since: t) != nil }
        w.wait(.seconds(1)) { false }
        let asked = w.phoneEvent(.phoneArrivalRequest, since: t) != nil
        r.record("a bare re-link asks for nothing", bare && !asked && !obs.isHigh("motor_unlock"), latencyMs: since(t),
                 "phone presence: \(w.phoneEvent(.phonePresence, since: t)?.0.field("to") ?? "?")")
        // Away again: the link lost, then the grace. Counted from the move, not from the step's
        // start: step 2's own "to away" can be read after that (the demo reads lines late).
        let left = w.loop.now
        _ = w.movePhone(to: AgentStage.away)
        w.wait(.seconds(10)) {
            w.phoneEvent(.phoneLinkLost, since: left) != nil
                && w.phoneEvent(.phonePresence, since: left, where: { $0.field("to") == "away" }) != nil
        }

        // 3. Coming home: the arrival intent (a geofence; here `phone-ctl arriving`), re-link,
        //    authenticated arrival unlock inside the intent's window, the actuator line moves.
        t = w.loop.now
        let intent = try w.runTool(["phone-ctl", "--state-dir", w.phoneState, "arriving"])
        r.record("arrival intent sent to the phone", intent.status == 0, intent.output.split(separator: "\n").last.map(String.init) ?? "")
        intoScanWindow(w, scanSince: emitted(w.phoneEvent(.phoneLinkLost, since: left)))
        try timedArrival(w, r: &r, name: "returning", step: "authenticated arrival unlock drives the unlock line",
                             accepted: "arrival-unlock")

        // 4. Auto-relock.
        t = w.loop.now
        let relocked = w.wait(.seconds(10)) { obs.rise(of: "motor_lock", since: t) != nil && locked(after: t) }
        r.record("auto-relock drives the lock line", relocked, latencyMs: since(t),
                 relocked ? "auto_relock_seconds: 4" : "line changes seen: \(obs.changes.map { "\($0.line)=\($0.high)@\(Int(($0.at - t).milliseconds))" })")

        // 5. The lock's own software path, measured: N authenticated commands.
        t = w.loop.now
        // Each command waits for the motor's 300 ms run: allow a second per command.
        let probe = try w.runTool(["phone-ctl", "--state-dir", w.phoneState, "probe", "\(probeCount)"],
                                  timeout: .seconds(30 + probeCount))
        let accepted = w.lockEvents(.lockCommandAccepted, since: t)
        let samples = accepted.compactMap { $0.field("actuator_ms").flatMap(Double.init) }
        // The disk's share of each (its decision made durable) and the rest of the path.
        let durable = accepted.compactMap { $0.field("durable_ms").flatMap(Double.init) }
        let rest = accepted.compactMap { e -> Double? in
            guard let all = e.field("actuator_ms").flatMap(Double.init),
                  let disk = e.field("durable_ms").flatMap(Double.init) else { return nil }
            return all - disk
        }
        let p50 = percentile(samples, 50), p99 = percentile(samples, 99)
        // A figure, not a verdict: performance is for benchmarks to compare, the story for
        // pass/fail. The target (p99 under 5 ms on the lock's own path) is printed beside it.
        let figures = p99.map { "p50 \(format3(p50!)) ms, p99 \(format3($0)) ms (target < 5 ms)" } ?? "no samples"
        r.record("\(probeCount) authenticated commands each move the actuator", probe.status == 0 && samples.count == probeCount,
                 latencyMs: since(t), "command received → actuator line: \(figures); the lock's loop: \(w.lockScheduling)")
        if let p50, let p99 {
            r.figure("command_to_actuator_p50_ms", p50)
            r.figure("command_to_actuator_p99_ms", p99)
        }
        if let d50 = percentile(durable, 50), let d99 = percentile(durable, 99),
           let r50 = percentile(rest, 50), let r99 = percentile(rest, 99) {
            r.figure("command_durable_write_p50_ms", d50)
            r.figure("command_durable_write_p99_ms", d99)
            r.figure("command_to_actuator_without_durable_write_p50_ms", r50)
            r.figure("command_to_actuator_without_durable_write_p99_ms", r99)
        }
        warmFigures(w, &r, since: t)
        w.wait(.seconds(3)) { !obs.isHigh("motor_unlock") && !obs.isHigh("motor_lock") }
        if idleLink { try idleCommand(w, &r) }

        // 6. SIGKILL the lock in the middle of an unlock; restart; it returns to the decided state.
        t = w.loop.now
        var unlockReply = ""
        let ctl = try ChildProcess(name: "phone-ctl", executable: w.executable,
                                   arguments: ["phone-ctl", "--state-dir", w.phoneState, "unlock"], loop: w.loop)
        ctl.onLine = { unlockReply = $0 }
        let moving = w.wait(.seconds(10)) { obs.rise(of: "motor_unlock", since: t) != nil }
        w.lock?.killHard()
        let killedAt = w.loop.now
        let midway = moving && obs.isHigh("motor_unlock")
        r.record("lock agent SIGKILLed while the bolt is moving to unlocked", midway,
                 "unlock line high at the kill: \(obs.isHigh("motor_unlock"))")
        _ = w.wait(.seconds(5)) { !ctl.isRunning }
        t = w.loop.now
        _ = try w.startLock()
        let recovered = w.wait(.seconds(10)) { w.lockEvent(.lockRecovering, since: t) != nil }
        let decided = w.wait(.seconds(5)) {
            w.lockEvent(.lockEvent, since: t, where: { $0.field("state") == "unlocked" }) != nil
        }
        r.record("restarted lock resumes the journalled unlock decision", recovered && decided, latencyMs: since(killedAt),
                 "phone-ctl said: \(unlockReply.isEmpty ? "(link lost before the answer)" : unlockReply)")
        // The system (the air, like the kernel) keeps the link for ~2 s without its owner: a
        // lock back within that adopts it with its subscriptions; later, the phone re-links.
        let adopted = { w.lockEvent(.lockRestored, since: t, where: { ($0.field("centrals") ?? "0") != "0" }) != nil }
        let backWithPhone = w.wait(.seconds(10)) { adopted() || w.phoneEvent(.phoneLinked, since: t) != nil }
        let how = adopted() ? "link adopted by the restarted lock (restored with its subscription"
            + (w.lockEvent(.lockBindingRestored, since: t) != nil ? " and its phone's key)" : ")")
            : w.phoneEvent(.phoneLinked, since: t) != nil ? "re-linked by itself" : "neither adopted nor re-linked"
        r.record("phone is linked to the restarted lock again", backWithPhone, latencyMs: since(t), how)
        let safe = w.wait(.seconds(10)) { obs.rise(of: "motor_lock", since: t) != nil && locked(after: t) }
        r.record("and relocks: the door is not left unlocked", safe, latencyMs: since(t))

        // 7. Someone inside unlocks with the button, then the owner leaves: the lock locks behind them.
        t = w.loop.now
        try obs.pull("button", high: true)
        w.wait(.milliseconds(200)) { false }  // the button is held for a moment (and debounced by the lock)
        try obs.pull("button", high: false)
        let buttonUnlock = w.wait(.seconds(5)) { obs.rise(of: "motor_unlock", since: t) != nil }
        r.record("inside button unlocks", buttonUnlock, latencyMs: since(t))
        w.wait(.seconds(2)) { !obs.isHigh("motor_unlock") }
        t = w.loop.now
        _ = w.movePhone(to: AgentStage.away)
        let departed = w.wait(.seconds(15)) {
            w.lockEvent(.lockDeparture, since: t) != nil && obs.rise(of: "motor_lock", since: t) != nil
                && locked(after: t)  // the bolt has arrived, not just started moving
        }
        r.record("phone leaves: the lock locks behind its owner", departed, latencyMs: since(t),
                 "departure_grace_seconds: 2")
        let phoneAway = w.wait(.seconds(10)) { w.phoneEvent(.phoneAway, since: t) != nil }
        r.record("phone counts its owner away", phoneAway, latencyMs: since(t))

        // 8. SIGKILL the phone while away; its pending connect is held below it; the next return re-links.
        w.phone?.killHard()
        let held = w.pendingConnects(of: w.phoneAddress)?.contains(w.lockAddress) ?? false
        r.record("phone agent SIGKILLed while away: the air still holds its connect request", held)
        t = w.loop.now
        _ = try w.startPhone()
        let restarted = w.wait(.seconds(10)) {
            w.phoneEvent(.phoneStarted, since: t, where: { $0.field("presence") == "away" }) != nil
        }
        r.record("restarted phone remembers it is away", restarted, latencyMs: since(t))
        t = w.loop.now
        let again = try w.runTool(["phone-ctl", "--state-dir", w.phoneState, "arriving"])
        _ = w.movePhone(to: AgentStage.home)
        let back = w.wait(.seconds(10)) { obs.rise(of: "motor_unlock", since: t) != nil } && again.status == 0
        r.record("the next return (with its intent) re-links and unlocks", back && w.phoneEvent(.phoneLinked, since: t) != nil,
                 latencyMs: since(t))
        w.wait(.seconds(10)) { obs.rise(of: "motor_lock", since: t) != nil }

        // 9. Every rise of the unlock line had a decision behind it. A decision interrupted by
        //    the SIGKILL moves the line twice — before the kill (its "accepted" line died with
        //    the process) and again when the restarted lock resumes it from the journal.
        let rises = obs.changes.filter { $0.line == "motor_unlock" && $0.high }.count
        let commands = w.lockEvents(.lockCommandAccepted, since: .zero)
            .filter { ["unlock", "arrival-unlock", "unlock-with-timeout"].contains($0.field("op") ?? "") }.count
        let resumed = w.lockEvents(.lockRecovering, since: .zero).filter { $0.field("operation") == "unlock" }.count
        let button = w.lockEvents(.lockEvent, since: .zero).filter { ($0.field("kind") ?? "").contains("unlock by button") }.count
        let decisions = commands + 2 * resumed + button
        r.record("no unlock that nobody decided", rises <= decisions,
                 "\(rises) unlock-line rises; decisions: \(commands) commands, \(resumed) resumed after a crash, \(button) button")
    }
}
