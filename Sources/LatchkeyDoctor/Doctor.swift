import LatchkeyControl
import LatchkeyDaemons
import LatchkeyKernel
import LatchkeyLock
import LatchkeySettings

/// `latchkey doctor`: checks what the lock agent needs on this machine, each check a
/// question to `DoctorProbes`, and says what to fix. Every "ok" is the answer of a probe.
public struct Doctor {
    /// Which agent the machine is checked for.
    public enum Agent: Equatable, Sendable {
        /// Bluetooth, the board's chip and lines, the state directory.
        case lock
        /// Bluetooth, the state directory and the phone's key (no GPIO).
        case phone(keyFile: String)

        var name: String { if case .lock = self { "lock" } else { "phone" } }
        var unit: String { "latchkey-\(name).service" }
    }

    public var agent: Agent = .lock
    public var probes: DoctorProbes
    /// The lock's wiring (from the configuration and/or board), nil when none could be read.
    public var wiring: LockWiring?
    public var statusLEDLine: String?
    public var stateDirectory: String
    /// The adapter the configuration names (`adapter:`), for `transport: kernel`.
    public var adapter: String

    public init(probes: DoctorProbes, wiring: LockWiring?, statusLEDLine: String? = nil,
                stateDirectory: String, adapter: String = "hci0") {
        self.probes = probes; self.wiring = wiring; self.statusLEDLine = statusLEDLine
        self.stateDirectory = stateDirectory; self.adapter = adapter
    }

    /// The units' `User=` (systemd/latchkey-*.service, systemd/latchkey.sysusers.conf).
    public static let serviceUser = "latchkey"
    /// The lock unit's `SupplementaryGroups=`: the group that owns /dev/gpiochip* on Raspberry Pi OS.
    public static let deviceGroup = "gpio"

    /// CAP_NET_ADMIN is capability 12, CAP_NET_RAW 13 (linux/capability.h).
    static let capNetAdmin: UInt64 = 1 << 12
    static let capNetRaw: UInt64 = 1 << 13

    public func run() -> [DoctorFinding] {
        switch agent {
        case .lock: bluetooth() + [kernel()] + linkStore() + gpio() + state()
        case .phone(let keyFile): bluetooth() + [kernel()] + linkStore() + state() + key(keyFile)
        }
    }

    /// True when a finding blocks the agent (the command's exit status).
    public static func blocks(_ findings: [DoctorFinding]) -> Bool { findings.contains { $0.verdict == .fix } }

    func bluetooth() -> [DoctorFinding] {
        var out: [DoctorFinding] = []
        if let e = probes.bluetoothSocketErrno() {
            // EAFNOSUPPORT (97): the kernel was built or booted without Bluetooth.
            if e == 97 {
                return [.fix("no Bluetooth in this kernel (socket(AF_BLUETOOTH) failed: EAFNOSUPPORT): "
                             + "load it (`modprobe bluetooth`) or use a kernel with CONFIG_BT; Raspberry Pi OS has it")]
            }
            out.append(.fix("cannot open a Bluetooth socket (errno \(e)): check `dmesg | grep -i bluetooth`"))
        } else {
            out.append(.ok("kernel Bluetooth: AF_BLUETOOTH sockets open"))
        }
        let adapters = probes.adapters()
        if adapters.isEmpty {
            out.append(.fix("no Bluetooth adapter (nothing in /sys/class/bluetooth): on a Pi check `dtoverlay=disable-bt` "
                            + "is not in config.txt and `hciuart.service` ran"))
        } else if !adapter.contains(":") && !adapters.contains(adapter) {
            out.append(.fix("adapter \(adapter) not found; adapters present: \(adapters.joined(separator: ", ")) "
                            + "(set `adapter:` in the configuration)"))
        } else {
            out.append(.ok("Bluetooth adapters: \(adapters.joined(separator: ", "))"))
        }
        if probes.processNames().contains("bluetoothd") {
            out.append(.fix("bluetoothd is running and owns the adapters; it clears the kernel's pending connects when it "
                            + "starts: `systemctl mask --now bluetooth` (the units conflict with it), or give the lock "
                            + "a second adapter"))
        } else {
            out.append(.ok("bluetoothd is not running: the agent can own the adapter"))
        }
        if let caps = probes.effectiveCapabilities() {
            if caps & Self.capNetAdmin != 0 {
                out.append(.ok("mgmt permission: CAP_NET_ADMIN is effective"))
            } else {
                out.append(.fix("no CAP_NET_ADMIN for the Bluetooth management socket (uid \(probes.userID())): run under "
                                + "\(agent.unit) (AmbientCapabilities=CAP_NET_ADMIN CAP_NET_RAW) or as root to check"))
            }
        } else {
            out.append(.fix("cannot read this process's capabilities (/proc/self/status)"))
        }
        if case .phone = agent, let caps = probes.effectiveCapabilities() { out.append(hciWatch(caps)) }
        return out
    }

