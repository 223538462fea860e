#if canImport(Glibc)
import Glibc
#endif
import LatchkeyControl
import LatchkeyLock
import LatchkeyMQTT
import LatchkeyPosix
import LatchkeySim
import LatchkeySimDisk
import LatchkeyStore
import LatchkeyTransport

/// What the trace hash is made of: every step, every agent event's name and time, every
/// rise of the unlock line, every PDU on the air (`fold`: the challenges, nonces and sealed
/// frames the agents drew); and the last lines of it, for a failure's context.
final class Trace {
    private(set) var hash: UInt64 = 0xCBF2_9CE4_8422_2325
    private(set) var recent: [String] = []
    private var next = 0
    static let kept = 40

    func add(_ line: String, _ at: Instant) {
        for byte in line.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        withUnsafeBytes(of: at.nanoseconds) { for b in $0 { hash = (hash ^ UInt64(b)) &* 0x100_0000_01B3 } }
        let text = HouseholdClock.format(at) + " " + line
        if recent.count < Self.kept { recent.append(text) } else { recent[next] = text; next = (next + 1) % Self.kept }
    }

    /// Octets into the hash only (no line): what crossed the air.
    func fold(_ bytes: [UInt8]) {
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
    }

    var lastLines: [String] { Array(recent[next...] + recent[..<next]) }
}

/// A violation planted on purpose, to show that the judge catches it (`--self-test`).
public enum PlantedViolation: String, CaseIterable, Sendable {
    /// The unlock line rises with no decision behind it.
    case unexplainedPulse = "pulse"
    /// One decision drives the line twice.
    case duplicatedDecision = "twice"
    /// A decision the bridge was told about is gone after a restart.
    case missingDecision = "missing"
    /// The household revokes a guest's key, but the lock never hears of it.
    case revokedKeySuccess = "revoked"
    /// Memory kept and never given back.
    case growth = "growth"
    /// An event on the broker with a sequence number already delivered.
    case brokerOrder = "order"
    /// A stranger's write is accepted by the lock.
    case strangerSuccess = "stranger"
    /// A relay fast enough to fit the arrival bound (the residual risk: only distance
    /// bounding would stop it) opens the door for the owner's phone far away.
    case relaySuccess = "relay"
    /// The lock's radio refuses every request from a restart on and never takes again: the
    /// owner's phone cannot re-link when it comes back.
    case endlessRefusal = "refusal"
    /// An event on the broker two past the lock's last: the one between was never trimmed.
    case brokerGap = "gap"
    /// The lock restarts with its log trimmed to four times the configured retention: the
    /// log holds more than it should.
    case retentionBreach = "retention"

    public var expected: Violation.Rule {
        switch self {
        case .unexplainedPulse: .unexplainedRise
        case .duplicatedDecision: .decisionTwice
        case .missingDecision: .decisionLost
        case .revokedKeySuccess: .revokedKeySucceeded
        case .growth: .growth
        case .brokerOrder: .brokerOrder
        case .strangerSuccess, .relaySuccess: .intruderSucceeded
        case .endlessRefusal: .relinkTooSlow
        case .brokerGap: .brokerGap
        case .retentionBreach: .retention
        }
    }
}

/// One household's life and faults over `days`, drawn from `seed`, judged after every step.
public struct HouseholdRun {
    public var seed: UInt64
    public var days: Int
    public var plant: PlantedViolation?
    /// Where the state directories go (tmpfs is what the timings assume).
    public var scratch: String
    /// The lock's `lock.log_retention_events` (nil: its default, 10,000): a small one makes a
    /// short run trim the log, and the broker's gaps depend on it.
    public var logRetention: Int?

    public init(seed: UInt64, days: Int, plant: PlantedViolation? = nil, scratch: String = "/dev/shm",
                logRetention: Int? = nil) {
        self.seed = seed; self.days = days; self.plant = plant; self.scratch = scratch; self.logRetention = logRetention
    }

