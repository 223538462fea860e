/// Readiness of a file descriptor. `readable`/`writable` are interests and results;
/// `hangUp` and `error` are only ever results (poll reports them whatever was asked).
public struct IOEvents: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let readable = IOEvents(rawValue: 1 << 0)
    public static let writable = IOEvents(rawValue: 1 << 1)
    public static let hangUp = IOEvents(rawValue: 1 << 2)
    public static let error = IOEvents(rawValue: 1 << 3)

    public var description: String {
        let names: [(IOEvents, String)] = [(.readable, "r"), (.writable, "w"), (.hangUp, "hup"), (.error, "err")]
        return "[" + names.filter { contains($0.0) }.map(\.1).joined(separator: ",") + "]"
    }
}

/// Interest in one file descriptor, registered with `PosixEventLoop.watch(fd:events:_:)`.
///
/// The watch does not own the fd: cancel the watch before closing it. Change `events` to
/// add or drop writable interest (e.g. only while a send queue is non-empty); with an
/// empty interest set the fd is not polled at all, so a hung-up fd cannot spin the loop.
public final class Watch {
    public let fileDescriptor: CInt
    /// What to wait for; takes effect on the loop's next poll.
    public var events: IOEvents
    public private(set) var isCancelled = false
    var handler: ((IOEvents) -> Void)?

    init(fileDescriptor: CInt, events: IOEvents, handler: @escaping (IOEvents) -> Void) {
        self.fileDescriptor = fileDescriptor
        self.events = events
        self.handler = handler
    }

    /// Stops watching; the handler is released and will not be called again. Idempotent.
    public func cancel() {
        isCancelled = true
        handler = nil
    }
}
