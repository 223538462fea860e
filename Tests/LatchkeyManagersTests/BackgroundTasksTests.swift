import LatchkeyManagers
import LatchkeySim
import LatchkeyTransport
import Testing

/// Named background tasks on an `ApplicationGate`: they hold a wake-up open until the
/// last one ends, and hold nothing outside a wake-up.
@Suite struct BackgroundTasksTests {
    @Test func overlappingTasksHoldTheWakeUpUntilTheLastEnds() {
        let loop = ManualEventLoop()
        let gate = ApplicationGate(loop: loop, mode: .background, wakeBudget: .seconds(10))
        var reports: [GateReport] = []
        gate.onReport = { reports.append($0) }
        let tasks = BackgroundTasks()
        tasks.gate = gate
        gate.suspend()
        gate.deliver("connected") { tasks.begin("setup") }
        loop.advance(by: .seconds(1))
        gate.deliver("services discovered") {
            tasks.begin("command")  // the next step begins before the previous ends
            tasks.end("setup")
        }
        tasks.begin("command")  // already open: no second hold
        loop.advance(by: .seconds(2))
        #expect(tasks.openTasks == ["command"])
        #expect(reports == [.suspended, .woke(event: "connected")], "one wake-up, still open")
        tasks.end("command")
        tasks.end("command")  // not open any more: nothing
        #expect(reports.last == .wakeHandled(event: "connected", duration: .seconds(3)))
        #expect(reports.count == 3)
    }

    @Test func outsideAWakeUpNothingIsHeld() {
        let loop = ManualEventLoop()
        let gate = ApplicationGate(loop: loop, mode: .background)
        var reports: [GateReport] = []
        gate.onReport = { reports.append($0) }
        let tasks = BackgroundTasks()
        tasks.gate = gate
        tasks.begin("command")  // the app is in the foreground: nothing to measure
        #expect(tasks.openTasks.isEmpty)
        gate.suspend()
        gate.deliver("notification") {}
        #expect(reports.last == .wakeHandled(event: "notification", duration: .zero), "not held by the earlier begin")
        let detached = BackgroundTasks()
        detached.begin("command")  // no gate attached: an agent not behind one
        #expect(detached.openTasks.isEmpty)
    }
}
