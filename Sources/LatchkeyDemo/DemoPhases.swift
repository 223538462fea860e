import LatchkeyControl
import LatchkeyEvents
import LatchkeyTransport

/// The demo's timed phases, each as its own figure: what a user feels between the phone
/// reaching the lock and the bolt moving, split where the phone's events and the GPIO line
/// files say each step ended. Every time is CLOCK_MONOTONIC: an event's own `t_ms` (when the
/// agent emitted it, not when the demo read its line) and an edge as the lock stamped it.
extension Demo {
    /// When the agent emitted the event (its `t_ms`); when the demo read it, if it has none.
    static func emitted(_ event: (EventLine, Instant)?) -> Instant? {
        guard let (line, read) = event else { return nil }
        guard let ms = line.field("t_ms").flatMap(Double.init) else { return read }
        return Instant(nanoseconds: Int64((ms * 1_000_000).rounded()))
    }

    /// Moves the phone into range (its command, or its arrival intent, already waiting) and
    /// times in range → link (`phone.linked`) → GATT ready (`phone.gatt_ready`: at once with
    /// a valid cache) → the sealed write (`phone.command_sent`: after the MTU exchange, the
    /// cache check and the challenge read) → the unlock line's rise. `name` is `first` or
    /// `returning`: `link_to_unlock_<name>_ms` is the total from the link.
    static func timedArrival(_ w: AgentStage, r: inout DemoReport, name: String, step: String,
                             accepted op: String) throws(RuntimeError) {
        let obs = w.observer!
        let t = w.loop.now
        _ = w.movePhone(to: AgentStage.home)
        let linked = w.wait(.seconds(10)) { w.phoneEvent(.phoneLinked, since: t) != nil }
        let link = emitted(w.phoneEvent(.phoneLinked, since: t))
        r.record(name == "first" ? "phone in range: links for the first time" : "phone in range: re-links by itself",
                 linked, latencyMs: link.map { ($0 - t).milliseconds })
        let unlocked = w.wait(.seconds(10)) {
            obs.rise(of: "motor_unlock", since: t) != nil
                && w.lockEvent(.lockCommandAccepted, since: t, where: { $0.field("op") == op }) != nil
        }
        let accepted = w.lockEvent(.lockCommandAccepted, since: t, where: { $0.field("op") == op })
        guard unlocked, let link, let rise = obs.rise(of: "motor_unlock", since: t)?.at,
              let write = emitted(w.phoneEvent(.phoneCommandSent, since: t, where: { $0.field("op") == op })) else {
            r.record(step, false, "no \(op) reached the unlock line")
            return
        }
        let ready = emitted(w.phoneEvent(.phoneGattReady, since: t)) ?? link
        // (figure name, what it covers, ms)
        let phases: [(String, String, Double)] = [
            ("link_to_ready", "link → GATT ready", (ready - link).milliseconds),
            ("ready_to_write", "→ sealed write", (write - ready).milliseconds),
            ("write_to_unlock_line", "→ unlock line", (rise - write).milliseconds),
        ]
        let total = (rise - link).milliseconds
        let lockSaw = accepted.map { "; lock saw command→line in \($0.0.field("actuator_ms") ?? "?") ms" } ?? ""
        r.record(step, accepted != nil, latencyMs: (rise - t).milliseconds,
                 "link → unlock line \(format1(total)) ms: "
                    + phases.map { "\($0.1) \(format1($0.2))" }.joined(separator: " ") + lockSaw)
        r.figure(name == "first" ? "in_range_to_link_first_ms" : "in_range_to_link_ms", (link - t).milliseconds)
        for (phase, _, ms) in phases { r.figure("\(name)_\(phase)_ms", ms) }
        r.figure("link_to_unlock_\(name)_ms", total)
    }

    /// Waits until the middle of the phone's next auto-connect scan window: that scan restarts
    /// at the link's loss (`scanSince`) and listens the first 30 of every 60 ms (the kernel's
    /// default). Moved whenever the steps before happened to end, the re-link figure measured
    /// where in that cycle the move fell (12 or 50 ms, bimodal, for one and the same code).
    static func intoScanWindow(_ w: AgentStage, scanSince lost: Instant?) {
        guard let lost else { return }  // no loss seen (the wait for it timed out): moved at once
        let scan = ConnectionParameters.kernelDefault
        let since = (w.loop.now - lost).nanoseconds
        let intervals = since / scan.scanInterval.nanoseconds + 1
        let target = lost + .nanoseconds(intervals * scan.scanInterval.nanoseconds) + scan.scanWindow / 2
        w.wait(target - w.loop.now) { false }
    }

