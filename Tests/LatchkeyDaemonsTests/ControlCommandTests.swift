import LatchkeyAgents
import LatchkeyEvents
@testable import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyManagers
@testable import LatchkeyControl
@testable import LatchkeyDaemons
@testable import LatchkeySettings
import LatchkeyTransport
import Logging
import Testing

extension Logger {
    /// A logger that drops everything (the tests read the timeline, not the diagnostics).
    static let quiet = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
}

/// Sends one command line to `dispatcher` as the control socket would (words split on
/// spaces) and returns the replies given before it returned.
func ask(_ dispatcher: ControlDispatcher, _ line: String) -> [String] {
    var replies: [String] = []
    dispatcher.handle(line.split(separator: " ").map(String.init)) { replies.append($0) }
    return replies
}

/// The control commands at unit level: the dispatcher both daemons answer their
/// control socket with, on the agents and gates the daemons build (AgentGates), on a
/// manual loop. Wrong commands are answered with an error and change nothing; the right
/// ones change what the managers do.
@Suite struct PhoneControlCommandTests {
    private func phone(_ h: Household, _ settings: ExecutionSettings = ExecutionSettings()) throws
        -> (AgentGates, ControlDispatcher)
    {
        try h.settle()
        let gates = try AgentGates.phone(h.phone!, lock: Household.lockAddress, settings: settings, loop: h.loop,
                                         events: h.phoneEvents, logger: .quiet)
        return (gates, PhoneControlCommands.dispatcher(h.phone!, application: gates.control))
    }

