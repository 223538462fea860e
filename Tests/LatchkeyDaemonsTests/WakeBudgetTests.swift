import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyManagers
@testable import LatchkeyDaemons
@testable import LatchkeySettings
import LatchkeyTransport
import Testing

/// The wake budget on the agents as the daemons wire them (AgentGates): a suspended
/// background agent woken by an event is timed until the whole job it marked is done —
/// the phone from the re-formed link through the GATT setup, the arrival request and the
/// lock's report that the bolt moved; the lock from the command's write through the
/// journal and the actuator's movement. On the manual loop a callback takes no time, so
/// every millisecond measured is marked work.
@Suite struct WakeBudgetTests {
    private static func settings(budget: Duration) -> ExecutionSettings {
        var s = ExecutionSettings()
        s.mode = .background
        s.wakeBudget = budget
        return s
    }

    private static func events(_ sink: RecordingEventSink, from mark: Int, named name: String) -> [AgentEvent] {
        sink.events.dropFirst(mark).filter { $0.name == name }
    }

    private static func milliseconds(_ event: AgentEvent?) -> Double? { event?.field("ms").flatMap { Double($0) } }

    /// The owner leaves, the phone agent is suspended in background mode, the owner comes
    /// home: the phone is woken by the link. Returns the phone's timeline from the suspension.
    private func comeHomeSuspended(_ h: Household, budget: Duration) throws -> [AgentEvent] {
        try h.settle()
        let gates = try AgentGates.phone(h.phone!, lock: Household.lockAddress, settings: Self.settings(budget: budget),
                                         loop: h.loop, events: h.phoneEvents, logger: .quiet)
        h.air.setPosition(100, of: Household.phoneAddress)
        #expect(h.advance(until: { h.phone?.presence == .away && h.count(EventKind.lockDeparture.name, in: h.lockEvents) == 1 },
                          limit: .seconds(10)))
        // The arrival intent (a geofence) reaches the phone before it is suspended.
        h.phone?.arrivalIntent()
        gates.control.suspend()
        let mark = h.phoneEvents.events.count
        h.air.setPosition(1, of: Household.phoneAddress)
        #expect(h.advance(until: { !Self.events(h.phoneEvents, from: mark, named: EventKind.phoneAppWakeHandled.name).isEmpty },
                          limit: .seconds(20)))
        #expect(h.lock?.controller.lockState == .unlocked, "the arrival unlock went through")
        withExtendedLifetime(gates) {}
        return Array(h.phoneEvents.events.dropFirst(mark))
    }

    /// The phone's wake-up is one job: woken once, by the link, and timed to the lock's report.
    private func expectOneJob(_ timeline: [AgentEvent]) {
        let names = timeline.map(\.name)
        #expect(names.filter { $0 == EventKind.phoneAppWoken.name }.count == 1, "one wake-up for the whole job: \(names)")
        #expect(timeline.first { $0.name == EventKind.phoneAppWoken.name }?.field("event") == "connected \(Household.lockAddress)")
        let order = [EventKind.phoneAppWoken.name, EventKind.phoneLinked.name, EventKind.phoneGattReady.name, EventKind.phoneCommandSent.name, EventKind.phoneCommandOk.name,
                     EventKind.phoneLockStatus.name, EventKind.phoneAppWakeHandled.name]
        let positions = order.map { name in names.firstIndex(of: name) ?? -1 }
        #expect(!positions.contains(-1) && positions == positions.sorted(), "\(names)")
        #expect(timeline.first { $0.name == EventKind.phoneCommandSent.name }?.field("op") == "\(LockOperation.arrivalUnlock)")
        // The status subscription follows the command (it needs the session the command
        // opens): the lock answers it with the bolt moving (0x81), then reports it unlocked.
        #expect(timeline.contains { $0.name == EventKind.phoneLockStatus.name && $0.field("lock_state") == "2" })
    }

    @Test func aSlowArrivalOverTheBudgetIsReportedAsAWarning() throws {
        let h = try Household(motorRun: .seconds(3))
        let timeline = try comeHomeSuspended(h, budget: .seconds(2))
        expectOneJob(timeline)
        let over = timeline.filter { $0.name == EventKind.phoneAppWakeOverBudget.name }
        #expect(over.count == 1)
        #expect(over.first?.field("event") == "connected \(Household.lockAddress)")
        #expect(over.first?.field("budget_ms").flatMap { Double($0) } == 2000)
        let handled = timeline.first { $0.name == EventKind.phoneAppWakeHandled.name }
        #expect((Self.milliseconds(handled) ?? 0) >= 3000, "the motor's 3 s are part of the job")
        let warned = try #require(timeline.firstIndex { $0.name == EventKind.phoneAppWakeOverBudget.name })
        let reported = try #require(timeline.firstIndex { $0.name == EventKind.phoneLockStatus.name && $0.field("lock_state") == "2" })
        #expect(warned < reported, "warned at the budget, while still waiting for the bolt")
    }

    @Test func aQuickArrivalIsMeasuredWholeWithoutAWarning() throws {
        let h = try Household(motorRun: .milliseconds(200))
        let timeline = try comeHomeSuspended(h, budget: .seconds(2))
        expectOneJob(timeline)
        #expect(!timeline.contains { $0.name == EventKind.phoneAppWakeOverBudget.name })
        let ms = Self.milliseconds(timeline.first { $0.name == EventKind.phoneAppWakeHandled.name }) ?? 0
        #expect(ms >= 200 && ms < 2000, "link, setup, command and the motor's 200 ms: \(ms) ms")
    }

    /// The lock agent suspended in background mode; the phone (not suspended) sends a command.
    private func commandToSuspendedLock(_ h: Household, budget: Duration) throws -> [AgentEvent] {
        try h.settle()
        let gates = AgentGates.lock(h.lock!, settings: Self.settings(budget: budget), loop: h.loop,
                                    events: h.lockEvents, logger: .quiet)
        gates.control.suspend()
        let mark = h.lockEvents.events.count
        guard case .success = h.command(.unlock) else { Issue.record("the unlock failed"); return [] }
        let write = "write \(LockServiceUUID.lockControl)"
        #expect(h.advance(until: {
            Self.events(h.lockEvents, from: mark, named: EventKind.lockAppWakeHandled.name).contains { $0.field("event") == write }
        }, limit: .seconds(10)))
        withExtendedLifetime(gates) {}
        return Array(h.lockEvents.events.dropFirst(mark))
    }

    private static func wake(_ timeline: [AgentEvent], _ name: String) -> [AgentEvent] {
        timeline.filter { $0.name == name && $0.field("event") == "write \(LockServiceUUID.lockControl)" }
    }

    @Test func aLockCommandIsTimedThroughTheActuatorAndWarnedWhenSlow() throws {
        let h = try Household(motorRun: .seconds(3))
        let timeline = try commandToSuspendedLock(h, budget: .seconds(2))
        #expect(Self.wake(timeline, EventKind.lockAppWoken.name).count == 1)
        #expect(Self.wake(timeline, EventKind.lockAppWakeOverBudget.name).count == 1)
        let ms = Self.milliseconds(Self.wake(timeline, EventKind.lockAppWakeHandled.name).first) ?? 0
        #expect(ms >= 3000, "decision, movement and outcome: \(ms) ms")
        let names = timeline.map(\.name)
        let accepted = try #require(names.firstIndex(of: EventKind.lockCommandAccepted.name))
        let outcome = try #require(names.lastIndex(of: EventKind.lockEvent.name))
        let handled = try #require(names.lastIndex(of: EventKind.lockAppWakeHandled.name))
        #expect(accepted < outcome && outcome < handled, "the wake-up ends once the outcome is logged and notified")
    }

    @Test func aQuickLockCommandIsTimedThroughTheActuatorWithoutAWarning() throws {
        let h = try Household(motorRun: .milliseconds(300))
        let timeline = try commandToSuspendedLock(h, budget: .seconds(2))
        #expect(Self.wake(timeline, EventKind.lockAppWakeOverBudget.name).isEmpty)
        #expect(!timeline.contains { $0.name == EventKind.lockAppWakeOverBudget.name })
        let ms = Self.milliseconds(Self.wake(timeline, EventKind.lockAppWakeHandled.name).first) ?? 0
        #expect(ms >= 300 && ms < 2000, "\(ms) ms")
    }
}
