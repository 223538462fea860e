import LatchkeyLock
import LatchkeyManagers

/// The lock's audit log, fetched by the `LogTransfer` component on the link.
extension PhoneAgent {
    public typealias LogResult = Result<[(sequence: UInt32, event: LockEvent)], CommandError>

    /// How long a fetch may hear nothing from the lock before it fails (`LogTransfer.silence`).
    public static let logFetchSilence: Duration = LogTransfer.silence

    /// The last log fetch's figures, set before its completion runs (nil while one runs, or
    /// when its reply never reassembled).
    public var lastLogTransfer: LogTransferFigures? { link.logTransfer.lastFigures }

    public func fetchLog(from sequence: UInt32 = 1, limit: UInt16 = 100, completion: @escaping (LogResult) -> Void) {
        link.fetchLog(from: sequence, limit: limit, completion: completion)
    }
}
