#if canImport(Glibc)
import Glibc
#endif
@testable import LatchkeyDaemons
import LatchkeyEvents
import LatchkeyLock
import LatchkeyManagers
import LatchkeyPosix
@testable import LatchkeyControl
import LatchkeyTransport
import Testing

/// Execution modes at the daemon level: real control sockets and real signals (SIGTSTP, SIGCONT sent
/// with kill(2) and raise(3) to this process's self-pipe handlers), on the daemons as the
/// CLI sets them up, over the simulated air. Serialized: a signal's disposition is
/// process-wide, so only one of these may own SIGTSTP/SIGCONT at a time.
@Suite(.serialized) struct DaemonControlTests {
    @Test func thePhonesControlSocketSwitchesItsExecutionModeAndRefusesWrongCommands() throws {
        let rig = try DaemonRig(ownsSignals: true)
        defer { rig.close() }
        try rig.startLinked()

        #expect(try rig.send("execution sideways", to: rig.phone) == ["error usage: execution foreground|background"])
        #expect(try rig.send("resume now", to: rig.phone) == ["error usage: resume (no arguments)"])
        #expect(try rig.send("frobnicate", to: rig.phone).first?.hasPrefix("error unknown command \"frobnicate\"") == true)
        #expect(throws: RuntimeError.self, "an empty command never leaves the client") { try rig.send(" ", to: rig.phone) }
        #expect(rig.phone?.agent.central.executionMode == .foreground)
        #expect(rig.phoneController.connectionParameters == .phoneForeground)

        #expect(try rig.send("execution background", to: rig.phone) == ["ok mode=background"])
        // The system's auto-connect scan slows down (mgmt Set Default System Configuration
        // on a kernel; the air's controller here), and an unfiltered scan is refused.
        #expect(rig.wait(until: { rig.phoneController.connectionParameters?.scanInterval == BackgroundScanTiming.interval }))
        #expect(rig.phoneController.connectionParameters?.scanWindow == BackgroundScanTiming.window)
        #expect(throws: BluetoothError.self) { try rig.phone?.agent.central.scanForPeripherals(withServices: nil) }
        #expect(try rig.send("status", to: rig.phone)
                == ["ok presence=home linked=true transport_refusals=0 execution=background suspended=false queued=0"])

