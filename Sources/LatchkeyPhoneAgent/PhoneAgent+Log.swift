import LatchkeyLock
import LatchkeyManagers

/// The lock's audit log, fetched by the `LogTransfer` component on this link.
extension PhoneAgent {
    public typealias LogResult = Result<[(sequence: UInt32, event: LockEvent)], CommandError>

    /// How long a fetch may hear nothing from the lock before it fails (`LogTransfer.silence`).
    public static let logFetchSilence: Duration = LogTransfer.silence

    /// The last log fetch's figures, set before its completion runs (nil while one runs, or
    /// when its reply never reassembled).
    public var lastLogTransfer: LogTransferFigures? { logTransfer.lastFigures }

    public func fetchLog(from sequence: UInt32 = 1, limit: UInt16 = 100, completion: @escaping (LogResult) -> Void) {
        guard let transfer = transferCharacteristic, isLinked else {
            completion(.failure(.notDelivered("not linked to the lock")))
            return
        }
        let step = logTransfer.start(from: sequence, limit: limit, notifying: transfer.isNotifying,
                                     completion: completion)
        if step != .nothing { linkInterval.linkBecameBusy() }
        carryOut(step)
    }

    /// Does on the link what the log transfer asked for.
    func carryOut(_ step: LogTransfer.Step) {
        guard let transfer = transferCharacteristic else { return }
        switch step {
        case .nothing: break
        case .subscribe: lockPeripheral.setNotifyValue(true, for: transfer)
        case .write(let bytes): lockPeripheral.writeValue(bytes, for: transfer)
        }
    }
}
