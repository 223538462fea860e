#if canImport(Glibc)
import Glibc
#endif
import LatchkeyControl
import LatchkeyDaemons
import LatchkeyGPIO
import LatchkeyKernel
import LatchkeyLibgpiod
import LatchkeyLock
import LatchkeyPosix

/// What `latchkey doctor` asks the system, one closure per question, so the checks' logic
/// is tested with answers made up in the test (`DoctorTests`) and runs on the real system
/// through `DoctorProbes.system`.
public struct DoctorProbes {
    /// nil when `socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI)` works, else its errno.
    public var bluetoothSocketErrno: () -> Int32?
    /// Adapter names from /sys/class/bluetooth (hci0, …).
    public var adapters: () -> [String]
    /// Names (comm) of the running processes.
    public var processNames: () -> [String]
    /// The effective capability set (CapEff of /proc/self/status), nil when unreadable.
    public var effectiveCapabilities: () -> UInt64?
    public var userID: () -> UInt32
    /// The uid of the user the units run the agent as (`Doctor.serviceUser`), nil when there is no such user.
    public var serviceUserID: () -> UInt32?
    /// The GPIO chip with this label, its line names and the libgpiod that read them.
    public var gpioChip: (String) -> Result<(device: String, lines: [String], library: String), GPIOError>
    /// Owner, group and permission bits of a device node, nil when it cannot be stat'ed.
    public var deviceNode: (String) -> (owner: UInt32, group: UInt32, mode: UInt32)?
    /// The gid of the group the lock unit adds (`SupplementaryGroups=`, `Doctor.deviceGroup`), nil when absent.
    public var deviceGroupID: () -> UInt32?
    /// Owner and permission bits of a path, nil when it does not exist.
    public var fileStatus: (String) -> (owner: UInt32, mode: UInt32)?
    /// The running kernel's `uname -r` and `uname -v`, nil when uname fails.
    public var kernel: () -> (release: String, version: String)?
    /// Whether the filesystem holding a path is mounted read-only, and the bytes an
    /// unprivileged writer can still use there; nil when it cannot be asked.
    public var filesystemSpace: (String) -> (readOnly: Bool, availableBytes: UInt64)?
    /// The text of an installed unit file and its drop-ins (in the order systemd reads them),
    /// nil when the unit is not installed.
    public var unitFile: (String) -> String?
    /// The `status` reply of the agent running on the state directory's control socket,
    /// nil when none answers.
    public var agentStatus: (String) -> String?

    public init(bluetoothSocketErrno: @escaping () -> Int32?, adapters: @escaping () -> [String],
                processNames: @escaping () -> [String], effectiveCapabilities: @escaping () -> UInt64?,
                userID: @escaping () -> UInt32, serviceUserID: @escaping () -> UInt32? = { nil },
                gpioChip: @escaping (String) -> Result<(device: String, lines: [String], library: String), GPIOError>,
                fileStatus: @escaping (String) -> (owner: UInt32, mode: UInt32)?,
                deviceNode: @escaping (String) -> (owner: UInt32, group: UInt32, mode: UInt32)? = { _ in nil },
                deviceGroupID: @escaping () -> UInt32? = { nil },
                kernel: @escaping () -> (release: String, version: String)? = { nil },
                filesystemSpace: @escaping (String) -> (readOnly: Bool, availableBytes: UInt64)? = { _ in nil },
                agentStatus: @escaping (String) -> String? = { _ in nil },
                unitFile: @escaping (String) -> String? = { _ in nil }) {
        self.bluetoothSocketErrno = bluetoothSocketErrno; self.adapters = adapters; self.processNames = processNames
        self.effectiveCapabilities = effectiveCapabilities; self.userID = userID; self.serviceUserID = serviceUserID
        self.gpioChip = gpioChip; self.deviceNode = deviceNode; self.deviceGroupID = deviceGroupID
        self.fileStatus = fileStatus; self.kernel = kernel
        self.filesystemSpace = filesystemSpace; self.agentStatus = agentStatus; self.unitFile = unitFile
    }

    /// Where systemd looks for system units, most important first (systemd.unit(5)).
    static let unitDirectories = ["/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system",
                                  "/usr/lib/systemd/system", "/lib/systemd/system"]

    /// The running system.
    public static var system: DoctorProbes { DoctorProbes(
        bluetoothSocketErrno: {
            // AF_BLUETOOTH = 31, BTPROTO_HCI = 1 (linux/socket.h, bluetooth/bluetooth.h).
            let fd = socket(31, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 1)
            if fd < 0 { return errno }
            close(fd)
            return nil
        },
        adapters: { directoryEntries("/sys/class/bluetooth").filter { $0.hasPrefix("hci") && !$0.contains(":") }.sorted() },
        processNames: {
            // A process that ended between the listing and the read is no longer running: left out.
            directoryEntries("/proc").filter { $0.allSatisfy(\.isNumber) }.compactMap { pid in
                (try? readTextFile("/proc/\(pid)/comm")).map { String($0.split(separator: "\n").first ?? "") }
            }
        },
        effectiveCapabilities: {
            // Unreadable: nil, which the doctor reports as a FIX line.
            guard let status = try? readTextFile("/proc/self/status") else { return nil }
            let line = status.split(separator: "\n").first { $0.hasPrefix("CapEff:") }
            return line.flatMap { UInt64($0.dropFirst("CapEff:".count).trimmingPrefix(while: \.isWhitespace), radix: 16) }
        },
        userID: { geteuid() },
        serviceUserID: { getpwnam(Doctor.serviceUser)?.pointee.pw_uid },
        gpioChip: { label in Result { () throws(GPIOError) in try GPIOInventory.lines(ofChipLabelled: label) } },
        fileStatus: { path in
            var s = stat()
            guard stat(path, &s) == 0 else { return nil }
            return (s.st_uid, s.st_mode & 0o7777)
        },
        deviceNode: { path in
            var s = stat()
            guard stat(path, &s) == 0 else { return nil }
            return (s.st_uid, s.st_gid, s.st_mode & 0o7777)
        },
        deviceGroupID: { getgrnam(Doctor.deviceGroup)?.pointee.gr_gid },
        kernel: { KernelRelease.current() },
        filesystemSpace: { path in
            var s = statvfs()
            guard statvfs(path, &s) == 0 else { return nil }
            return (s.f_flag & UInt(ST_RDONLY) != 0, UInt64(s.f_bavail) * UInt64(s.f_frsize))
        },
        agentStatus: { directory in
            let loop = PosixEventLoop()
            var reply: String?
            var answered = false
            // No agent listening is an answer too (nil): the doctor runs with or without one.
            guard let channel = try? LocalControlClient.send("status", to: directory + "/control.sock", on: loop,
                                                             line: { reply = $0 }, done: { _ in answered = true })
            else { return nil }
            defer { channel.close() }
            // A loop error or an agent too busy to answer in 2 s leaves `reply` nil: "no answer".
            _ = try? loop.run(until: { answered }, timeout: .seconds(2))
            return reply
        },
        unitFile: { unit in
            // The first unit file found wins; drop-ins follow, read in name order (a later one wins).
            guard let main = unitDirectories.lazy.compactMap({ try? readTextFile($0 + "/" + unit) }).first else { return nil }
            let dropIns = unitDirectories.flatMap { directory in
                directoryEntries(directory + "/" + unit + ".d").filter { $0.hasSuffix(".conf") }.sorted()
                    .compactMap { try? readTextFile(directory + "/" + unit + ".d/" + $0) }
            }
            return ([main] + dropIns).joined(separator: "\n")
        })
    }
}
