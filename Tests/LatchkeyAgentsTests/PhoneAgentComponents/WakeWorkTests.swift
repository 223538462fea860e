import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyManagers
@testable import LatchkeyPhoneAgent
import Testing

/// The wake-up's last step alone: a woken phone's accepted command keeps the wake-up open
/// until the lock reports the bolt at rest, or for `boltReportTimeout`.
struct WakeWorkTests {
    static func status(_ lockState: UInt8) -> LockStatusFrame {
        LockStatusFrame(lockState: lockState, doorState: 1, operatingMode: 0, actuatorEnabled: true, lastEventSequence: 1)
    }

    /// A suspended background gate, the component's tasks behind it.
    func woken(_ rig: PhoneComponentRig) -> (ApplicationGate, WakeWork) {
        let gate = ApplicationGate(loop: rig.loop, mode: .background)
        let tasks = BackgroundTasks()
        tasks.gate = gate
        gate.suspend()
        return (gate, WakeWork(backgroundTasks: tasks, events: rig.output))
    }

    @Test func anAcceptedUnlockWaitsForTheSettledReport() {
        let rig = PhoneComponentRig()
        let (gate, wake) = woken(rig)
        gate.deliver("link up") { wake.commandWritten(); wake.commandAccepted(.unlock) }
        #expect(wake.backgroundTasks.openTasks == [WakeWork.boltReportTask])
        #expect(!wake.statusReported(Self.status(0x81)))  // moving: not yet
        #expect(wake.backgroundTasks.openTasks == [WakeWork.boltReportTask])
        #expect(wake.statusReported(Self.status(2)))
        #expect(wake.backgroundTasks.openTasks.isEmpty && rig.loop.pendingCount == 0)
    }

    @Test func aReportThatOvertookTheWriteResponseEndsTheWaitBeforeItStarts() {
        let rig = PhoneComponentRig()
        let (gate, wake) = woken(rig)
        gate.deliver("link up") {
            wake.commandWritten()
            wake.statusReported(Self.status(2))
            wake.commandAccepted(.arrivalUnlock)
        }
        #expect(wake.backgroundTasks.openTasks.isEmpty)
    }

    @Test func aCommandThatMovesNothingOrAWakeLessPhoneWaitsForNothing() {
        let rig = PhoneComponentRig()
        let (gate, wake) = woken(rig)
        gate.deliver("link up") { wake.commandWritten(); wake.commandAccepted(.present) }
        #expect(wake.backgroundTasks.openTasks.isEmpty)
        let awake = WakeWork(backgroundTasks: BackgroundTasks(), events: rig.output)
        awake.commandWritten()
        awake.commandAccepted(.unlock)
        #expect(rig.loop.pendingCount == 0)
    }

    @Test func noReportEndsTheWaitAtTheTimeoutAndSaysSo() {
        let rig = PhoneComponentRig()
        let (gate, wake) = woken(rig)
        gate.deliver("link up") { wake.commandWritten(); wake.commandAccepted(.lock) }
        rig.loop.advance(by: WakeWork.boltReportTimeout - .milliseconds(1))
        #expect(wake.backgroundTasks.openTasks == [WakeWork.boltReportTask])
        rig.loop.advance(by: .milliseconds(1))
        #expect(wake.backgroundTasks.openTasks.isEmpty)
        #expect(rig.names().filter { $0 == EventKind.phoneBoltReportTimeout.name }.count == 1)
    }
}
