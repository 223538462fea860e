/// The process on the other end of a Unix socket, as the kernel recorded it when that
/// process connected (SO_PEERCRED): what an agent's control socket decides by.
public struct PeerCredentials: Equatable, Sendable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid; self.uid = uid; self.gid = gid
    }

    /// This process's real user id (getuid): the agent's own user.
    public static var currentUserID: UInt32 { Syscalls.userID() }
}

extension SeqPacketSocket {
    /// The connected peer's credentials.
    public func peerCredentials() throws(SystemError) -> PeerCredentials {
        try Syscalls.peerCredentials(fileDescriptor)
    }
}
