import LatchkeyGPIO
import LatchkeyLock
import Logging
import Testing
@testable import LatchkeyControl
@testable import LatchkeyDaemons
@testable import LatchkeyDoctor

/// The doctor's logic on made-up systems: every answer comes from the probes, so each test
/// changes one answer and checks the one line it must change.
struct DoctorTests {
    let wiring = LockWiring(chipLabel: "pinctrl-bcm2711", actuator: .pulse(.milliseconds(500)),
                            unlockOutput: .init("GPIO17"), door: .init("GPIO5", bias: .pullUp))

    /// A Pi that is ready: Bluetooth, hci0, no bluetoothd, CAP_NET_ADMIN, the chip, a 0700 state dir.
    func healthy() -> DoctorProbes {
        DoctorProbes(bluetoothSocketErrno: { nil }, adapters: { ["hci0"] }, processNames: { ["systemd", "sshd"] },
                     effectiveCapabilities: { 1 << 12 | 1 << 13 }, userID: { 999 }, serviceUserID: { 999 },
                     gpioChip: { label in
                         label == "pinctrl-bcm2711"
                             ? .success(("gpiochip0", ["ID_SDA", "GPIO5", "GPIO17", "GPIO22"], "libgpiod.so.3 (libgpiod 2.2.1)"))
                             : .failure(GPIOError(.chipNotFound, chip: label, detail: "GPIO chips present: none"))
                     },
                     fileStatus: { $0 == "/var/lib/latchkey/lock" ? (999, 0o700) : nil },
                     deviceNode: { $0 == "/dev/gpiochip0" ? (0, 997, 0o660) : nil }, deviceGroupID: { 997 },
                     kernel: { ("6.12.95+deb12-amd64", "#1 SMP PREEMPT_DYNAMIC Debian 6.12.95-1~bpo12+1 (2026-10-01)") },
                     unitFile: { _ in DoctorTests.shippedUnitService })
    }

    /// The [Service] line of the shipped units that lets systemd keep the agent's links.
    static let shippedUnitService = "[Unit]\nDescription=x\n[Service]\nType=notify\nFileDescriptorStoreMax=16\n"

    func run(_ probes: DoctorProbes, led: String? = "GPIO22") -> [DoctorFinding] {
        Doctor(probes: probes, wiring: wiring, statusLEDLine: led, stateDirectory: "/var/lib/latchkey/lock").run()
    }

    func fixes(_ findings: [DoctorFinding]) -> [String] { findings.filter { $0.verdict == .fix }.map(\.message) }
    func warnings(_ findings: [DoctorFinding]) -> [String] { findings.filter { $0.verdict == .warn }.map(\.message) }