    @Test func aWrongCommandIsAnsweredWithAnErrorAndChangesNothing() throws {
        let h = try Household()
        let (gates, control) = try phone(h)
        let sent = h.count(EventKind.phoneCommandSent.name, in: h.phoneEvents)
        let unknown = "; use status, \(PhoneControlCommands.usage), \(ApplicationControl.usage)"
        let cases: [(String, String)] = [
            ("", "error unknown command (empty)" + unknown),
            ("frobnicate", "error unknown command \"frobnicate\"" + unknown),
            ("Suspend", "error unknown command \"Suspend\"" + unknown),
            ("execution", "error usage: execution foreground|background"),
            ("execution sideways", "error usage: execution foreground|background"),
            ("execution background now", "error usage: execution foreground|background"),
            ("suspend now", "error usage: suspend (no arguments)"),
            ("resume please", "error usage: resume (no arguments)"),
            ("status now", "error usage: status (no arguments)"),
            ("unlock now", "error usage: unlock (no arguments)"),
            ("mode sideways", "error usage: mode normal|no-remote|passage"),
            ("probe 0", "error usage: probe N (1...10000)"),
            ("arriving now", "error usage: arriving (no arguments)"),
            ("fetch-log x", PhoneControlCommands.fetchLogUsage),
            ("fetch-log 0", PhoneControlCommands.fetchLogUsage),
            ("fetch-log 1 0", PhoneControlCommands.fetchLogUsage),
            ("fetch-log 1 65536", PhoneControlCommands.fetchLogUsage),
            ("fetch-log 1 2 3", PhoneControlCommands.fetchLogUsage),
        ]
        for (line, expected) in cases { #expect(ask(control, line) == [expected], "\(line)") }
        h.loop.advance(by: .seconds(5))
        #expect(h.count(EventKind.phoneCommandSent.name, in: h.phoneEvents) == sent, "nothing went to the lock")
        #expect(h.phone!.central.executionMode == .foreground)
        #expect(h.phoneController.connectionParameters == .phoneForeground)
        #expect(!gates.control.gate.isSuspended)
        #expect(ask(control, "status") == ["ok presence=home linked=true transport_refusals=0 execution=foreground suspended=false queued=0"])
    }

    /// A request the system refused reaches the agent through the manager and its gate: an
    /// event on the timeline and a count in `status` (the request itself stands: the
    /// transport asks again).
    @Test func aRefusedRequestIsAnEventAndCountsInStatus() throws {
        let h = try Household()
        let (_, control) = try phone(h)
        let refusal = TransportRefusal(request: .pendingConnection(Household.lockAddress),
                                       reason: "Add Device failed: Busy (0x0a)", attempt: 2, retryIn: .seconds(1))
        h.phone!.central.transport(h.phoneController, didRefuse: refusal)
        h.loop.advance(by: .milliseconds(1))
        let event = try #require(h.phoneEvents.events.last { $0.name == EventKind.phoneTransportRefused.name })
        #expect(event.field("request") == "pending connection to \(Household.lockAddress)")
        #expect(event.field("attempt") == "2")
        #expect(event.field("reason") == "Add Device failed: Busy (0x0a)")
        #expect(ask(control, "status").first?.contains(" transport_refusals=1 ") == true)
    }

    /// `fetch-log` runs the phone's log fetch over the link and answers with the events and
    /// what the transfer cost: the figures the HIL's transfer benchmark prints (scenario 61).
    @Test func fetchLogReadsTheLocksLogOverTheLinkAndSaysWhatItCost() throws {
        let h = try Household()
        let (_, control) = try phone(h)
        for op in [LockOperation.unlock, .lock, .unlock, .lock] {
            guard case .success? = h.command(op) else { Issue.record("\(op) failed"); return }
            #expect(h.advance(until: { h.lock!.controller.lockState == (op == .unlock ? .unlocked : .locked) }))
        }
        let logged = try h.log().count
        #expect(logged >= 4, "the commands' operations are in the lock's log")

        func fetch(_ line: String) -> String? {
            var replies: [String] = []
            control.handle(line.split(separator: " ").map(String.init)) { replies.append($0) }
            h.advance(until: { !replies.isEmpty }, limit: .seconds(5))
            return replies.count == 1 ? replies[0] : nil
        }
        func field(_ reply: String?, _ key: String) -> String? {
            reply?.split(separator: " ").first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
        }
        let whole = try #require(fetch("fetch-log 1 1000"))
        #expect(whole.hasPrefix("ok fetch-log events=\(logged) first=1 last=\(logged) consecutive=yes "), "\(whole)")
        let octets = try #require(field(whole, "octets").flatMap(Int.init))
        let notifications = try #require(field(whole, "notifications").flatMap(Int.init))
        let mtu = h.phone!.central.retrievePeripherals(withIdentifiers: [Household.lockAddress])[0].mtu
        // Every chunk but the last fills a notification (MTU - 3 octets): the counts agree.
        #expect(octets > 0 && notifications == (octets + mtu - 4) / (mtu - 3), "\(whole) at MTU \(mtu)")
        let elapsed = try #require(field(whole, "elapsed_ms").flatMap(Double.init))
        let firstChunk = try #require(field(whole, "first_chunk_ms").flatMap(Double.init))
        // The request takes connection events on the phone's clock; the last chunk is the
        // first when one notification carried it all, else a later one.
        #expect(firstChunk > 0 && (notifications == 1 ? elapsed == firstChunk : elapsed > firstChunk), "\(whole)")

        // A window of the log: from 2, at most 2.
        #expect(fetch("fetch-log 2 2")?.hasPrefix("ok fetch-log events=2 first=2 last=3 consecutive=yes ") == true)

        // One at a time: a second fetch while one runs is refused, and the first still answers.
        var first: [String] = []
        control.handle(["fetch-log"]) { first.append($0) }
        #expect(ask(control, "fetch-log") == ["error not delivered: a log fetch is running"])
        h.advance(until: { !first.isEmpty }, limit: .seconds(5))
        #expect(first.count == 1 && first[0].hasPrefix("ok fetch-log events=\(logged) first=1 "), "\(first)")

        // No link: an error, at once.
        h.air.setPosition(100, of: Household.phoneAddress)
        #expect(h.advance(until: { h.phone?.isLinked == false }, limit: .seconds(10)))
        #expect(ask(control, "fetch-log") == ["error not delivered: not linked to the lock"])
    }

    @Test func arrivingOpensTheIntentWindowOnlyForAnOwnerWhoWasAway() throws {
        let h = try Household()
        let (_, control) = try phone(h)
        #expect(ask(control, "arriving") == ["ok arriving: nothing to ask: home"], "home: an intent means nothing")
        h.air.setPosition(100, of: Household.phoneAddress)
        #expect(h.advance(until: { h.phone?.presence == .away }, limit: .seconds(10)))
        #expect(ask(control, "arriving") == ["ok arriving: window open for 120 s"])
        #expect(h.phone?.state.presence.intentOpen == true)
        h.loop.advance(by: .seconds(121))
        #expect(h.phone?.state.presence.intentOpen == false, "the window closes by itself")
        #expect(h.count(EventKind.phoneArrivalIntentExpired.name, in: h.phoneEvents) == 1)
    }

    @Test func executionBackgroundSlowsTheSystemScanAndRefusesAnUnfilteredScan() throws {
        let h = try Household()
        let (_, control) = try phone(h)
        let central = h.phone!.central
        #expect(ask(control, "execution background") == ["ok mode=background"])
        #expect(central.executionMode == .background)
        #expect(h.phoneController.connectionParameters.scanInterval == BackgroundScanTiming.interval)
        #expect(h.phoneController.connectionParameters.scanWindow == BackgroundScanTiming.window)
        do {
            try central.scanForPeripherals(withServices: nil)
            Issue.record("an unfiltered scan in background mode")
        } catch {
            guard case .operationNotSupported = error else { Issue.record("\(error)"); return }
        }
        try central.scanForPeripherals(withServices: [LockServiceUUID.service])
        #expect(h.phoneController.scanParameters?.interval == BackgroundScanTiming.interval)
        #expect(ask(control, "status") == ["ok presence=home linked=true transport_refusals=0 execution=background suspended=false queued=0"])

        #expect(ask(control, "execution foreground") == ["ok mode=foreground"])
        #expect(h.phoneController.connectionParameters == .phoneForeground)
        #expect(h.phoneController.scanParameters?.interval == BackgroundScanTiming.foregroundInterval,
                "the running scan is re-issued at the foreground timing")
    }

