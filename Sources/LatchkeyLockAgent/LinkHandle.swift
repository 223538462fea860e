import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeyTransport

/// A link as the lock's components see it: a `Central` on the air, a test's own in their unit
/// tests (a `Central` is made only by the peripheral manager).
protocol LinkHandle: AnyObject {
    var linkID: LinkID { get }
    var identifier: BluetoothAddress { get }
    /// The link's connection interval, from the transport; nil while unknown.
    var connectionInterval: Duration? { get }
    /// One notification's payload on this link.
    var maximumUpdateValueLength: Int { get }
    /// What was kept with the link where it outlives the process; nil when nothing was.
    var keptLinkState: [UInt8]? { get }
    func keepLinkState(_ state: [UInt8]) throws(TransportError) -> Bool
}

extension Central: LinkHandle {}
