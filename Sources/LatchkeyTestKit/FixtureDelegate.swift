import LatchkeyATT
import LatchkeyGATT

/// The application side of a fixture server: answers dynamic reads from a table, records
/// writes and subscription changes, and refuses writes where a test tells it to.
public final class FixtureDelegate: GATTServerDelegate {
    /// Values of dynamic characteristics; a handle missing here reads as Read Not Permitted.
    public var dynamicValues: [UInt16: [UInt8]] = [:]
    /// Errors the application answers writes to these handles with.
    public var refuseWrites: [UInt16: ATTErrorCode] = [:]
    public private(set) var writes: [(handle: UInt16, value: [UInt8], withResponse: Bool)] = []
    public private(set) var configurationChanges: [(handle: UInt16, configuration: ClientConfiguration)] = []
    public private(set) var dynamicReads = 0
    /// Value handles whose indication the client confirmed, in order.
    public private(set) var confirmations: [UInt16] = []
    public private(set) var featureChanges: [ClientSupportedFeatures] = []

    public init() {}

    public func server(_ server: GATTServer, readDynamicValueAt handle: UInt16) -> Result<[UInt8], ATTErrorCode> {
        dynamicReads += 1
        guard let v = dynamicValues[handle] else { return .failure(.readNotPermitted) }
        return .success(v)
    }

    public func server(_ server: GATTServer, write value: ATTBytes, at handle: UInt16, withResponse: Bool) -> ATTErrorCode? {
        if let e = refuseWrites[handle] { return e }
        writes.append((handle, Array(value), withResponse))
        return nil
    }

    public func server(_ server: GATTServer, didChangeClientConfiguration configuration: ClientConfiguration,
                       forValueAt handle: UInt16) {
        configurationChanges.append((handle, configuration))
    }

    public func server(_ server: GATTServer, didConfirmIndicationAt handle: UInt16) { confirmations.append(handle) }

    public func server(_ server: GATTServer, didChangeClientFeatures features: ClientSupportedFeatures) {
        featureChanges.append(features)
    }
}