        #expect(try rig.send("execution foreground", to: rig.phone) == ["ok mode=foreground"])
        #expect(rig.wait(until: { rig.phoneController.connectionParameters == .phoneForeground }))
    }

    /// systemd's READY=1 only once the bolt is at rest and the advertising taken: a lock with
    /// no known state drives the bolt to locked at start, and `lock.advertising` comes first.
    @Test func theLockIsReadyOnlyOnceItsBoltIsAtRest() throws {
        let rig = try DaemonRig(ownsSignals: true)
        defer { rig.close() }
        try rig.startLock()
        let lock = try #require(rig.lock)
        let readiness = try #require(lock.readiness)
        var movingWhenAdvertising: Bool?
        var atReady: (state: LockState, moving: Bool)?
        #expect(rig.wait(until: {
            if movingWhenAdvertising == nil, !rig.lockEvents(EventKind.lockAdvertising.name).isEmpty {
                movingWhenAdvertising = lock.agent.controller.machine.isMoving
            }
            if atReady == nil, readiness.isReady {
                atReady = (lock.agent.controller.lockState, lock.agent.controller.machine.isMoving)
            }
            return readiness.isReady
        }))
        #expect(movingWhenAdvertising == true, "the ready event came while the bolt moved")
        #expect(atReady?.state == .locked)
        #expect(atReady?.moving == false)
        #expect(rig.lockController.isAdvertising)
    }

    @Test func thePhoneIsReadyOnceItsPendingConnectIsAskedFor() throws {
        let rig = try DaemonRig(ownsSignals: true)
        defer { rig.close() }
        try rig.startPhone()
        let readiness = try #require(rig.phone?.readiness)
        #expect(!readiness.isReady, "not before the loop ran")
        #expect(rig.wait(until: { readiness.isReady }))
        // The simulated air takes every request (no answers to wait for): it has it soon after.
        #expect(rig.wait(until: { rig.phoneController.pendingConnections.contains(DaemonRig.lockAddress) }))
    }

    @Test func theLocksControlSocketSuspendsItsAdvertisingAndDropsItsNameInBackground() throws {
        let rig = try DaemonRig(ownsSignals: true)
        defer { rig.close() }
        try rig.startLock()
        #expect(rig.wait(until: { rig.lockController.isAdvertising && rig.lock?.agent.controller.lockState == .locked }))
        #expect(try rig.send("status", to: rig.lock)
                == ["ok lock=locked door=closed operating_mode=normal transport_refusals=0 store=ok advertising_while_linked=yes "
                    + "pairing_writes=0 pairing_refused=0 pairing_not_enrolled=0 scheduling=normal wal=laid_out execution=foreground suspended=false queued=0"])

        #expect(try rig.send("suspend", to: rig.lock) == ["ok suspended mode=foreground"])
        #expect(rig.wait(until: { !rig.lockController.isAdvertising }), "a suspended foreground lock is off the air")
        #expect(try rig.send("execution upside-down", to: rig.lock) == ["error usage: execution foreground|background"])
        #expect(try rig.send("frobnicate", to: rig.lock).first?.hasPrefix("error unknown command \"frobnicate\"") == true)
        #expect(rig.lock?.agent.peripheral.executionMode == .foreground && !rig.lockController.isAdvertising,
                "the wrong commands changed nothing")

        #expect(try rig.send("execution background", to: rig.lock) == ["ok mode=background"])
        #expect(rig.wait(until: { rig.lockController.isAdvertising && rig.lockController.advertisedName == nil }))
        #expect(try rig.send("resume", to: rig.lock) == ["ok resumed mode=background"])
        #expect(try rig.send("execution foreground", to: rig.lock) == ["ok mode=foreground"])
        #expect(rig.wait(until: { rig.lockController.advertisedName == "Rig Door" }))
    }

    /// SIGTSTP suspends the application layer of every daemon in the process; the phone
    /// (foreground) hears nothing of its link dropping and coming back, the system keeps
    /// its request and the link; SIGCONT delivers what happened, in order.
    @Test func sigtstpQueuesThePhonesEventsAndSigcontDeliversThemInOrder() throws {
        let rig = try DaemonRig(ownsSignals: true)
        defer { rig.close() }
        try rig.startLinked()
        // A background lock stays on the air while suspended, so the phone can come back.
        #expect(try rig.send("execution background", to: rig.lock) == ["ok mode=background"])

        // Unhandled, SIGTSTP would stop this whole test process: be sure it is handled.
        for agent in [rig.phone?.gates, rig.lock?.gates] {
            try #require(agent?.signals.contains { $0.signal == .terminalStop && !$0.isCancelled } == true)
        }
        let mark = rig.phoneEvents.count
        #expect(kill(getpid(), SIGTSTP) == 0)
        #expect(rig.wait(until: { !rig.phoneEvents(EventKind.phoneAppSuspended.name, since: mark).isEmpty
                                  && !rig.lockEvents(EventKind.lockAppSuspended.name).isEmpty }))
        #expect(try rig.send("status", to: rig.phone).first?.hasSuffix("suspended=true queued=0") == true)

        rig.air.air.setPosition(100, of: DaemonRig.phoneAddress)
        #expect(rig.wait(until: { !rig.phoneController.isLinked }))
        #expect(rig.phoneController.pendingConnections.contains(DaemonRig.lockAddress), "the system keeps the request")
        rig.air.air.setPosition(1, of: DaemonRig.phoneAddress)
        #expect(rig.wait(until: { rig.phoneController.isLinked }))
        #expect(rig.wait(until: { !rig.lockEvents(EventKind.lockAppWoken.name).isEmpty }), "the background lock was woken")
        let heard = rig.phoneEvents.dropFirst(mark).map(\.name).filter { $0.hasPrefix("phone.link") }
        #expect(heard.isEmpty, "the suspended phone heard nothing: \(heard)")
        let queued = try rig.send("status", to: rig.phone)
        #expect(queued.first?.contains("suspended=true") == true && queued.first?.hasSuffix("queued=0") == false)

        Signal.continue.raise()
        #expect(rig.wait(until: { !rig.phoneEvents(EventKind.phoneGattReady.name, since: mark).isEmpty }))
        let names = rig.phoneEvents.dropFirst(mark).map(\.name)
        let lost = try #require(names.firstIndex(of: EventKind.phoneLinkLost.name))
        let linked = try #require(names.firstIndex(of: EventKind.phoneLinked.name))
        let resumed = try #require(names.firstIndex(of: EventKind.phoneAppResumed.name))
        #expect(lost < linked && linked < resumed, "delivered in the order they happened, then the resume: \(names)")
        let delivered = rig.phoneEvents(EventKind.phoneAppResumed.name, since: mark).first?.field("delivered").flatMap { Int($0) }
        #expect((delivered ?? 0) >= 2)
        #expect(try rig.send("status", to: rig.phone).first?.hasSuffix("suspended=false queued=0") == true)
        #expect(!rig.lockEvents(EventKind.lockAppResumed.name).isEmpty, "SIGCONT resumed the lock too")
    }
}