    public struct Report: Sendable {
        public var seed: UInt64
        public var days: Int
        public var steps: Int
        public var counts: [String: Int]
        public var violations: [Violation]
        public var traceHash: UInt64
        public var diskTraceHash: UInt64
        public var relinkMax: Duration?
        public var relinkCount: Int
        /// Re-links that waited for the owner's phone's back-off after its disk came back.
        public var relinkAfterBackoffMax: Duration?
        public var relinkAfterBackoffCount: Int
        /// At each sample: the lock's store files, the bytes allocated and not freed (what
        /// growth is judged on), the process's data size.
        public var samples: [Sample]
        public var brokerEvents: Int, brokerDuplicates: Int, brokerGaps: Int, brokerGapsExplained: Int
        public var logCountMax: Int
        /// The lock's log's retention, and how many events it had trimmed at the end (its last
        /// sequence number less the events it holds; nil when the lock was down).
        public var logRetention: Int
        public var logTrimmed: UInt64?
        /// Commands a phone sent first after one of its restarts (each counter judged).
        public var firstCommandsAfterRestart: Int
        public var rises: Int
        public var lastTrace: [String]
        public var wallSeconds: Double
        /// The process's CPU time (user and system) over the run.
        public var cpuSeconds: Double
    }

    public struct Sample: Sendable {
        public var day: Int, store: Int64, allocated: Int64, data: Int64
    }

    enum Action {
        case depart, comeHome, arrivalIntent, tap(LockOperationType), button, door(Duration), mqtt(LockOperationType)
        case guestPairs, revokeGuest, guestComes, guestTap, guestLeaves
        case killLock, killOwner, killGuest, killBridge, powerCut(Duration), diskSpell(DiskFault, Duration), dropLink
        case wallStep(Int64), brokerOutage(Duration), stranger(Duration), relay(Duration, Duration),
             radioRefusal(lock: Bool, Duration), sample
        case phonePowerCut(guest: Bool, Duration), phoneDiskSpell(guest: Bool, DiskFault, Duration), guestRadioRefusal(Duration)
        case plant
    }