    /// The phone watches the adapter's HCI events to see a failed connect at once; without
    /// CAP_NET_RAW the kernel filters those events out and the phone re-sends its connect
    /// request on a timer instead (docs/LINUX-BLE.md, "Failed connects and CAP_NET_RAW").
    /// It still works, later: a warning, not a fix.
    func hciWatch(_ caps: UInt64) -> DoctorFinding {
        if caps & Self.capNetRaw != 0 { return .ok("HCI event watch: CAP_NET_RAW is effective") }
        let interval = KernelTransport.defaultPendingRefreshInterval.components.seconds
        return .warn("no CAP_NET_RAW (uid \(probes.userID())): the phone cannot watch the adapter for a failed connect and "
                     + "re-sends its connect request every \(interval) s instead, so an arrival can be up to \(interval) s late; "
                     + "run under \(agent.unit) (AmbientCapabilities=CAP_NET_ADMIN CAP_NET_RAW) or as root to check")
    }

    /// Kernels without upstream ab4eedb790ca crash when an ATT socket is closed after its
    /// link was lost, which happens whenever a phone walks out of range (docs/LINUX-BLE.md,
    /// "Kernels"). The agents still run, so a warning.
    func kernel() -> DoctorFinding {
        guard let (release, version) = probes.kernel() else {
            return .warn("cannot read the kernel's release (uname): check it is 6.12.20 or later (docs/LINUX-BLE.md, \"Kernels\")")
        }
        guard let fixed = L2CAPCloseCrash.isFixed(release: release, version: version) else {
            return .warn("cannot tell the stable release of kernel \(release): check it is 6.12.20 or later "
                         + "(docs/LINUX-BLE.md, \"Kernels\")")
        }
        let named = L2CAPCloseCrash.upstreamVersion(release: release, version: version).map { "\($0.0).\($0.1).\($0.2)" } ?? release
        if fixed { return .ok("kernel \(named) (\(release)) has the fix for the L2CAP crash after a lost link") }
        return .warn("kernel \(named) (\(release)) lacks upstream ab4eedb790ca: closing a Bluetooth link's socket after the "
                     + "link was lost can crash it (list_del corruption in hci_chan_del); run 6.12.20 or later — on Debian 12 "
                     + "the bookworm-backports kernel, on Raspberry Pi OS `apt full-upgrade` (docs/LINUX-BLE.md, \"Kernels\")")
    }

