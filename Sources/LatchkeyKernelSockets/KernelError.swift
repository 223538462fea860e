import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// A failure of the kernel transport, with a code callers can act on (service-lifecycle
/// style) and, when a system call failed, its errno and name (NIO's `IOError`).
public struct KernelError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let raw: String
        /// `socket(AF_BLUETOOTH, …)` failed with EAFNOSUPPORT: this kernel has no Bluetooth.
        public static let noBluetooth = Code(raw: "no Bluetooth support in this kernel")
        /// No controller with the configured name or address.
        public static let adapterNotFound = Code(raw: "adapter not found")
        /// The mgmt socket needs CAP_NET_ADMIN for anything but reading.
        public static let permissionDenied = Code(raw: "permission denied")
        /// The kernel refused a mgmt command.
        public static let management = Code(raw: "mgmt command failed")
        /// The kernel did not answer a startup command in time.
        public static let timedOut = Code(raw: "timed out")
        /// Any other failed system call.
        public static let system = Code(raw: "system call failed")
        public var description: String { raw }
    }

    public var code: Code
    public var message: String
    /// The errno of the failing call, when one failed.
    public var errno: Errno?

    public init(_ code: Code, _ message: String, errno: Errno? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    /// The kernel's half of the errno policy: EAFNOSUPPORT from an AF_BLUETOOTH socket is
    /// "no Bluetooth in this kernel", EPERM/EACCES a missing capability.
    package init(_ error: SystemError) {
        switch error.errno {
        case .addressFamilyNotSupported:
            self.init(.noBluetooth, "\(error.call): \(error.errno)", errno: error.errno)
        case .operationNotPermitted, .permissionDenied:
            self.init(.permissionDenied, "\(error.call): \(error.errno) (the mgmt socket needs CAP_NET_ADMIN)",
                      errno: error.errno)
        default:
            self.init(.system, "\(error)", errno: error.errno)
        }
    }

    package init(_ error: MgmtError) {
        let denied = error.status == .permissionDenied
        self.init(denied ? .permissionDenied : .management,
                  denied ? "\(error) (the mgmt socket needs CAP_NET_ADMIN)" : "\(error)")
    }

    public var description: String { "\(code): \(message)" }
}
