#if canImport(Glibc)
import Glibc
#endif
import LatchkeyPosix
import LatchkeyTestKit
import Testing

/// systemd's file descriptor store as the agent speaks it (sd_notify(3), sd_listen_fds(3)),
/// received on a real datagram socket where $NOTIFY_SOCKET says.
struct SystemdDescriptorStoreTests {
    /// One datagram and the descriptor it carried (SCM_RIGHTS), if any.
    func receive(_ fd: Int32) -> (String, CInt?)? {
        var buffer = [UInt8](repeating: 0, count: 512)
        var control = [UInt8](repeating: 0, count: 64)
        let n = buffer.withUnsafeMutableBytes { data in
            control.withUnsafeMutableBytes { control in
                var iov = iovec(iov_base: data.baseAddress, iov_len: data.count)
                return withUnsafeMutablePointer(to: &iov) { iov in
                    var message = msghdr(msg_name: nil, msg_namelen: 0, msg_iov: iov, msg_iovlen: 1,
                                         msg_control: control.baseAddress, msg_controllen: control.count, msg_flags: 0)
                    let n = recvmsg(fd, &message, 0)
                    return n < 0 ? -1 : (message.msg_controllen > 0 ? n : -2 - n)
                }
            }
        }
        if n == -1 { return nil }
        let length = n >= 0 ? n : -2 - n
        let text = String(decoding: buffer[0..<length], as: UTF8.self)
        guard n >= 0 else { return (text, nil) }
        // struct cmsghdr { size_t len; int level; int type; } then the data.
        let level = control.withUnsafeBytes { $0.load(fromByteOffset: 8, as: Int32.self) }
        let type = control.withUnsafeBytes { $0.load(fromByteOffset: 12, as: Int32.self) }
        guard level == SOL_SOCKET, type == Int32(SCM_RIGHTS) else { return (text, nil) }
        return (text, control.withUnsafeBytes { $0.load(fromByteOffset: 16, as: Int32.self) })
    }

    func inode(_ fd: CInt) -> UInt64 {
        var s = stat()
        _ = fstat(fd, &s)
        return UInt64(s.st_ino)
    }

    @Test func keepingSendsFDSTOREWithItsNameAndTheDescriptorAndRemovingSendsFDSTOREREMOVE() throws {
        let path = "/tmp/latchkey-fdstore-\(getpid())"
        unlink(path)
        let manager = try SystemdNotifierTests().receiver(path)
        defer { close(manager); unlink(path) }
        let store = try #require(SystemdDescriptorStore(environment: ["NOTIFY_SOCKET": path]))
        var pair: [CInt] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }

        try store.keep(pair[0], name: "att-7-peripheral")
        let kept = try #require(receive(manager))
        #expect(kept.0 == "FDSTORE=1\nFDNAME=att-7-peripheral")
        let copy = try #require(kept.1, "the descriptor travels with the message")
        #expect(inode(copy) == inode(pair[0]))
        close(copy)

        try store.remove(name: "att-7-peripheral")
        let removed = try #require(receive(manager))
        #expect(removed.0 == "FDSTOREREMOVE=1\nFDNAME=att-7-peripheral")
        #expect(removed.1 == nil)
    }

    /// sd_listen_fds: only for our pid; names from LISTEN_FDNAMES; each made close-on-exec
    /// before the agent can start a child (a hook must not inherit a link).
    @Test func handedDescriptorsAreOursByPidNamedAndMadeCloseOnExec() throws {
        // Two descriptors in a row without FD_CLOEXEC (dup2 clears it), standing where systemd
        // puts fd 3 and 4; high numbers, as other tests open descriptors meanwhile.
        var pair: [CInt] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        let first: CInt = 900
        try #require(dup2(pair[0], first) == first && dup2(pair[1], first + 1) == first + 1)
        close(pair[0]); close(pair[1])
        defer { close(first); close(first + 1) }
        #expect(!SimulatedDescriptorStore.isCloseOnExec(first))
        let environment = ["NOTIFY_SOCKET": "/run/systemd/notify", "LISTEN_PID": "4242", "LISTEN_FDS": "2",
                           "LISTEN_FDNAMES": "att-3-central:att-9-peripheral"]

        let other = try #require(SystemdDescriptorStore(environment: environment, pid: 1, firstDescriptor: first))
        #expect(other.takeHanded().isEmpty, "LISTEN_PID names another process")
        #expect(!SimulatedDescriptorStore.isCloseOnExec(first))

        let store = try #require(SystemdDescriptorStore(environment: environment, pid: 4242, firstDescriptor: first))
        let handed = store.takeHanded()
        #expect(handed == [HandedDescriptor(name: "att-3-central", fileDescriptor: first),
                           HandedDescriptor(name: "att-9-peripheral", fileDescriptor: first + 1)])
        #expect(handed.allSatisfy { SimulatedDescriptorStore.isCloseOnExec($0.fileDescriptor) })
        #expect(store.takeHanded().isEmpty, "handed once")
    }

    @Test func outsideSystemdThereIsNoStore() {
        #expect(SystemdDescriptorStore(environment: ["LISTEN_PID": "1", "LISTEN_FDS": "1"], pid: 1) == nil)
    }

    @Test func namesWithAColonOrControlCharactersAreNotNames() {
        #expect(SimulatedDescriptorStore.isValidName("att-1-central"))
        #expect(!SimulatedDescriptorStore.isValidName("att-C0:FF:EE:00:00:01"))
        #expect(!SimulatedDescriptorStore.isValidName("a\nb"))
        #expect(!SimulatedDescriptorStore.isValidName(""))
    }
}