    /// With `--idle-interval-ms`: the link left alone until the phone slows it, then an unlock
    /// on the slowed link (`idle_command_to_unlock_line_ms`, from its `phone.command_started`),
    /// then the auto-relock, so the story goes on from a locked door.
    static func idleCommand(_ w: AgentStage, _ r: inout DemoReport) throws(RuntimeError) {
        let obs = w.observer!
        var t = w.loop.now
        let slowed = w.wait(.seconds(10)) {
            w.phoneEvent(.phoneLinkInterval, since: t, where: { $0.field("why") == "idle" }) != nil
        }
        let slowedAt = emitted(w.phoneEvent(.phoneLinkInterval, since: t, where: { $0.field("why") == "idle" }))
        r.record("the idle link slows down", slowed, latencyMs: slowedAt.map { ($0 - t).milliseconds },
                 w.phoneEvent(.phoneLinkInterval, since: t).map { "to \($0.0.field("ms") ?? "?") ms" } ?? "")
        guard slowed else { return }
        w.wait(.milliseconds(500)) { false }  // the update's instant: six slow events
        t = w.loop.now
        let ctl = try w.runTool(["phone-ctl", "--state-dir", w.phoneState, "unlock"])
        let moved = w.wait(.seconds(5)) { obs.rise(of: "motor_unlock", since: t) != nil }
        let started = emitted(w.phoneEvent(.phoneCommandStarted, since: t, where: { $0.field("op") == "unlock" }))
        guard moved, ctl.status == 0, let started, let rise = obs.rise(of: "motor_unlock", since: t)?.at else {
            r.record("an unlock on the slowed link", false, ctl.output)
            return
        }
        let fast = w.wait(.seconds(2)) {
            w.phoneEvent(.phoneLinkInterval, since: t, where: { $0.field("why") == "busy" }) != nil
        }
        r.record("an unlock on the slowed link", fast, latencyMs: (rise - started).milliseconds,
                 "command start → unlock line; the fast interval asked for beside it: \(fast)")
        r.figure("idle_command_to_unlock_line_ms", (rise - started).milliseconds)
        w.wait(.seconds(10)) { obs.rise(of: "motor_lock", since: t) != nil }
        w.wait(.seconds(3)) { !obs.isHigh("motor_lock") }
    }

    /// The warm link's figures from the probe's unlocks: each command's start
    /// (`phone.command_started`: its challenge read, or its write when a challenge read
    /// ahead is held) → its sealed write (`phone.command_sent`) → the lock receiving it (the
    /// line's rise less the lock's own `actuator_ms`) → the next rise of the unlock line.
    /// `warm_held_challenge_share` is the share of them that found a challenge held.
    static func warmFigures(_ w: AgentStage, _ r: inout DemoReport, since t: Instant) {
        let obs = w.observer!
        let rises = obs.changes.filter { $0.line == "motor_unlock" && $0.high && $0.at >= t }.map(\.at)
        let accepted = w.lockEvents.filter { $0.1 >= t && $0.0.name == EventKind.lockCommandAccepted.name && $0.0.field("op") == "unlock" }
        var toLine: [Double] = [], toWrite: [Double] = [], writeToLock: [Double] = [], lockToLine: [Double] = []
        var held = 0, started = 0
        let phone = w.phoneEvents.filter { $0.1 >= t }
        for (i, event) in phone.enumerated() where event.0.name == EventKind.phoneCommandStarted.name && event.0.field("op") == "unlock" {
            guard let begin = emitted(event), let rise = rises.first(where: { $0 >= begin }) else { continue }
            started += 1
            if event.0.field("challenge") == "held" { held += 1 }
            toLine.append((rise - begin).milliseconds)
            guard let write = emitted(phone[(i + 1)...].first(where: { $0.0.name == EventKind.phoneCommandSent.name })) else { continue }
            toWrite.append((write - begin).milliseconds)
            // The lock's accepted line for this rise: the first emitted at or after it.
            if let lock = accepted.first(where: { (emitted($0) ?? .zero) >= rise }),
               let actuator = lock.0.field("actuator_ms").flatMap(Double.init) {
                writeToLock.append((rise - write).milliseconds - actuator)
                lockToLine.append(actuator)
            }
        }
        if let p50 = percentile(toLine, 50), let p99 = percentile(toLine, 99) {
            r.figure("warm_command_to_unlock_line_ms", p50)
            r.figure("warm_command_to_unlock_line_p99_ms", p99)
        }
        if let p50 = percentile(toWrite, 50) { r.figure("warm_command_to_write_ms", p50) }
        if let p50 = percentile(writeToLock, 50) { r.figure("warm_write_to_lock_ms", p50) }
        if let p50 = percentile(lockToLine, 50) { r.figure("warm_lock_to_unlock_line_ms", p50) }
        if started > 0 { r.figure("warm_held_challenge_share", Double(held) / Double(started)) }
    }
}
