import LatchkeyPosix
import LatchkeyTransport

/// Where the transport's ATT sockets come from: the kernel's L2CAP (`L2CAPSockets`), or
/// socketpairs in tests. Every fd handed out is non-blocking and owned by the caller.
package protocol LinkSocketProvider: AnyObject {
    /// Listens for incoming LE links on the ATT channel of `local` (the lock's side).
    func listen(on local: BluetoothAddress) throws(KernelError) -> any LinkListener
    /// Opens the ATT channel of a link to `peer` that the kernel has already made (the
    /// phone's side, right after Device Connected). Returns the fd and whether it is
    /// connected yet; if not, it becomes writable when it is (then read `connectError`).
    func claim(from local: BluetoothAddress, to peer: BluetoothAddress) throws(KernelError) -> (CInt, connected: Bool)
    /// Why a connect in progress failed, or nil once it succeeded.
    func connectError(_ fd: CInt) -> Errno?
    /// The largest ATT PDU the channel carries.
    func maximumTransmissionUnit(_ fd: CInt) -> Int
    /// The peer at the other end of a link's socket (one a descriptor store handed back);
    /// throws once the link is gone.
    func peer(of fd: CInt) throws(KernelError) -> BluetoothAddress
}

package protocol LinkListener: AnyObject {
    var fileDescriptor: CInt { get }
    /// The next incoming link, or nil when none is waiting.
    func accept() throws(KernelError) -> (CInt, BluetoothAddress)?
    func close()
}

/// L2CAP LE sockets on the ATT fixed channel (CID 4), SOCK_SEQPACKET: one PDU per message.
package final class L2CAPSockets: LinkSocketProvider {
    /// Pending incoming links the kernel may hold for us: a handful of phones at once.
    package static let backlog: CInt = 8
    /// The largest ATT_MTU (Core Vol 3 Part F 3.2.9: 517).
    package static let attMaximumMTU = 517
    /// The LE default ATT_MTU (Core Vol 3 Part F 3.2.8: 23), the floor.
    package static let attDefaultMTU = 23
    /// Used if L2CAP_OPTIONS cannot be read: the ATT_MTU that fits one LE Data Length
    /// Extension PDU (251 − 4 L2CAP header octets), well inside the kernel's default
    /// 672-octet channel MTU.
    package static let fallbackMTU = 247

    package init() {}

    package func listen(on local: BluetoothAddress) throws(KernelError) -> any LinkListener {
        do throws(SystemError) {
            let fd = try Syscalls.l2capSocket()
            do throws(SystemError) {
                try Syscalls.bindATT(fd, to: local)
                try Syscalls.listen(fd, backlog: Self.backlog)
            } catch {
                Syscalls.close(fd)
                throw error
            }
            return L2CAPListener(fd)
        } catch where error.errno == .addressInUse {
            throw KernelError(.system, "the ATT channel of \(local) is taken by another process (bluetoothd "
                              + "registers its own ATT server: run Latchkey with bluetoothd stopped)", errno: error.errno)
        } catch {
            throw KernelError(error)
        }
    }

    /// connect() here never creates a connection attempt: the kernel already made the link
    /// (Add Device auto-connect), and an L2CAP connect to a connected address attaches the
    /// channel to it. It is never the never-timing-out connect, which is Add Device's job.
    package func claim(from local: BluetoothAddress, to peer: BluetoothAddress) throws(KernelError) -> (CInt, connected: Bool) {
        do throws(SystemError) {
            let fd = try Syscalls.l2capSocket()
            do throws(SystemError) {
                try Syscalls.bindATT(fd, to: local)
                return (fd, try Syscalls.connectATT(fd, to: peer))
            } catch {
                Syscalls.close(fd)
                throw error
            }
        } catch {
            throw KernelError(error)
        }
    }

    package func connectError(_ fd: CInt) -> Errno? {
        do { return try Syscalls.socketError(fd) } catch { return error.errno }
    }

    package func peer(of fd: CInt) throws(KernelError) -> BluetoothAddress {
        do { return try Syscalls.l2capPeer(fd) } catch { throw KernelError(error) }
    }

    /// The kernel gives an ATT socket an incoming and an outgoing MTU of 672
    /// (L2CAP_DEFAULT_MTU, net/bluetooth/l2cap_core.c `l2cap_add_scid`); ATT itself never
    /// goes beyond 517, and GATT negotiates the ATT MTU within this.
    package func maximumTransmissionUnit(_ fd: CInt) -> Int {
        // Unreadable options: the ATT default MTU, which every LE link carries (attMTU's fallback).
        Self.attMTU(channel: try? Syscalls.l2capMTUs(fd))
    }

    /// The smaller of the channel's two MTUs (a zero is "unset"), capped to 517 and at
    /// least 23; the fallback when the options could not be read.
    package static func attMTU(channel mtus: (incoming: Int, outgoing: Int)?) -> Int {
        guard let mtus, let channel = [mtus.incoming, mtus.outgoing].filter({ $0 > 0 }).min() else { return fallbackMTU }
        return max(attDefaultMTU, min(attMaximumMTU, channel))
    }
}

package final class L2CAPListener: LinkListener {
    package private(set) var fileDescriptor: CInt

    package init(_ fd: CInt) { fileDescriptor = fd }

    deinit { close() }

    package func accept() throws(KernelError) -> (CInt, BluetoothAddress)? {
        do {
            guard case .done(let accepted) = try Syscalls.acceptATT(fileDescriptor) else { return nil }
            return accepted
        } catch {
            throw KernelError(error)
        }
    }

    package func close() {
        guard fileDescriptor >= 0 else { return }
        Syscalls.close(fileDescriptor)
        fileDescriptor = -1
    }
}
