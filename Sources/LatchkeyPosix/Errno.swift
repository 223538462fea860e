/// An errno value, as swift-system's `Errno`: a struct over the raw code with named
/// statics, so every code stays representable and comparisons read as words.
public struct Errno: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: CInt
    public init(rawValue: CInt) { self.rawValue = rawValue }

    public static let interrupted = Errno(rawValue: 4)            // EINTR
    public static let badFileDescriptor = Errno(rawValue: 9)      // EBADF
    public static let wouldBlock = Errno(rawValue: 11)            // EAGAIN == EWOULDBLOCK on Linux
    public static let badAddress = Errno(rawValue: 14)            // EFAULT
    public static let noSuchFileOrDirectory = Errno(rawValue: 2)  // ENOENT
    public static let invalidArgument = Errno(rawValue: 22)       // EINVAL
    public static let brokenPipe = Errno(rawValue: 32)            // EPIPE
    public static let nameTooLong = Errno(rawValue: 36)           // ENAMETOOLONG
    public static let messageTooLong = Errno(rawValue: 90)        // EMSGSIZE
    public static let addressFamilyNotSupported = Errno(rawValue: 97)  // EAFNOSUPPORT
    public static let addressInUse = Errno(rawValue: 98)          // EADDRINUSE
    public static let connectionReset = Errno(rawValue: 104)      // ECONNRESET
    public static let notConnected = Errno(rawValue: 107)         // ENOTCONN
    public static let connectionRefused = Errno(rawValue: 111)    // ECONNREFUSED
    public static let operationNotPermitted = Errno(rawValue: 1)  // EPERM
    public static let noNetwork = Errno(rawValue: 64)             // ENONET
    public static let protocolError = Errno(rawValue: 71)         // EPROTO
    public static let protocolNotAvailable = Errno(rawValue: 92)  // ENOPROTOOPT
    public static let operationNotSupported = Errno(rawValue: 95) // EOPNOTSUPP
    public static let networkDown = Errno(rawValue: 100)          // ENETDOWN
    public static let networkUnreachable = Errno(rawValue: 101)   // ENETUNREACH
    public static let connectionAborted = Errno(rawValue: 103)    // ECONNABORTED
    public static let hostDown = Errno(rawValue: 112)             // EHOSTDOWN
    public static let hostUnreachable = Errno(rawValue: 113)      // EHOSTUNREACH
    public static let tooManyOpenFiles = Errno(rawValue: 24)      // EMFILE
    public static let tooManyOpenFilesInSystem = Errno(rawValue: 23)  // ENFILE
    public static let outOfMemory = Errno(rawValue: 12)           // ENOMEM
    public static let noBufferSpace = Errno(rawValue: 105)        // ENOBUFS

    public var description: String { "\(Syscalls.errorString(rawValue)) (errno \(rawValue))" }
}

/// A failed system call: the errno and the name of the call (with its argument when that
/// helps, e.g. a socket path), like swift-nio's `IOError(errnoCode:reason:)`.
public struct SystemError: Error, Hashable, Sendable, CustomStringConvertible {
    public var errno: Errno
    /// The failing call, e.g. "connect(/run/latchkey/air.sock)".
    public var call: String

    public init(_ errno: Errno, call: String) {
        self.errno = errno
        self.call = call
    }

    public var description: String { "\(call): \(errno)" }
}

/// The outcome of a non-blocking call: done, or "would block" (EAGAIN/EWOULDBLOCK),
/// which is a normal answer on a non-blocking fd and never an error.
public enum IOResult<Value> {
    case done(Value)
    case wouldBlock
}

extension IOResult: Equatable where Value: Equatable {}
