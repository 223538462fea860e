import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyTransport

/// The phone's wake-up work (a woken app's handling is timed against the wake budget).
/// A suspended background phone is woken by its link coming back; what follows — the GATT
/// setup, the arrival request (challenge read, sealed write, Write Response) and the lock's
/// report that the bolt moved — is one job, marked step by step in `backgroundTasks` so the
/// measured time is the whole job. Each step overlaps the next (the next begins before the
/// previous ends), so the wake-up never looks finished half-way. This component keeps the
/// last step: the wait for the bolt's report after a command the lock accepted.
final class WakeWork {
    static let setupTask = "gatt setup"
    static let commandsTask = "commands"
    static let boltReportTask = "bolt report"

    /// How long the phone waits for the lock to report the bolt after a command it accepted.
    /// The lock reports within its jam timeout (LockBehaviour.jamTimeout, 5 s by default) —
    /// the movement ends or is declared jammed by then; twice that covers a lock configured
    /// slower. A wait this long is over the 10 s wake budget anyway, and is reported.
    static let boltReportTimeout: Duration = .seconds(10)

    /// Lock states after a movement: Matter LockState below 0x80 (not fully locked, locked,
    /// unlocked, unlatched); 0x80/0x81 are moving and 0xFF unknown (LockStatusFrame).
    static func isSettled(_ frame: LockStatusFrame) -> Bool { frame.lockState < 0x80 }

    /// Whether an accepted `operation` ends with the lock reporting the bolt.
    static func movesTheBolt(_ operation: LockOperation) -> Bool {
        switch operation {
        case .lock, .unlock, .unlockWithTimeout, .arrivalUnlock: true
        case .present, .setOperatingMode: false
        }
    }

    let backgroundTasks: BackgroundTasks
    private let events: PhoneEventOutput
    private var loop: any EventLoop { events.loop }
    /// Settled lock states reported so far, and how many there were when the command in
    /// flight was written: a report may overtake the Write Response.
    private var settledReports = 0
    private var settledReportsAtWrite = 0
    private var boltReportTimer: Scheduled?

    init(backgroundTasks: BackgroundTasks, events: PhoneEventOutput) {
        self.backgroundTasks = backgroundTasks
        self.events = events
    }

    /// A command's frame goes to the lock: a settled report from now on answers it.
    func commandWritten() {
        settledReportsAtWrite = settledReports
    }

    /// The lock accepted `operation`: one that moves the bolt keeps the wake-up open until
    /// the bolt's report — unless the report overtook the Write Response.
    func commandAccepted(_ operation: LockOperation) {
        if Self.movesTheBolt(operation) && settledReports == settledReportsAtWrite { awaitBoltReport() }
    }

    /// The lock reported `frame`; true when the bolt is at rest in it.
    @discardableResult
    func statusReported(_ frame: LockStatusFrame) -> Bool {
        guard Self.isSettled(frame) else { return false }
        settledReports += 1
        boltReported()
        return true
    }

    /// The command was accepted and the bolt's report has not arrived yet: keep the
    /// wake-up open until it does, or until `boltReportTimeout`.
    /// Outside a wake-up there is nothing to measure, and nothing waits.
    private func awaitBoltReport() {
        backgroundTasks.begin(Self.boltReportTask)
        guard backgroundTasks.openTasks.contains(Self.boltReportTask) else { return }
        boltReportTimer?.cancel()
        boltReportTimer = loop.schedule(after: Self.boltReportTimeout) { [weak self] in
            self?.emit(.phoneBoltReportTimeout)
            self?.boltReported()
        }
    }

    /// The lock reported a settled state, the wait timed out, or the link went.
    func boltReported() {
        boltReportTimer?.cancel()
        boltReportTimer = nil
        backgroundTasks.end(Self.boltReportTask)
    }

    private func emit(_ event: Event) { events.emit(event) }
}