    func gpio() -> [DoctorFinding] {
        guard let wiring else {
            return [.fix("no lock wiring to check: pass --board <name> or --config with a `board:` or `gpio:` section")]
        }
        switch probes.gpioChip(wiring.chipLabel) {
        case .failure(let error) where error.code == .libraryMissing:
            return [.fix("libgpiod cannot be loaded: \(error.detail ?? "\(error)") (Debian 13 / trixie: libgpiod3; "
                         + "Debian 12 / bookworm: libgpiod2)")]
        case .failure(let error):
            return [.fix("GPIO chip '\(wiring.chipLabel)' not found (\(error.detail ?? "\(error)")): check the board "
                         + "(`--board`), that this is that board, and `ls -l /dev/gpiochip*`")]
        case .success(let chip):
            var out: [DoctorFinding] = [.ok("GPIO chip '\(wiring.chipLabel)' is /dev/\(chip.device) (\(chip.lines.count) lines), "
                                            + "through \(chip.library)")]
            out.append(access(toChip: "/dev/" + chip.device))
            var wanted = wiring.namedLines
            if let led = statusLEDLine, !wanted.contains(where: { $0.line == led }) { wanted.append(("status_led_line", led)) }
            let missing = wanted.filter { !chip.lines.contains($0.line) }
            for (field, line) in missing {
                out.append(.fix("line '\(line)' (\(field)) is not on \(chip.device); its named lines: "
                                + chip.lines.filter { !$0.isEmpty }.joined(separator: " ")))
            }
            if missing.isEmpty {
                out.append(.ok("lines present: " + wanted.map { "\($0.line) (\($0.field))" }.joined(separator: ", ")))
            }
            return out
        }
    }

    /// Whether the agent, as the unit runs it (user latchkey, group gpio), may open the chip:
    /// root running the doctor opens any device, so the node's owner and mode are read instead.
    /// Debian's own kernel leaves /dev/gpiochip* root:root 0600; Raspberry Pi OS root:gpio 0660.
    func access(toChip path: String) -> DoctorFinding {
        guard let node = probes.deviceNode(path) else { return .fix("cannot stat \(path)") }
        let user = probes.serviceUserID(), group = probes.deviceGroupID()
        let allowed = (node.owner == user && node.mode & 0o600 == 0o600)
            || (node.group == group && node.mode & 0o060 == 0o060) || node.mode & 0o006 == 0o006
        if allowed { return .ok("\(path) opens read-write for user \(Self.serviceUser) / group \(Self.deviceGroup)") }
        return .fix("\(path) is uid \(node.owner) gid \(node.group) mode \(String(node.mode & 0o777, radix: 8)): the agent "
                    + "(user \(Self.serviceUser), group \(Self.deviceGroup)) cannot open it; give it to the group, e.g. a udev rule "
                    + "`SUBSYSTEM==\"gpio\", KERNEL==\"gpiochip*\", GROUP=\"\(Self.deviceGroup)\", MODE=\"0660\"`"
                    + (group == nil ? " (and `groupadd --system \(Self.deviceGroup)`)" : ""))
    }

    func state() -> [DoctorFinding] {
        guard let status = probes.fileStatus(stateDirectory) else {
            return [.fix("state directory \(stateDirectory) does not exist: \(agent.unit) creates it "
                         + "(StateDirectory=, mode 0700); by hand: `install -d -m 0700 -o latchkey -g latchkey \(stateDirectory)`")]
        }
        var out: [DoctorFinding] = []
        // The agent's user owns it, whoever runs the doctor (root, to have CAP_NET_ADMIN like the unit).
        let (owner, who): (UInt32, String)
        if let service = probes.serviceUserID() {
            (owner, who) = (service, "the service user \(Self.serviceUser) (uid \(service))")
        } else {
            out.append(.fix("no user \(Self.serviceUser), the units' User=: install systemd/latchkey.sysusers.conf and run "
                            + "`systemd-sysusers` (docs/INSTALLING.md, \"From the source tree\")"))
            let uid = probes.userID()
            (owner, who) = (uid, "this user (uid \(uid))")
        }
        if status.owner != owner {
            out.append(.fix("state directory \(stateDirectory) is owned by uid \(status.owner), not by \(who): "
                            + "`chown -R \(Self.serviceUser):\(Self.serviceUser) \(stateDirectory)`"))
        }
        if status.mode & 0o777 != 0o700 {
            out.append(.fix("state directory \(stateDirectory) has mode \(String(status.mode & 0o777, radix: 8)), "
                            + "keys live there: `chmod 0700 \(stateDirectory)`"))
        }
        if out.isEmpty { out.append(.ok("state directory \(stateDirectory): mode 0700, owned by \(who)")) }
        return out + storage() + agentStore() + agentAdvertising()
    }