    @Test func suspendQueuesTheLocksReportsAndResumeDeliversThemInOrder() throws {
        let h = try Household()
        let (gates, control) = try phone(h)
        #expect(ask(control, "suspend") == ["ok suspended mode=foreground"])
        let mark = h.phoneEvents.events.count
        // Someone turns the thumbturn twice: two reports the suspended phone cannot hear.
        h.lock!.controller.submit(LockCommand(.unlock, source: .manual))
        #expect(h.advance(until: { h.lock!.controller.lockState == .unlocked }))
        h.lock!.controller.submit(LockCommand(.lock, source: .manual))
        #expect(h.advance(until: { h.lock!.controller.lockState == .locked }))
        h.loop.advance(by: .milliseconds(500))
        #expect(!h.phoneEvents.events.dropFirst(mark).contains { $0.name == EventKind.phoneLockStatus.name })
        #expect(gates.control.gate.queuedEvents.count == 2)
        #expect(ask(control, "status") == ["ok presence=home linked=true transport_refusals=0 execution=foreground suspended=true queued=2"])

        #expect(ask(control, "resume") == ["ok resumed mode=foreground"])
        let after = Array(h.phoneEvents.events.dropFirst(mark))
        #expect(after.filter { $0.name == EventKind.phoneLockStatus.name }.map { $0.field("lock_state") } == ["2", "1"],
                "Unlocked, then Locked: in the order they happened")
        #expect(after.last { $0.name == EventKind.phoneAppResumed.name }?.fields.map(\.1) == ["2", "0"])
        #expect(ask(control, "status") == ["ok presence=home linked=true transport_refusals=0 execution=foreground suspended=false queued=0"])
    }
}

@Suite struct LockControlCommandTests {
    private func lock(_ h: Household) throws -> (AgentGates, ControlDispatcher) {
        try h.startLock()
        #expect(h.advance(until: { h.lockController.isAdvertising && h.lock!.controller.lockState == .locked }))
        let gates = AgentGates.lock(h.lock!, settings: ExecutionSettings(), loop: h.loop, events: h.lockEvents,
                                    logger: .quiet)
        return (gates, LockControlCommands.dispatcher(h.lock!, application: gates.control))
    }

    private func advertisedName(_ h: Household) -> String? { h.lockController.advertisement?.data.localName }

    @Test func aWrongCommandIsAnsweredWithAnErrorAndChangesNothing() throws {
        let h = try Household()
        let (gates, control) = try lock(h)
        let unknown = "; use status, \(LockControlCommands.usage), \(ApplicationControl.usage)"
        #expect(ask(control, "frobnicate") == ["error unknown command \"frobnicate\"" + unknown])
        #expect(ask(control, "execution upside-down") == ["error usage: execution foreground|background"])
        #expect(ask(control, "suspend 10") == ["error usage: suspend (no arguments)"])
        #expect(ask(control, "pair 0 admin yes") == ["error usage: pair SECONDS(1...600) admin|user yes|no [NAME]"])
        h.loop.advance(by: .seconds(1))
        #expect(!gates.control.gate.isSuspended && h.lock!.peripheral.executionMode == .foreground)
        #expect(h.lockController.isAdvertising && advertisedName(h) == "Latchkey")
        #expect(ask(control, "status")
                == ["ok lock=locked door=\(h.lock!.controller.doorState) operating_mode=normal "
                    + "transport_refusals=0 store=ok advertising_while_linked=yes pairing_writes=0 pairing_refused=0 pairing_not_enrolled=0 scheduling=normal "
                    + "execution=foreground suspended=false queued=0"])
    }

    @Test func pairingAnswersNeedAPendingKeyAndAnOwnersNameMustBePrintable() throws {
        let h = try Household()
        let (_, control) = try lock(h)
        #expect(ask(control, "pair-confirm 123456") == ["error no pairing waits for confirmation"])
        #expect(ask(control, "pair-reject") == ["error no pairing waits for confirmation"])
        #expect(ask(control, "pair-confirm") == ["error usage: pair-confirm CODE"])
        let refused = ask(control, "pair 60 user no owner\u{1B}[2J")
        #expect(refused.count == 1 && refused[0].hasPrefix("error the name is refused: contains the non-printable"))
        #expect(!refused[0].contains("\u{1B}"), "the answer itself carries no escape")
    }

    @Test func suspendStopsAForegroundLocksAdvertisingAndBackgroundAdvertisesWithoutItsName() throws {
        let h = try Household()
        let (_, control) = try lock(h)
        #expect(ask(control, "suspend") == ["ok suspended mode=foreground"])
        #expect(!h.lockController.isAdvertising, "a suspended foreground-only lock is off the air")
        #expect(ask(control, "execution background") == ["ok mode=background"])
        #expect(h.lockController.isAdvertising && advertisedName(h) == nil, "woken for its events, nameless")
        #expect(ask(control, "resume") == ["ok resumed mode=background"])
        #expect(h.lockController.isAdvertising && advertisedName(h) == nil)
        #expect(ask(control, "execution foreground") == ["ok mode=foreground"])
        #expect(advertisedName(h) == "Latchkey")
    }
}