    /// Each day's life and faults, drawn from the seed and the day (a day's draws do not
    /// depend on what happened before: the same seed, the same script).
    func script(day: Int, samplingEvery: Int) -> [(Instant, Action)] {
        var r = SplitMix64(seed: seed ^ (UInt64(day) &* 0xD1B5_4A32_D192_ED03))
        let dayStart = Instant(nanoseconds: Int64(day) * 86_400_000_000_000)
        func at(_ hours: Double, jitterMinutes: Int = 0) -> Instant {
            let j = jitterMinutes > 0 ? Int64(r.next(in: 0...(2 * jitterMinutes))) - Int64(jitterMinutes) : 0
            return dayStart + .nanoseconds(Int64(hours * 3_600_000_000_000) + j * 60_000_000_000)
        }
        func anytime(from: Double = 0, to: Double = 24) -> Instant {
            dayStart + .nanoseconds(Int64(from * 3_600_000_000_000)
                                    + Int64(r.next(in: 0...Int((to - from) * 3_600_000))) * 1_000_000)
        }
        func minutes(_ range: ClosedRange<Int>) -> Duration { .seconds(60 * Int64(r.next(in: range))) }
        var out: [(Instant, Action)] = []
        // The fortnight away: once a year, from a day drawn from the seed.
        var trip = SplitMix64(seed: seed ^ 0x7219)
        let tripStart = days >= 60 ? trip.next(in: 30...(days - 20)) : -100
        let awayAllDay = day > tripStart && day < tripStart + 14
        if day == tripStart { out.append((at(9, jitterMinutes: 60), .depart)) }
        if day == tripStart + 14 {
            let back = at(17, jitterMinutes: 60)
            out.append((back - minutes(2...6), .arrivalIntent))
            out.append((back, .comeHome))
        }
        if !awayAllDay && day != tripStart {
            // Out to work and back, and an evening errand on some days.
            let leave = at(8, jitterMinutes: 45), back = at(17.5, jitterMinutes: 60)
            out.append((leave - minutes(1...3), .tap(.unlock)))
            out.append((leave - .seconds(40), .door(.seconds(8))))
            out.append((leave, .depart))
            out.append((back - minutes(2...6), .arrivalIntent))
            out.append((back, .comeHome))
            out.append((back + .seconds(20), .door(.seconds(10))))
            out.append((back + minutes(1...2), .tap(.lock)))
            if r.next(through: 1) == 0 {
                let errand = at(19.5, jitterMinutes: 60)
                out.append((errand, .depart))
                out.append((errand + minutes(30...90) - minutes(2...4), .arrivalIntent))
                out.append((errand + minutes(30...90), .comeHome))
            }
            for _ in 0..<2 { out.append((anytime(from: 6.5, to: 7.9), .tap(r.next(through: 1) == 0 ? .unlock : .lock))) }
            for _ in 0..<2 { out.append((anytime(from: 20.5, to: 23), .tap(r.next(through: 1) == 0 ? .unlock : .lock))) }
        }
        for _ in 0..<2 { out.append((anytime(from: 6, to: 23), .button)) }
        for _ in 0..<4 { out.append((anytime(from: 6, to: 23), .door(.seconds(Int64(r.next(in: 3...60)))))) }
        for _ in 0..<3 { out.append((anytime(), .mqtt(r.next(through: 2) == 0 ? .unlock : .lock))) }
        // The month: a guest whose new phone pairs through the month's pairing window on its
        // second day, revoked on its twentieth, whose phone keeps trying afterwards.
        let dayOfMonth = day % 30
        if dayOfMonth == 1 { out.append((at(10), .guestPairs)) }
        if (2...28).contains(dayOfMonth) {
            let comes = anytime(from: 11, to: 15)
            out.append((comes, .guestComes))
            out.append((comes + .seconds(30), .guestTap))
            out.append((comes + minutes(20...90), .guestLeaves))
        }
        if dayOfMonth == 20 { out.append((at(16), .revokeGuest)) }
        // Faults.
        // A refusal spell of 2 to 60 s on the lock's radio from its first kill of the day, and
        // on the owner's phone's from the phone's: the restarted agent's first requests
        // (advertising, the pending connection, timing) are refused.
        let lockKill = anytime()
        out.append((lockKill, .killLock))
        out.append((lockKill, .radioRefusal(lock: true, .seconds(Int64(r.next(in: 2...60))))))
        if let near = out.randomElement(using: &r) { out.append((near.0 + .milliseconds(Int64(r.next(in: 0...600))), .killLock)) }
        let ownerKill = anytime()
        out.append((ownerKill, .killOwner))
        out.append((ownerKill, .radioRefusal(lock: false, .seconds(Int64(r.next(in: 2...60))))))
        if r.next(through: 2) == 0 { out.append((anytime(), .killGuest)) }
        if r.next(through: 2) == 0 { out.append((anytime(), .killBridge)) }
        for _ in 0..<2 { out.append((anytime(), .dropLink)) }
        for _ in 0..<2 {
            let s = Int64(r.next(in: 60...7200))
            out.append((anytime(), .wallStep(r.next(through: 1) == 0 ? s : -s)))
        }
        // A stranger in range on one day in three, for one to ten minutes.
        if r.next(through: 2) == 0 { out.append((anytime(), .stranger(minutes(1...10)))) }
        // A relay at work while the owner is out, one day in five, 60-150 ms each way (the
        // arrival bound is 150 ms challenge to command: two crossings put it over).
        if r.next(through: 4) == 0 {
            out.append((anytime(from: 11, to: 14), .relay(minutes(2...8), .milliseconds(Int64(r.next(in: 60...150))))))
        }
        if day % 7 == 3 { out.append((anytime(), .powerCut(.seconds(Int64(r.next(in: 30...600)))))) }
        if day % 7 == 5 { out.append((anytime(), .brokerOutage(minutes(60...480)))) }
        if day % 10 == 6 { out.append((anytime(), .diskSpell(.diskFull, minutes(60...360)))) }
        if day % 15 == 9 { out.append((anytime(), .diskSpell(.readOnly, minutes(60...360)))) }
        if (day + 1) % samplingEvery == 0 { out.append((dayStart + .seconds(86_399), .sample)) }
        if let plant, day == plantDay(plant) { out.append((at(13, jitterMinutes: 30), .plant)) }
        out += phoneFaults(day: day)
        return out.sorted { $0.0 < $1.0 }
    }

    /// Every violation is planted on day 3 (the month's guest paired on day 1): a self-test
    /// run of 5 days sees it and what follows.
    func plantDay(_ plant: PlantedViolation) -> Int { 3 }

