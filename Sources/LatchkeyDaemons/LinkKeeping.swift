#if canImport(Glibc)
import Glibc
#endif
import LatchkeyPosix
import LatchkeySettings
import Logging

/// Whether an agent keeps its links' sockets in systemd's file descriptor store, so that a
/// link outlives the agent's death (docs/RESTORATION.md, "Links that outlive the agent").
/// Only under systemd, and only on a kernel that has the fix for the L2CAP `hci_chan_del`
/// crash: PID 1 closes a stored socket whose link was lost, and on a kernel without the fix
/// that close would crash the kernel from PID 1 (docs/LINUX-BLE.md, "Kernels").
public enum LinkKeeping: Equatable, Sendable {
    case kept
    /// No `$NOTIFY_SOCKET`: run by hand; links end with the process, as always.
    case notUnderSystemd
    /// The kernel (named) lacks upstream ab4eedb790ca.
    case kernelLacksTheFix(String)
    /// The kernel's stable release cannot be read: treated as lacking the fix.
    case kernelUnknown(String)

    public static func decide(environment: [String: String], kernel: (release: String, version: String)?) -> LinkKeeping {
        guard let socket = environment["NOTIFY_SOCKET"], !socket.isEmpty else { return .notUnderSystemd }
        guard let (release, version) = kernel else { return .kernelUnknown("uname failed") }
        guard let fixed = L2CAPCloseCrash.isFixed(release: release, version: version) else { return .kernelUnknown(release) }
        let named = L2CAPCloseCrash.upstreamVersion(release: release, version: version).map { "\($0.0).\($0.1).\($0.2)" }
        return fixed ? .kept : .kernelLacksTheFix(named ?? release)
    }

    /// One sentence for the agent's log and `latchkey doctor`.
    public var sentence: String {
        switch self {
        case .kept:
            "links are kept in systemd's file descriptor store: a link outlives a crash of the agent"
        case .notUnderSystemd:
            "links end with the agent (not run by systemd: no NOTIFY_SOCKET)"
        case .kernelLacksTheFix(let kernel):
            "links end with the agent: kernel \(kernel) lacks the L2CAP hci_chan_del fix, and PID 1 closing a kept "
                + "socket after its link was lost would crash it"
        case .kernelUnknown(let kernel):
            "links end with the agent: the stable release of kernel \(kernel) cannot be told, so it is treated as "
                + "lacking the L2CAP hci_chan_del fix"
        }
    }

    /// The store the agent's kernel transport keeps its links in, or nil (with the reason logged).
    static func openStore(environment: [String: String] = ProcessEnvironment.current,
                          kernel: (release: String, version: String)? = KernelRelease.current(),
                          logger: Logger) -> (any DescriptorStore)? {
        let choice = decide(environment: environment, kernel: kernel)
        logger.info("link store: \(choice.sentence)")
        guard choice == .kept, let store = SystemdDescriptorStore(environment: environment) else { return nil }
        for fault in store.handingFaults { logger.warning("link store: a descriptor systemd handed back is unusable: \(fault)") }
        return store
    }
}

/// The running kernel's `uname -r` and `uname -v`.
public enum KernelRelease {
    public static func current() -> (release: String, version: String)? {
        var names = utsname()
        guard uname(&names) == 0 else { return nil }
        func text<T>(_ field: T) -> String {
            withUnsafeBytes(of: field) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        }
        return (text(names.release), text(names.version))
    }
}
