/// A POSIX signal number, with names for the ones the agents handle.
public struct Signal: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: CInt
    public init(rawValue: CInt) { self.rawValue = rawValue }

    // Linux numbering (signal(7), x86/ARM).
    public static let interrupt = Signal(rawValue: 2)      // SIGINT
    public static let user1 = Signal(rawValue: 10)         // SIGUSR1
    public static let user2 = Signal(rawValue: 12)         // SIGUSR2
    public static let terminate = Signal(rawValue: 15)     // SIGTERM
    public static let child = Signal(rawValue: 17)         // SIGCHLD
    public static let `continue` = Signal(rawValue: 18)    // SIGCONT
    public static let terminalStop = Signal(rawValue: 20)  // SIGTSTP

    public var description: String {
        switch self {
        case .interrupt: "SIGINT"
        case .user1: "SIGUSR1"
        case .user2: "SIGUSR2"
        case .terminate: "SIGTERM"
        case .child: "SIGCHLD"
        case .continue: "SIGCONT"
        case .terminalStop: "SIGTSTP"
        default: "signal \(rawValue)"
        }
    }

    /// Sends the signal to the calling thread (raise(3)); for tests.
    public func raise() { Syscalls.raise(rawValue) }
}