    /// Plays the household and returns what the judge found.
    public func run(progress: ((String) -> Void)? = nil) throws -> Report {
        let started = Self.monotonicSeconds(), startedCPU = Self.cpuSeconds()
        var template = Array((scratch + "/latchkey-sim-XXXXXX").utf8CString)
        guard mkdtemp(&template) != nil else { throw RuntimeError("cannot make a directory in \(scratch) (mkdtemp)") }
        let directory = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer { RuntimeDirectory.remove(directory) }
        let judge = HouseholdJudge()
        let trace = Trace()
        let world = try HouseholdWorld(seed: seed, directory: directory, judge: judge, trace: trace, logRetention: logRetention)
        world.startLock()
        world.startPhone(guest: false)
        world.startBridge()
        world.loop.advance(by: .seconds(5))
        // Monthly samples; weekly in runs shorter than three months, daily in those under four weeks.
        let samplingEvery = days >= 90 ? 30 : days >= 28 ? 7 : 1
        var step = 0
        var leak: [[UInt8]] = []
        var samples: [Sample] = []
        for day in 0..<days {
            for (time, action) in script(day: day, samplingEvery: samplingEvery) {
                step += 1
                judge.step = step
                if time > world.loop.now { world.loop.advance(to: time) }
                trace.add("step \(step) \(action)", world.loop.now)
                perform(action, world, judge, &leak, &samples, day: day)
                world.loop.run()
                judge.check(now: world.loop.now, journal: world.lock?.journal, relinkPossible: world.relinkPossible)
            }
            if day % 30 == 29 { progress?("day \(day + 1): \(step) steps, \(judge.violations.count) violations") }
        }
        world.loop.advance(by: .seconds(60))
        judge.check(now: world.loop.now, journal: world.lock?.journal, relinkPossible: world.relinkPossible)
        judge.checkGrowth(now: world.loop.now)
        withExtendedLifetime(leak) {}
        var trimmed: UInt64?
        if let log = world.lock?.log {
            do { trimmed = try (log.lastSequence() ?? 0) - UInt64(log.count()) } catch {
                world.count("log's trimming not read (the lock's log unreadable)")
            }
        }
        return Report(seed: seed, days: days, steps: step, counts: world.counts, violations: judge.violations,
                      traceHash: trace.hash, diskTraceHash: world.disk.traceHash,
                      relinkMax: judge.relinkTimes.max(), relinkCount: judge.relinkTimes.count,
                      relinkAfterBackoffMax: judge.relinkTimesAfterBackoff.max(),
                      relinkAfterBackoffCount: judge.relinkTimesAfterBackoff.count, samples: samples,
                      brokerEvents: judge.brokerEvents, brokerDuplicates: judge.brokerDuplicates,
                      brokerGaps: judge.brokerGaps, brokerGapsExplained: judge.brokerGapsExplained,
                      logCountMax: judge.logCountMax, logRetention: world.logRetention, logTrimmed: trimmed,
                      firstCommandsAfterRestart: judge.firstCommandsAfterRestart, rises: judge.risesSeen, lastTrace: trace.lastLines,
                      wallSeconds: Self.monotonicSeconds() - started, cpuSeconds: Self.cpuSeconds() - startedCPU)
    }