    /// Below this the store's next transaction (WAL, journal, event log) may not fit.
    static let minimumFreeBytes: UInt64 = 1 << 20

    /// A store that cannot be written refuses unlocks (docs/ARCHITECTURE.md, "Nothing fails silently").
    func storage() -> [DoctorFinding] {
        guard let space = probes.filesystemSpace(stateDirectory) else { return [] }
        if space.readOnly {
            return [.fix("state directory \(stateDirectory) is on a read-only filesystem: no decision can be recorded, "
                         + "so the lock runs degraded (it locks, it refuses to unlock); remount it read-write "
                         + "(`mount -o remount,rw`) and check the card")]
        }
        if space.availableBytes < Self.minimumFreeBytes {
            return [.fix("state directory \(stateDirectory) has \(space.availableBytes) bytes free: the store cannot record "
                         + "decisions, so the lock refuses to unlock; free space on that filesystem")]
        }
        return [.ok("state directory \(stateDirectory): writable, \(space.availableBytes / (1 << 20)) MiB free")]
    }

    /// A field of the running agent's `status` line (`name=value`), when one answers.
    func agentStatusField(_ name: String) -> Substring? {
        guard let status = probes.agentStatus(stateDirectory),
              let field = status.split(separator: " ").first(where: { $0.hasPrefix(name + "=") }) else { return nil }
        return field.dropFirst(name.count + 1)
    }

    /// What the running agent says of its store (`status`'s `store=`), when one answers.
    func agentStore() -> [DoctorFinding] {
        guard let faults = agentStatusField("store") else { return [] }
        if faults == "ok" { return [.ok("the running \(agent.name) agent's store: every write on disk")] }
        return [.fix("the running \(agent.name) agent reports a store fault (\(faults)): writes to its state directory "
                     + "fail; see its log (`journalctl -u \(agent.unit)`), then free space or remount read-write")]
    }

    /// Whether the running lock advertises beside a linked central (`status`'s
    /// `advertising_while_linked=`): where its controller cannot, one linked central (an idle
    /// stranger) hides the lock from every phone until it is dropped (docs/SECURITY.md, "Strangers").
    func agentAdvertising() -> [DoctorFinding] {
        guard let answer = agentStatusField("advertising_while_linked") else { return [] }
        switch answer {
        case "yes":
            return [.ok("the running lock advertises while a central is linked: one linked central does not hide it")]
        case "no":
            return [.warn("this Bluetooth controller cannot advertise while a central is linked (the kernel refused it: "
                          + "the controller's LE states do not allow it): any linked central, an idle stranger too, hides "
                          + "the lock from phones until it leaves or is dropped after `lock.unauthenticated_link_seconds`; "
                          + "a controller that allows it fixes this")]
        default:
            return [.ok("the running lock has not yet learnt whether its controller advertises while a central is linked "
                        + "(no central has linked since it started)")]
        }
    }

    /// The phone's key: the secret every command is sealed with, readable by the agent and
    /// by nobody else.
    func key(_ path: String) -> [DoctorFinding] {
        guard let status = probes.fileStatus(path) else {
            return [.fix(PairedKeyFile.missingAdvice(path))]
        }
        var out: [DoctorFinding] = []
        if let service = probes.serviceUserID(), status.owner != service {
            out.append(.fix("key \(path) is owned by uid \(status.owner), not by the service user \(Self.serviceUser): "
                            + "`chown \(Self.serviceUser):\(Self.serviceUser) \(path)`"))
        }
        if status.mode & 0o077 != 0 {
            out.append(.fix("key \(path) has mode \(String(status.mode & 0o777, radix: 8)); it is a secret: `chmod 0600 \(path)`"))
        }
        if out.isEmpty { out.append(.ok("key \(path): mode \(String(status.mode & 0o777, radix: 8)), the agent's own")) }
        return out
    }
}
