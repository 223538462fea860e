/// A runtime failure with a sentence for the operator, and the exit status it ends the
/// process with.
public struct RuntimeError: Error, CustomStringConvertible {
    public var description: String
    /// 78 (`exConfig`) when the configuration cannot be used, 1 otherwise.
    public var exitStatus: Int32

    public init(_ description: String, exitStatus: Int32 = 1) {
        self.description = description
        self.exitStatus = exitStatus
    }

    /// EX_CONFIG (sysexits.h): the units' `RestartPreventExitStatus=78` stops systemd from
    /// restarting an agent whose configuration no restart can fix (under `Restart=always` it
    /// would loop until the start limit).
    public static let exConfig: Int32 = 78

    /// A configuration error: file:line: field: message, exit status 78.
    public static func configuration(_ description: String) -> RuntimeError {
        RuntimeError(description, exitStatus: exConfig)
    }
}