    private func perform(_ action: Action, _ world: HouseholdWorld, _ judge: HouseholdJudge, _ leak: inout [[UInt8]],
                         _ samples: inout [Sample], day: Int) {
        var r = SplitMix64(seed: seed ^ UInt64(judge.step) &* 0x2545_F491_4F6C_DD1D)
        switch action {
        case .depart: if world.ownerHome { world.move(owner: false) }
        case .comeHome: if !world.ownerHome { world.move(owner: true) }
        case .arrivalIntent: world.arrivalIntent()
        case .tap(let op): if world.ownerHome { world.tap(op, guest: false) }
        case .button: world.pressButton()
        case .door(let d): world.cycleDoor(openFor: d)
        case .mqtt(let op): world.mqttCommand(op)
        case .guestPairs: world.guestPairs()
        case .revokeGuest: world.revokeGuest()
        case .guestComes: world.moveGuest(home: true)
        case .guestTap: if world.guestHome { world.tap(.unlock, guest: true) }
        case .guestLeaves: world.moveGuest(home: false)
        case .killLock:
            world.killLock(powerCut: false)
            world.count("lock killed")
            world.loop.schedule(after: .milliseconds(Int64(r.next(in: 100...5000)))) { [weak world] in world?.startLock() }
        case .killOwner:
            world.killPhone(guest: false)
            world.count("owner phone killed")
            world.loop.schedule(after: .seconds(Int64(r.next(in: 1...30)))) { [weak world] in world?.startPhone(guest: false) }
        case .killGuest:
            world.killPhone(guest: true)
            world.count("guest phone killed")
            world.loop.schedule(after: .seconds(Int64(r.next(in: 1...30)))) { [weak world] in world?.startPhone(guest: true) }
        case .killBridge:
            world.killBridge()
            world.count("bridge killed")
            world.loop.schedule(after: .seconds(5)) { [weak world] in world?.startBridge() }
        case .powerCut(let down): world.powerCut(downFor: down)
        case .diskSpell(let fault, let spell): world.diskSpell(fault, spell: spell)
        case .dropLink: world.dropLink()
        case .wallStep(let s): world.stepWallClock(by: s, correctedAfter: .seconds(60 * Int64(r.next(in: 5...120))))
        case .brokerOutage(let d): world.brokerOutage(for: d)
        case .stranger(let d): world.strangerVisit(for: d, seed: r.next())
        case .relay(let d, let latency): world.relayVisit(for: d, seed: r.next(), latency: latency)
        case .radioRefusal(let onLock, let spell): world.refuseRadio(lock: onLock, for: spell)
        case .phonePowerCut(let isGuest, let down): world.phonePowerCut(guest: isGuest, downFor: down)
        case .phoneDiskSpell(let isGuest, let fault, let spell): world.phoneDiskSpell(guest: isGuest, fault, spell: spell)
        case .guestRadioRefusal(let spell): world.refusePhoneRadio(guest: true, for: spell)
        case .sample:
            if plant == .growth && world.leaking {
                // Planted: 48 MiB kept and never given back, every sample after the first.
                leak.append([UInt8](repeating: 1, count: 48 << 20))
            }
            let store = world.storeBytes, allocated = ProcessMemory.allocatedBytes
            samples.append(Sample(day: day + 1, store: store, allocated: allocated, data: ProcessMemory.dataBytes))
            judge.sample(at: world.loop.now, store: store, heap: allocated)
            if let log = world.lock?.log {
                // Judged against the configured retention, not the one the log was opened with.
                do { judge.logSize(try log.count(), retention: world.logRetention, at: world.loop.now) } catch {
                    world.count("log size not sampled (the lock's log unreadable)")
                }
            }
        case .plant:
            switch plant {
            case .unexplainedPulse?:
                judge.rise(at: world.loop.now)
            case .duplicatedDecision?:
                world.doubleNextRise = true
            case .revokedKeySuccess?:
                // The judge hears of a revocation that the lock never gets: the guest's next
                // unlock succeeds.
                if let id = world.guestKey { judge.revoke(id, at: world.loop.now) }
            case .growth?:
                world.leaking = true
            case .missingDecision?:
                judge.plantMissingDecision()
                world.killLock(powerCut: false)
                world.startLock()
            case .brokerOrder?:
                world.publishStaleEvent()
            case .strangerSuccess?:
                // The stranger's next answer is reported as accepted, as a lock that let it in would.
                world.strangerLies = true
                world.strangerVisit(for: .seconds(60), seed: r.next())
            case .brokerGap?:
                world.publishEventSkippingOne()
            case .endlessRefusal?:
                world.refuseRadio(lock: true, for: .seconds(3650 * 86_400))
                world.killLock(powerCut: false)
                world.startLock()
            case .relaySuccess?:
                world.plantRelay(seed: r.next())
            case .retentionBreach?:
                world.plantedLogRetention = world.logRetention * 4
                world.killLock(powerCut: false)
                world.startLock()
            case nil:
                break
            }
        }
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    static func monotonicSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

extension HouseholdWorld {
    /// Planted: a rogue publisher's event numbered two past the last the lock's log holds.
    func publishEventSkippingOne() {
        guard let log = lock?.log else { count("gap plant found the lock down"); return }
        do {
            guard let last = try log.lastSequence() else { count("gap plant found the lock's log empty"); return }
            publishRogue(clientID: "skipper", text: "{\"seq\":\(last + 2),\"summary\":\"skipped\"}")
        } catch {
            count("gap plant could not read the lock's log")
        }
    }

    /// Planted: someone republishes the first event on the lock's events topic.
    func publishStaleEvent() {
        publishRogue(clientID: "replayer", text: "{\"seq\":1,\"summary\":\"replayed\"}")
    }

    /// A plant that cannot be made is counted; the self-test then fails for the rule it missed.
    private func publishRogue(clientID: String, text: String) {
        let rogue = broker.connection(MQTTEndpoint(host: "sim", port: 1, clientID: clientID))
        rogue.connect()
        loop.run()
        do { _ = try rogue.publish(MQTTMessage(topic: Self.prefix + "/events", text: text)) } catch {
            count("plant not published (\(clientID))")
        }
        loop.run()
    }
}