    @Test func aReadyPiHasNothingToFix() {
        let findings = run(healthy())
        #expect(fixes(findings) == [])
        #expect(!Doctor.blocks(findings))
        #expect(findings.count == 10)
        #expect(findings.allSatisfy { "\($0)".hasPrefix("ok   ") })
        #expect(findings.map(\.message).contains("GPIO chip 'pinctrl-bcm2711' is /dev/gpiochip0 (4 lines), through "
                                                  + "libgpiod.so.3 (libgpiod 2.2.1)"), "which libgpiod the agent will load")
    }

    /// Store faults show in the doctor: a full or read-only state filesystem, and
    /// the running agent's own `store=` report.
    @Test func aFullOrReadOnlyStateFilesystemAndTheAgentsStoreFaultAreFixes() {
        var p = healthy()
        p.filesystemSpace = { _ in (readOnly: false, availableBytes: 64 << 20) }
        p.agentStatus = { _ in "ok lock=locked door=closed operating_mode=normal transport_refusals=0 store=ok" }
        #expect(fixes(run(p)) == [])

        p.filesystemSpace = { _ in (readOnly: false, availableBytes: 4096) }
        #expect(fixes(run(p)).count == 1)
        #expect(fixes(run(p)).first?.contains("4096 bytes free") == true)

        p.filesystemSpace = { _ in (readOnly: true, availableBytes: 64 << 20) }
        #expect(fixes(run(p)).first?.contains("read-only filesystem") == true)

        p.filesystemSpace = { _ in (readOnly: false, availableBytes: 64 << 20) }
        p.agentStatus = { _ in "ok lock=locked door=closed operating_mode=normal transport_refusals=0 store=journal,lockout" }
        #expect(fixes(run(p)) == ["the running lock agent reports a store fault (journal,lockout): writes to its state "
                                  + "directory fail; see its log (`journalctl -u latchkey-lock.service`), then free space "
                                  + "or remount read-write"])
    }

    /// Advertising beside a linked central: where the running lock's controller
    /// cannot, any linked central hides the lock; the doctor warns (it does not block).
    @Test func aControllerThatCannotAdvertiseWhileLinkedIsAWarning() {
        var p = healthy()
        let status = "ok lock=locked door=closed operating_mode=normal transport_refusals=0 store=ok"
        p.agentStatus = { _ in status + " advertising_while_linked=no" }
        let findings = run(p)
        #expect(!Doctor.blocks(findings))
        #expect(warnings(findings).count == 1)
        #expect(warnings(findings).first?.hasPrefix("this Bluetooth controller cannot advertise while a central is linked") == true)
        for answer in ["yes", "unknown"] {
            p.agentStatus = { _ in status + " advertising_while_linked=\(answer)" }
            #expect(warnings(run(p)).isEmpty, "\(answer)")
            #expect(run(p).contains { $0.verdict == .ok && $0.message.contains("while a central is linked") }, "\(answer)")
        }
    }

    @Test func thisMachineNoBluetoothAndNoChip() {
        var p = healthy()
        p.bluetoothSocketErrno = { 97 }
        p.adapters = { [] }
        p.gpioChip = { .failure(GPIOError(.chipNotFound, chip: $0, detail: "GPIO chips present: none")) }
        let findings = run(p)
        #expect(Doctor.blocks(findings))
        let text = fixes(findings)
        #expect(text.contains { $0.hasPrefix("no Bluetooth in this kernel") })
        #expect(text.contains { $0.hasPrefix("GPIO chip 'pinctrl-bcm2711' not found") && $0.contains("present: none") })
        #expect(findings.map(\.description).contains { $0.hasPrefix("FIX  no Bluetooth in this kernel") })
    }

    /// A Pi with GPIO chips but neither libgpiod: the fix names the package, not a missing chip.
    @Test func aMissingLibgpiodNamesThePackageToInstall() {
        var p = healthy()
        p.gpioChip = {
            .failure(GPIOError(.libraryMissing, chip: $0, detail: "install libgpiod3 or libgpiod2 (libgpiod.so.3: cannot "
                                   + "open shared object file; libgpiod.so.2: cannot open shared object file)"))
        }
        #expect(fixes(run(p)) == ["libgpiod cannot be loaded: install libgpiod3 or libgpiod2 (libgpiod.so.3: cannot open "
                                  + "shared object file; libgpiod.so.2: cannot open shared object file) (Debian 13 / "
                                  + "trixie: libgpiod3; Debian 12 / bookworm: libgpiod2)"])
    }

    @Test func bluetoothdRunningIsAFix() {
        var p = healthy()
        p.processNames = { ["bluetoothd"] }
        #expect(fixes(run(p)).count == 1)
        #expect(fixes(run(p))[0].contains("bluetoothd is running"))
    }

    @Test func withoutCapNetAdminMgmtIsRefused() {
        var p = healthy()
        p.effectiveCapabilities = { 1 << 13 }
        #expect(fixes(run(p)).count == 1)
        #expect(fixes(run(p))[0].contains("CAP_NET_ADMIN"))
    }

    @Test func aMissingAdapterListsThePresentOnes() {
        var p = healthy()
        p.adapters = { ["hci1"] }
        #expect(fixes(run(p)) == ["adapter hci0 not found; adapters present: hci1 (set `adapter:` in the configuration)"])
    }

    @Test func aMissingLineListsTheChipsLines() {
        let f = fixes(run(healthy(), led: "GPIO23"))
        #expect(f.count == 1)
        #expect(f[0].contains("'GPIO23' (status_led_line)") && f[0].contains("ID_SDA GPIO5 GPIO17 GPIO22"))
    }

    @Test func noWiringIsAFixNotASilentSkip() {
        let findings = Doctor(probes: healthy(), wiring: nil, stateDirectory: "/var/lib/latchkey/lock").run()
        #expect(fixes(findings).contains { $0.hasPrefix("no lock wiring to check") })
    }

    @Test func stateDirectoryModeOwnerAndAbsence() {
        var p = healthy()
        p.fileStatus = { _ in (999, 0o755) }
        #expect(fixes(run(p)).count == 1 && fixes(run(p))[0].contains("mode 755"))
        p.fileStatus = { _ in (0, 0o700) }
        #expect(fixes(run(p)).count == 1 && fixes(run(p))[0].contains("owned by uid 0, not by the service user latchkey"))
        p.fileStatus = { _ in nil }
        #expect(fixes(run(p)).count == 1 && fixes(run(p))[0].contains("does not exist"))
    }

    /// Root runs the doctor to have the unit's CAP_NET_ADMIN: the state directory belongs
    /// to the service user, not to root, and that is right, not a FIX.
    @Test func asRootTheStateDirectoryIsTheServiceUsers() {
        var p = healthy()
        p.userID = { 0 }
        let findings = run(p)
        #expect(fixes(findings) == [])
        #expect(findings.contains { $0.message.hasSuffix("owned by the service user latchkey (uid 999)") })
    }

    /// Root opens any device; the chip's node must let the unit's user or group in.
    @Test func aChipOnlyRootCanOpenIsAFix() {
        var p = healthy()
        p.userID = { 0 }
        p.deviceNode = { _ in (0, 0, 0o600) }
        let f = fixes(run(p))
        #expect(f.count == 1 && f[0].hasPrefix("/dev/gpiochip0 is uid 0 gid 0 mode 600") && f[0].contains("GROUP=\"gpio\""))
        p.deviceNode = { _ in (999, 0, 0o600) }  // owned by latchkey itself
        #expect(fixes(run(p)) == [])
        p.deviceNode = { _ in (0, 997, 0o640) }  // the group may read only
        #expect(fixes(run(p)).count == 1)
    }

    @Test func noServiceUserIsAFix() {
        var p = healthy()
        p.serviceUserID = { nil }
        #expect(fixes(run(p)).count == 1 && fixes(run(p))[0].hasPrefix("no user latchkey"))
    }

    /// The phone agent: Bluetooth and its state directory as for the lock, no GPIO, and its
    /// key, a secret only the agent may read.
    @Test func thePhoneIsCheckedForItsKeyAndNotForGPIO() {
        let key = "/var/lib/latchkey/phone/paired.key"
        var p = healthy()
        p.gpioChip = { label in Issue.record("the phone drives no GPIO"); return .failure(GPIOError(.chipNotFound, chip: label)) }
        p.fileStatus = { [key] path in
            path == "/var/lib/latchkey/phone" ? (999, 0o700) : path == key ? (999, 0o600) : nil
        }
        func phone(_ p: DoctorProbes) -> [DoctorFinding] {
            var doctor = Doctor(probes: p, wiring: nil, stateDirectory: "/var/lib/latchkey/phone")
            doctor.agent = .phone(keyFile: key)
            return doctor.run()
        }
        let findings = phone(p)
        #expect(fixes(findings) == [])
        #expect(findings.map(\.message).last == "key \(key): mode 600, the agent's own")

        let healthyStatus = p.fileStatus
        p.fileStatus = { path in path == key ? (999, 0o644) : healthyStatus(path) }
        #expect(fixes(phone(p)) == ["key \(key) has mode 644; it is a secret: `chmod 0600 \(key)`"])
        p.fileStatus = { path in path == key ? (0, 0o600) : healthyStatus(path) }
        #expect(fixes(phone(p)).count == 1 && fixes(phone(p))[0].contains("owned by uid 0, not by the service user"))
        p.fileStatus = { path in path == key ? nil : healthyStatus(path) }
        #expect(fixes(phone(p)).count == 1 && fixes(phone(p))[0].hasPrefix("no key at \(key): pair this phone"))
        p.fileStatus = { _ in nil }
        #expect(fixes(phone(p)).contains { $0.contains("latchkey-phone.service creates it") })
    }

    /// Debian 12's own kernel crashes when a link's socket is closed after the link was lost
    /// (docs/LINUX-BLE.md, "Kernels"): the doctor warns, without blocking the agent.
    @Test func aKernelWithTheL2CAPCloseCrashIsAWarning() {
        var p = healthy()
        p.kernel = { ("6.1.0-56-amd64", "#1 SMP PREEMPT_DYNAMIC Debian 6.1.192-2 (2026-09-01)") }
        let findings = run(p)
        #expect(!Doctor.blocks(findings))
        let w = warnings(findings)
        #expect(w.count == 2 && w[0].hasPrefix("kernel 6.1.192 (6.1.0-56-amd64) lacks upstream ab4eedb790ca"))
        #expect(w.count == 2 && w[1].hasPrefix("under latchkey-lock.service: links end with the agent: kernel 6.1.192 lacks"))
        #expect(findings.map(\.description).contains { $0.hasPrefix("WARN kernel 6.1.192") })
        p.kernel = { nil }
        #expect(warnings(run(p)).count == 2 && warnings(run(p))[0].hasPrefix("cannot read the kernel's release"))
        p.kernel = { ("6.12.95+deb12-amd64", "#1 SMP") }
        #expect(warnings(run(p)) == [])
        #expect(run(p).map(\.message).contains("kernel 6.12.95 (6.12.95+deb12-amd64) has the fix for the L2CAP crash after a lost link"))
    }

    /// Each series from the release that carries the fix (docs/LINUX-BLE.md, "Kernels").
    @Test func theL2CAPFixIsFoundByStableRelease() {
        let cases: [(String, String, Bool?)] = [
            ("6.1.0-56-amd64", "#1 SMP PREEMPT_DYNAMIC Debian 6.1.192-2 (2026-09-01)", false),
            ("6.1.0-56-amd64", "#1 SMP", false),
            ("6.6.84-v8+", "#1", false), ("6.6.85-v8+", "#1", true),
            ("6.6.0-1-amd64", "#1 Debian 6.6.90-1", true),
            ("6.12.19-rpi", "#1", false), ("6.12.20", "#1", true),
            ("6.12.47+rpt-rpi-v8", "#1 SMP PREEMPT Debian 1:6.12.47-1+rpt1 (2025-09-16)", true),
            ("6.12.95+deb12-amd64", "#1 SMP", true),
            ("6.13.12", "#1", false), ("6.8.0-45-generic", "#45-Ubuntu SMP", false),
            ("6.14.0-rc2", "#1", true), ("6.18.44-fc-v657", "#1", true), ("7.0.1", "#1", true),
            ("5.15.0-100-generic", "#1", false), ("garbage", "#1", nil),
        ]
        for (release, version, fixed) in cases {
            #expect(L2CAPCloseCrash.isFixed(release: release, version: version) == fixed, "\(release) / \(version)")
        }
    }

    /// The phone sees a failed connect on a raw HCI socket; without CAP_NET_RAW it falls back
    /// to re-sending every 5 s, which works, later: a warning for the phone, nothing for the lock.
    @Test func thePhoneWithoutCapNetRawIsWarnedOfTheTimerFallback() {
        var p = healthy()
        p.effectiveCapabilities = { 1 << 12 }
        p.fileStatus = { path in path == "/var/lib/latchkey/phone" || path == "/k" ? (999, path == "/k" ? 0o600 : 0o700) : nil }
        var doctor = Doctor(probes: p, wiring: nil, stateDirectory: "/var/lib/latchkey/phone")
        doctor.agent = .phone(keyFile: "/k")
        let findings = doctor.run()
        #expect(fixes(findings) == [] && !Doctor.blocks(findings))
        let w = warnings(findings)
        #expect(w.count == 1 && w[0].hasPrefix("no CAP_NET_RAW (uid 999)") && w[0].contains("every 5 s"))
        p.effectiveCapabilities = { 1 << 12 | 1 << 13 }
        doctor.probes = p
        #expect(warnings(doctor.run()) == [])
        #expect(doctor.run().map(\.message).contains("HCI event watch: CAP_NET_RAW is effective"))
        // The lock watches no HCI events: no line about CAP_NET_RAW.
        p.effectiveCapabilities = { 1 << 12 }
        #expect(!run(p).contains { $0.message.contains("CAP_NET_RAW") && $0.verdict != .fix })
        #expect(warnings(run(p)) == [])
    }

    /// On the machine running the tests, the system probes answer for real: whatever they
    /// find, every line is ok, WARN or FIX, and a FIX means the exit status says so.
    @Test func theSystemProbesAnswer() {
        let findings = Doctor(probes: .system, wiring: wiring, stateDirectory: "/nonexistent/latchkey").run()
        #expect(fixes(findings).contains { $0.contains("/nonexistent/latchkey does not exist") })
        #expect(Doctor.blocks(findings))
    }

    /// The link store: used under the unit only where the kernel has the L2CAP fix,
    /// and only kept by systemd when the unit sets FileDescriptorStoreMax= above 0.
    @Test func theLinkStoreNeedsTheFixedKernelAndFileDescriptorStoreMax() {
        var p = healthy()
        #expect(run(p).contains { $0.verdict == .ok && $0.message.hasPrefix("under latchkey-lock.service: links are kept in "
                                                                          + "systemd's file descriptor store") })
        for unit in ["[Service]\nType=notify\n", "[Service]\nFileDescriptorStoreMax=0\n",
                     "[Service]\nFileDescriptorStoreMax=16\nFileDescriptorStoreMax=0\n", "[Unit]\nFileDescriptorStoreMax=16\n"] {
            p.unitFile = { _ in unit }
            let w = warnings(run(p))
            #expect(w.count == 1 && w[0].contains("systemd closes every link the agent keeps"), "\(unit)")
        }
        // One entry keeps the socket, not the state file beside it.
        p.unitFile = { _ in "[Service]\nFileDescriptorStoreMax=1\n" }
        #expect(warnings(run(p)).contains { $0.contains("not the state file beside it") })
        p.unitFile = { _ in nil }
        #expect(warnings(run(p)).first?.hasPrefix("latchkey-lock.service is not installed") == true)
        // The phone is checked against its own unit.
        p.unitFile = { $0 == "latchkey-phone.service" ? DoctorTests.shippedUnitService : nil }
        var doctor = Doctor(probes: p, wiring: nil, stateDirectory: "/var/lib/latchkey/phone")
        doctor.agent = .phone(keyFile: "/var/lib/latchkey/phone/key")
        #expect(doctor.linkStore().map(\.verdict) == [.ok])
    }

    @Test func theAgentKeepsLinksOnlyUnderSystemdOnAFixedKernel() {
        let fixed = (release: "6.12.95+deb12-amd64", version: "#1 SMP")
        let affected = (release: "6.1.0-56-amd64", version: "#1 SMP PREEMPT_DYNAMIC Debian 6.1.192-2 (2026-09-01)")
        let systemd = ["NOTIFY_SOCKET": "/run/systemd/notify"]
        #expect(LinkKeeping.decide(environment: systemd, kernel: fixed) == .kept)
        #expect(LinkKeeping.decide(environment: [:], kernel: fixed) == .notUnderSystemd)
        #expect(LinkKeeping.decide(environment: systemd, kernel: affected) == .kernelLacksTheFix("6.1.192"))
        #expect(LinkKeeping.decide(environment: systemd, kernel: nil) == .kernelUnknown("uname failed"))
        #expect(LinkKeeping.decide(environment: systemd, kernel: ("garbage", "#1")) == .kernelUnknown("garbage"))
        // Without NOTIFY_SOCKET, or on an affected kernel, the agent gets no store: nothing changes.
        let logger = Logger(label: "test")
        #expect(LinkKeeping.openStore(environment: [:], kernel: fixed, logger: logger) == nil)
        #expect(LinkKeeping.openStore(environment: systemd, kernel: affected, logger: logger) == nil)
        #expect(LinkKeeping.openStore(environment: systemd, kernel: fixed, logger: logger) != nil)
    }
}
