// swift-tools-version: 6.2
// Latchkey: a Bluetooth LE smart-lock agent and its phone-side central, for Pi-class Linux.
//
// The module graph is the layer diagram of docs/ARCHITECTURE.md ("Layers"): a module depends
// only on modules of lower layers; scripts/check-layers checks it, and CI builds with
// `--explicit-target-dependency-import-check error`, so every import is declared here. Bottom up:
//   LatchkeyATT        pure ATT PDUs, UUIDs, error codes (stdlib only, no I/O)
//   LatchkeyPhone      phone domain: the away/home presence machine and the state the phone keeps (pure)
//   LatchkeyConfig     YAML configuration files with file:line:field errors (libyaml)
//   LatchkeySQLite     a small typed wrapper over the system SQLite's C API (connection, statements, migrations)
//   LatchkeyBuildInfo  the version and the git commit `latchkey --version` prints (BuildCommitPlugin)
//   LatchkeyEvents     the catalogue of the agents' timeline events: names, meanings, fields (docs/EVENTS.md)
//   LatchkeyTransport  the seam: event loop/clock, radio transport, ATT link protocols
//   LatchkeyGATT       pure GATT database, server and client state machines, chunked transfer
//   LatchkeyLockProtocol pure lock service protocol: UUIDs, command/challenge frames, rejections
//   LatchkeySecurity   per-phone keys, sealed commands (ChaChaPoly), single-use challenges, the one gate
//   LatchkeyManagers   what both Core-Bluetooth-like managers share: the ATT bearer, the application gate, restoration's seam
//   LatchkeyGPIO       the GPIO seam, below the lock's domain and the kernel
//   LatchkeyPosix      real-time poll(2) event loop, Unix sockets, signals, the C-call core (errno policy, mocking hook)
//   LatchkeySim        the deterministic twin: manual clock, simulated radio, in-process
//   LatchkeyMgmt       pure codecs of the kernel's Bluetooth management (mgmt) protocol and of the HCI events it watches
//   LatchkeyLock       lock domain: lock state machine, actuator, journal and audit-log seams
//   LatchkeyKernelSockets the kernel's Bluetooth sockets: mgmt client, L2CAP ATT, raw HCI events (the only user of CBluetooth)
//   LatchkeyKernel     the real Linux radio: KernelTransport on those sockets, its links and watches
//   LatchkeyLibgpiod   the real GPIO lines: libgpiod 1.6 or 2.x loaded at run time (the only user of CGPIOD)
//   LatchkeySimAir     the simulated radio shared by processes: an "air" server on a Unix socket
//   LatchkeySimGPIO    the simulated GPIO world: in-process and file-backed chips
//   LatchkeyCentral    the central side: CentralManager, Peripheral (GATT client, cache), CentralGate
//   LatchkeyPeripheral the peripheral side: PeripheralManager (GATT server, advertising), PeripheralGate
//   LatchkeyMQTT       the MQTT seam: libmosquitto (the only user of CMosquitto)
//   LatchkeyTestKit    scripted PDU exchanges, fixture databases, PDU-parser verifier (tests only)
//   LatchkeyAgents     what both agents share: the timeline's events, the lock's GATT service, the arrival policy
//   LatchkeyLockAgent  the lock's agent: domain + peripheral manager + security (sessions, arrival, restoration)
//   LatchkeyPhoneAgent the phone's agent: presence + central manager + sealed commands, log fetch, pairing
//   LatchkeyStore      the durable store behind the agents: SQLite, journal, log, keys, restoration
//   LatchkeySimDisk    a disk under SQLite that loses unsynced writes at a power cut, fills, goes read-only (tests only)
//   LatchkeySimMQTT    an in-process MQTT broker (tests only)
//   LatchkeyControl    the control-socket protocol: dispatcher, client, paths, peer rules (all the bridge uses)
//   LatchkeySettings   the agents' settings from their config files, the boards, the paired key file
//   LatchkeyDaemons    config files → agents: their wiring on any loop, the daemons on the real-time loop, journald, hooks
//   LatchkeyInspection the read-only store behind `status`, `log`, `keys list`
//   LatchkeyDoctor     `latchkey doctor`
//   LatchkeyBridge     `latchkey mqtt`: agents' control sockets ↔ an MQTT broker (Home Assistant, fleets)
//   LatchkeyDemo       `latchkey demo`: agents as processes on the simulated air, the story
//   LatchkeyTorture    the torture harness: agents SIGKILLed at random moments, what survives
//   latchkey           the CLI (the only module that picks a command)
//   latchkey-torture   the torture's entry point
//   latchkey-bench     the benchmarks, the store's included
import PackageDescription

let strictness: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
]

// How the agents' executables are linked in release builds (issue 8: idle RSS, issue 5: start
// time); figures from `perf stat` and /proc/PID/smaps of an idle agent, x86_64:
// - `-z pack-relative-relocs` (DT_RELR, glibc >= 2.36: Debian 12, Raspberry Pi OS bookworm):
//   the ~97,000 relative relocations of a position-independent executable take 37 kB
//   instead of 2.3 MB, which the dynamic loader reads at every start; gold has no RELR, so
//   lld (shipped with the Swift toolchain) links.
// - `--no-export-dynamic`: the static Swift runtime's link arguments export every symbol of
//   our own objects; nothing loads symbols from the executable, and the 1.6 MB dynamic
//   symbol table was read at start.
// Together: idle RSS -6 MB, start CPU -3 ms. The binary stays position-independent (ASLR).
// - `--symbol-ordering-file link/agents.order`: the ~1.1 MB of functions the agents run, first
//   in .text. The kernel maps text 64 kB around each fault, so left in link order they drag
//   in most of the 12 MB: idle RSS -3.7 MB. A stale list costs memory, never correctness;
//   scripts/update-order-file regenerates it.
// - `-z now` (with lld's default relro): every import bound at start, then the GOT read-only
//   (full RELRO; lintian's hardening-no-bindnow). 449 imports from the C libraries; start CPU
//   the same within noise (`perf stat -r 50 latchkey --version`, two rounds each: 3.43–3.72
//   ms without, 3.48–3.51 ms with).
let agentLinkage: [LinkerSetting] = [
    .unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs", "-Xlinker", "-z", "-Xlinker", "now",
                  "-Xlinker", "--no-export-dynamic",
                  "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/link/agents.order",
                  "-Xlinker", "--no-warn-symbol-ordering"], .when(platforms: [.linux], configuration: .release)),
]

let package = Package(
    name: "Latchkey",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "latchkey", targets: ["latchkey"]),
        .executable(name: "latchkey-bench", targets: ["latchkey-bench"]),
        .executable(name: "latchkey-torture", targets: ["latchkey-torture"]),
        .executable(name: "latchkey-sim", targets: ["latchkey-sim"]),
    ],
    dependencies: [
        // Each dependency replaces code we would otherwise write and maintain; build-time
        // costs on 2 cores are in the commit messages that added them.
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    ],
    targets: [
        .target(name: "LatchkeyATT", swiftSettings: strictness),
        .target(name: "LatchkeyGATT", dependencies: ["LatchkeyATT"], swiftSettings: strictness),
        // Test support, imported by tests, the benchmark and fuzz targets, never by production modules.
        .target(name: "LatchkeyTestKit", dependencies: ["LatchkeyATT", "LatchkeyGATT", "LatchkeyPosix", "LatchkeySim",
                                                        "LatchkeyTransport"],
                swiftSettings: strictness),
        .target(name: "LatchkeyTransport", dependencies: ["LatchkeyATT"], swiftSettings: strictness),
        .target(name: "LatchkeySim", dependencies: ["LatchkeyTransport"], swiftSettings: strictness),
        // epoll-era calls Glibc does not import (ppoll, accept4, pipe2), sockaddr_un, signal self-pipe.
        .target(name: "CLinuxShims"),
        .target(name: "LatchkeyPosix", dependencies: ["CLinuxShims", "LatchkeyTransport"],
                // The syscall mocking hook (`SyscallMock`, used by the modules above that call C) exists
                // in debug builds only (swift-system's ENABLE_MOCKING).
                swiftSettings: strictness + [.define("ENABLE_MOCKING", .when(configuration: .debug))]),
        // libbluetooth headers (apt: libbluetooth-dev), for LatchkeyKernel only.
        .systemLibrary(name: "CBluetooth", providers: [.apt(["libbluetooth-dev"])]),  // headers only
        // libgpiod 1.6 and 2.x prototypes, for LatchkeyLibgpiod only: nothing is linked, the
        // library is dlopen()ed at run time (Sources/CGPIOD/shim.h says why).
        .systemLibrary(name: "CGPIOD"),
        .target(name: "LatchkeyMgmt", dependencies: ["LatchkeyTransport"], swiftSettings: strictness),
        // The GPIO seam, below both the lock's domain and the kernel's libgpiod backends.
        .target(name: "LatchkeyGPIO", dependencies: ["LatchkeyTransport"], swiftSettings: strictness),
        // The simulated GPIO world (in-process and file-backed chips): the demo, `gpio.simulated_chip_root` and tests.
        .target(name: "LatchkeySimGPIO", dependencies: ["LatchkeyGPIO", "LatchkeyTransport"], swiftSettings: strictness),
        // The kernel's Bluetooth sockets (mgmt, L2CAP ATT, raw HCI) and every C call of the kernel transport.
        .target(name: "LatchkeyKernelSockets",
                dependencies: ["CBluetooth", "CLinuxShims", "LatchkeyMgmt", "LatchkeyPosix", "LatchkeyTransport"],
                swiftSettings: strictness),
        .target(
            name: "LatchkeyKernel",
            dependencies: ["LatchkeyATT", "LatchkeyKernelSockets", "LatchkeyMgmt",
                           "LatchkeyPosix", "LatchkeyTransport", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strictness),
        // The GPIO seam's real chips: libgpiod 1.6 or 2.x, dlopen()ed at run time.
        .target(name: "LatchkeyLibgpiod", dependencies: ["CGPIOD", "LatchkeyGPIO", "LatchkeyPosix", "LatchkeyTransport"],
                swiftSettings: strictness),
        .target(
            name: "LatchkeySimAir",
            dependencies: ["LatchkeyATT", "LatchkeyPosix", "LatchkeySim", "LatchkeyTransport"],
            swiftSettings: strictness),
        .target(
            name: "LatchkeyManagers",
            dependencies: ["LatchkeyATT", "LatchkeyGATT", "LatchkeyTransport"],
            swiftSettings: strictness),
        // The two sides of Core Bluetooth's shape, each on the managers' shared base.
        .target(name: "LatchkeyCentral", dependencies: ["LatchkeyATT", "LatchkeyGATT", "LatchkeyManagers", "LatchkeyTransport"],
                swiftSettings: strictness),
        .target(name: "LatchkeyPeripheral",
                dependencies: ["LatchkeyATT", "LatchkeyGATT", "LatchkeyManagers", "LatchkeyTransport"],
                swiftSettings: strictness),
        // The lock's domain moves the bolt for a key only with what LatchkeySecurity's LockAuthority allowed.
        .target(name: "LatchkeyLock", dependencies: ["LatchkeyGPIO", "LatchkeySecurity", "LatchkeyTransport"],
                swiftSettings: strictness),
        .target(name: "LatchkeyPhone", swiftSettings: strictness),
        // Every timeline event declared once; emitters, the demo, the torture and docs/EVENTS.md read it.
        .target(name: "LatchkeyEvents", swiftSettings: strictness),
        // libyaml 0.2 (apt: libyaml-dev), the parser Yams wraps, taken directly: Yams imports Foundation.
        .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
        .target(name: "LatchkeyConfig", dependencies: ["CYAML"], swiftSettings: strictness),
        .target(name: "LatchkeyLockProtocol", dependencies: ["LatchkeyATT"], swiftSettings: strictness),
        .target(
            name: "LatchkeySecurity",
            dependencies: ["LatchkeyLockProtocol", "LatchkeyTransport",
                           .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strictness),
        // What both agents share: the timeline's events, the lock's GATT service, the arrival policy.
        .target(
            name: "LatchkeyAgents",
            dependencies: ["LatchkeyEvents", "LatchkeyATT", "LatchkeyGATT", "LatchkeyLock", "LatchkeyLockProtocol", "LatchkeyManagers",
                           "LatchkeySecurity",
                           "LatchkeyTransport"],
            swiftSettings: strictness),
        // The lock's agent (the peripheral side) and the phone's (the central side).
        .target(
            name: "LatchkeyLockAgent",
            dependencies: ["LatchkeyEvents", "LatchkeyATT", "LatchkeyAgents", "LatchkeyGATT", "LatchkeyGPIO", "LatchkeyLock",
                           "LatchkeyLockProtocol", "LatchkeyManagers", "LatchkeyPeripheral", "LatchkeySecurity",
                           "LatchkeyTransport"],
            swiftSettings: strictness),
        .target(
            name: "LatchkeyPhoneAgent",
            dependencies: ["LatchkeyEvents", "LatchkeyATT", "LatchkeyAgents", "LatchkeyCentral", "LatchkeyGATT", "LatchkeyLock",
                           "LatchkeyLockProtocol", "LatchkeyManagers", "LatchkeyPhone", "LatchkeySecurity",
                           "LatchkeyTransport"],
            swiftSettings: strictness),
        // The system SQLite 3.40 (apt: libsqlite3-dev), for LatchkeySQLite only.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .target(name: "LatchkeySQLite", dependencies: ["CSQLite"], swiftSettings: strictness),
        // A disk under SQLite that fails on cue (power cuts, disk full, read-only): tests and simulations only.
        .target(name: "LatchkeySimDisk", dependencies: ["CSQLite", "LatchkeySim"], swiftSettings: strictness),
        // The only module that speaks SQL: agents see the protocols they already define.
        .target(
            name: "LatchkeyStore",
            dependencies: ["CSQLite", "LatchkeyLock", "LatchkeyPhone", "LatchkeySQLite", "LatchkeySecurity",
                           "LatchkeyTransport"],
            swiftSettings: strictness),
        // The control-socket protocol: dispatcher, server and client, paths, peer rules (all the bridge needs of the daemons).
        .target(name: "LatchkeyControl", dependencies: ["LatchkeyAgents", "LatchkeyConfig", "LatchkeyEvents", "LatchkeyManagers",
                                                        "LatchkeyPosix", "LatchkeyTransport",
                                                        .product(name: "Logging", package: "swift-log")], swiftSettings: strictness),
        // The agents' settings from their config files, the boards, the paired key file.
        .target(name: "LatchkeySettings", dependencies: ["LatchkeyAgents", "LatchkeyConfig", "LatchkeyControl",
                                                         "LatchkeyLock", "LatchkeyLockAgent", "LatchkeyManagers", "LatchkeyPhoneAgent", "LatchkeyPosix",
                                                         "LatchkeySecurity", "LatchkeySimAir", "LatchkeyTransport"], swiftSettings: strictness),
        // Config files → agents: their wiring on any loop, the two daemons on the real-time loop, journald, readiness, hooks.
        .target(name: "LatchkeyDaemons", dependencies: ["LatchkeyEvents", "LatchkeyAgents", "LatchkeyCentral", "LatchkeyConfig", "LatchkeyControl",
                                                        "LatchkeyGPIO", "LatchkeyKernel", "LatchkeyLibgpiod", "LatchkeyLock",
                                                        "LatchkeyLockAgent", "LatchkeyLockProtocol", "LatchkeyManagers", "LatchkeyPeripheral", "LatchkeyPhone",
                                                        "LatchkeyPhoneAgent", "LatchkeyPosix", "LatchkeySecurity", "LatchkeySettings",
                                                        "LatchkeySim", "LatchkeySimAir", "LatchkeySimGPIO",
                                                        "LatchkeyStore", "LatchkeyTransport",
                                                        .product(name: "Logging", package: "swift-log")],
                swiftSettings: strictness),
        // The read-only store behind `latchkey status`, `log` and `keys list`.
        .target(name: "LatchkeyInspection", dependencies: ["LatchkeyAgents", "LatchkeyConfig", "LatchkeyControl",
                                                           "LatchkeyDaemons", "LatchkeyLock", "LatchkeyLockProtocol",
                                                           "LatchkeyPosix", "LatchkeySettings", "LatchkeyStore",
                                                           "LatchkeyTransport"], swiftSettings: strictness),
        // `latchkey doctor`: what the agents need on this machine.
        .target(name: "LatchkeyDoctor", dependencies: ["LatchkeyControl", "LatchkeyDaemons", "LatchkeyGPIO",
                                                       "LatchkeyInspection", "LatchkeyKernel", "LatchkeyLibgpiod", "LatchkeyLock",
                                                       "LatchkeyPosix", "LatchkeySettings"], swiftSettings: strictness),
        // `latchkey demo`: the air and the agents as processes, the story and its report.
        .target(name: "LatchkeyDemo", dependencies: ["LatchkeyAgents", "LatchkeyControl", "LatchkeyDaemons",
                                                     "LatchkeyEvents", "LatchkeyGPIO", "LatchkeyLock", "LatchkeyPosix",
                                                     "LatchkeySecurity", "LatchkeySettings", "LatchkeySimAir",
                                                     "LatchkeySimGPIO", "LatchkeyStore", "LatchkeyTransport"], swiftSettings: strictness),
        // The torture harness `latchkey-torture` runs: agents SIGKILLed at random moments, the audits.
        .target(name: "LatchkeyTorture", dependencies: ["LatchkeyControl", "LatchkeyDaemons", "LatchkeyDemo",
                                                        "LatchkeyEvents", "LatchkeyGPIO", "LatchkeyLock", "LatchkeyPosix",
                                                        "LatchkeySecurity", "LatchkeySim", "LatchkeySimGPIO",
                                                        "LatchkeyStore", "LatchkeyTransport"],
                swiftSettings: strictness),
        // libmosquitto 2.0 (apt: libmosquitto-dev), MQTT 5, for LatchkeyMQTT only: the broker's own client library,
        // its headers only: it is dlopen()ed by `latchkey mqtt`, so the agents never map it (or OpenSSL).
        .systemLibrary(name: "CMosquitto", providers: [.apt(["libmosquitto-dev"])]),
        .target(name: "LatchkeyMQTT", dependencies: ["CMosquitto", "LatchkeyPosix", "LatchkeyTransport"],
                swiftSettings: strictness),
        // An in-process MQTT broker behind the same seam, for tests.
        .target(name: "LatchkeySimMQTT", dependencies: ["LatchkeyMQTT", "LatchkeyTransport"], swiftSettings: strictness),
        .target(
            name: "LatchkeyBridge",
            dependencies: ["LatchkeyAgents", "LatchkeyBuildInfo", "LatchkeyConfig", "LatchkeyControl", "LatchkeyMQTT",
                           "LatchkeyPosix", "LatchkeyTransport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictness),
        // The commit is baked in before every build (Plugins/BuildCommitPlugin: git, or $LATCHKEY_COMMIT).
        .plugin(name: "BuildCommitPlugin", capability: .buildTool()),
        .target(name: "LatchkeyBuildInfo", swiftSettings: strictness, plugins: ["BuildCommitPlugin"]),
        .executableTarget(
            name: "latchkey",
            dependencies: ["LatchkeyEvents", "LatchkeyAgents", "LatchkeyBridge", "LatchkeyBuildInfo", "LatchkeyConfig",
                           "LatchkeyControl", "LatchkeyDaemons", "LatchkeyDemo", "LatchkeyDoctor",
                           "LatchkeyInspection", "LatchkeyLock", "LatchkeyLockProtocol", "LatchkeyPhoneAgent", "LatchkeyPosix",
                           "LatchkeySecurity", "LatchkeySettings", "LatchkeySimAir", "LatchkeyStore",
                           .product(name: "ArgumentParser", package: "swift-argument-parser"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictness, linkerSettings: agentLinkage),
        // Kills the agents at random moments and checks what survives (issue 5).
        // A household's year in one process on simulated time, faults and invariants from a seed.
        .target(name: "LatchkeyHousehold", dependencies: ["LatchkeyAgents", "LatchkeyBridge", "LatchkeyCentral", "LatchkeyControl", "LatchkeyDaemons",
                                                          "LatchkeyGPIO", "LatchkeyLock", "LatchkeyLockProtocol", "LatchkeyManagers", "LatchkeyMQTT", "LatchkeyPhone", "LatchkeyPhoneAgent",
                                                          "LatchkeyLockAgent", "LatchkeyPosix", "LatchkeySecurity", "LatchkeySettings", "LatchkeySim",
                                                          "LatchkeySimDisk", "LatchkeySimGPIO", "LatchkeySimMQTT", "LatchkeyStore",
                                                          "LatchkeyTestKit", "LatchkeyTorture", "LatchkeyTransport", "LatchkeyEvents",
                                                          .product(name: "Logging", package: "swift-log")],
                swiftSettings: strictness),
        .executableTarget(name: "latchkey-sim", dependencies: ["LatchkeyHousehold"], swiftSettings: strictness),
        .executableTarget(
            name: "latchkey-torture",
            dependencies: ["LatchkeyDaemons", "LatchkeyTorture", .product(name: "Logging", package: "swift-log")],
            // Linked like `latchkey`: its agents are copies of it, and it times their start.
            swiftSettings: strictness, linkerSettings: agentLinkage),
        // Counts malloc calls for the benchmark's allocations-per-PDU figure (bench only).
        .target(name: "CMallocCounter"),
        .executableTarget(
            name: "latchkey-bench",
            dependencies: ["CMallocCounter", "LatchkeyATT", "LatchkeyGATT", "LatchkeyLock", "LatchkeyStore",
                           "LatchkeyTransport"],
            swiftSettings: strictness,
            // Export the counting malloc so the dynamic linker binds the Swift runtime's calls to it.
            linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic-symbol=malloc"], .when(platforms: [.linux]))]),
        .testTarget(name: "LatchkeyATTTests", dependencies: ["LatchkeyATT", "LatchkeyTestKit"]),
        .testTarget(name: "LatchkeyHouseholdTests", dependencies: ["LatchkeyHousehold", "LatchkeyLock", "LatchkeySim", "LatchkeyTransport"]),
        .testTarget(name: "LatchkeyGATTTests", dependencies: ["LatchkeyATT", "LatchkeyGATT", "LatchkeyTestKit"]),
        .testTarget(name: "LatchkeySimTests", dependencies: ["LatchkeyATT", "LatchkeySim", "LatchkeyTransport"]),
        .testTarget(
            name: "LatchkeyManagersTests",
            dependencies: ["LatchkeyATT", "LatchkeyCentral", "LatchkeyGATT", "LatchkeyManagers", "LatchkeyPeripheral", "LatchkeySim", "LatchkeyTestKit",
                           "LatchkeyTransport"]),
        .testTarget(name: "LatchkeyPosixTests", dependencies: ["LatchkeyPosix", "LatchkeyTestKit", "LatchkeyTransport"]),
        .testTarget(name: "LatchkeyMgmtTests", dependencies: ["LatchkeyATT", "LatchkeyMgmt", "LatchkeyTransport"]),
        .testTarget(
            name: "LatchkeyKernelTests",
            dependencies: ["LatchkeyATT", "LatchkeyGATT", "LatchkeyKernel", "LatchkeyKernelSockets",
                           "LatchkeyManagers", "LatchkeyMgmt", "LatchkeyPeripheral", "LatchkeyPosix", "LatchkeySim", "LatchkeyTestKit",
                           "LatchkeyTransport"]),
        .testTarget(
            name: "LatchkeyLibgpiodTests",
            dependencies: ["CGPIOD", "LatchkeyGPIO", "LatchkeyLibgpiod", "LatchkeyLock", "LatchkeyPosix", "LatchkeyTransport"]),
        .testTarget(
            name: "LatchkeySimAirTests",
            dependencies: ["LatchkeyATT", "LatchkeyPosix", "LatchkeySim", "LatchkeySimAir", "LatchkeyTransport"]),
        .testTarget(name: "LatchkeySecurityTests", dependencies: ["LatchkeyLockProtocol", "LatchkeySecurity",
                                                                  "LatchkeySim", "LatchkeyTransport"]),
        .testTarget(name: "LatchkeyPhoneTests", dependencies: ["LatchkeyPhone"]),
        .testTarget(name: "LatchkeyConfigTests", dependencies: ["LatchkeyConfig"]),
        .testTarget(name: "LatchkeyBuildInfoTests", dependencies: ["LatchkeyBuildInfo"]),
        .testTarget(name: "LatchkeyEventsTests", dependencies: ["LatchkeyEvents"]),
        .testTarget(
            name: "LatchkeyAgentsTests",
            dependencies: ["LatchkeyEvents", "LatchkeyATT", "LatchkeyAgents", "LatchkeyCentral", "LatchkeyGATT", "LatchkeyGPIO", "LatchkeyLock",
                           "LatchkeyLockAgent", "LatchkeyLockProtocol", "LatchkeyManagers", "LatchkeyPeripheral", "LatchkeyPhone", "LatchkeyPhoneAgent", "LatchkeySecurity",
                           "LatchkeySim", "LatchkeySimGPIO", "LatchkeyTestKit", "LatchkeyTransport"]),
        .testTarget(
            name: "LatchkeyDaemonsTests",
            dependencies: ["LatchkeyEvents", "LatchkeyAgents", "LatchkeyBridge", "LatchkeyCentral", "LatchkeyConfig", "LatchkeyControl", "LatchkeyDaemons",
                           "LatchkeyDemo", "LatchkeyDoctor", "LatchkeyGPIO", "LatchkeyInspection", "LatchkeyLock",
                           "LatchkeyLockAgent", "LatchkeyLockProtocol", "LatchkeyMQTT", "LatchkeyManagers", "LatchkeyPhoneAgent", "LatchkeyPosix",
                           "LatchkeySecurity", "LatchkeySettings", "LatchkeySim", "LatchkeySimAir", "LatchkeySimGPIO",
                           "LatchkeyStore", "LatchkeyTestKit", "LatchkeyTorture", "LatchkeyTransport",
                           .product(name: "Logging", package: "swift-log")]),
        .testTarget(
            name: "LatchkeyBridgeTests",
            dependencies: ["LatchkeyBridge", "LatchkeyConfig", "LatchkeyMQTT", "LatchkeyPosix", "LatchkeySim",
                           "LatchkeySimMQTT", "LatchkeyTransport"]),
        .testTarget(name: "LatchkeyLockTests", dependencies: ["LatchkeyGPIO", "LatchkeyLock", "LatchkeySim",
                                                              "LatchkeySimGPIO", "LatchkeyTransport"]),
        .testTarget(
            name: "LatchkeySimGPIOTests",
            dependencies: ["LatchkeyGPIO", "LatchkeyLock", "LatchkeySim", "LatchkeySimGPIO", "LatchkeyTransport"]),
        .testTarget(name: "LatchkeySQLiteTests", dependencies: ["CSQLite", "LatchkeySQLite", "LatchkeySimDisk"]),
        .testTarget(
            name: "LatchkeyStoreTests",
            dependencies: ["LatchkeySimDisk", "LatchkeyEvents", "LatchkeyATT", "LatchkeyAgents", "LatchkeyCentral", "LatchkeyDaemons", "LatchkeyGATT", "LatchkeyGPIO",
                           "LatchkeyLock", "LatchkeyLockAgent", "LatchkeyLockProtocol", "LatchkeyManagers", "LatchkeyPeripheral", "LatchkeyPhone",
                           "LatchkeyPhoneAgent", "LatchkeySQLite", "LatchkeySecurity", "LatchkeySim", "LatchkeySimGPIO", "LatchkeyStore",
                           "LatchkeyTransport"]),
    ]
)

// Zero compiler warnings in our targets, enforced: every target declared here is ours (the
// dependencies' targets are in their own manifests), and each treats its warnings as errors
// (`-warnings-as-errors` for Swift, `-Werror` for C). PackageDescription 6.2's setting rather
// than `unsafeFlags`: SwiftPM applies a package's warning settings only where it is the root,
// so a dependency's warnings never fail our build. Appended after the fuzz targets below, so
// they are covered too.
// The C settings go to the targets written in C only: a Swift target would hand them to its
// Clang importer, and the system headers it imports are not ours. A plugin target takes no
// build settings at all (SwiftPM refuses the manifest): .ci/run fails on any `warning:` the
// build prints from our files, which covers plugins.
let targetsInC: Set<String> = ["CLinuxShims", "CMallocCounter"]
func treatingWarningsAsErrors(_ targets: [Target]) {
    for target in targets where target.type != .system && target.type != .plugin && target.type != .binary {
        if targetsInC.contains(target.name) {
            target.cSettings = (target.cSettings ?? []) + [.treatAllWarnings(as: .error)]
        } else {
            target.swiftSettings = (target.swiftSettings ?? []) + [.treatAllWarnings(as: .error)]
        }
    }
}

// libFuzzer targets (`Tests/fuzz/run`): added only when LATCHKEY_FUZZ=1, because they call
// libFuzzer's driver and link only with `-sanitize=fuzzer` (docs/BUILDING.md, "Fuzzing").
if Context.environment["LATCHKEY_FUZZ"] == "1" {
    package.targets.append(.target(name: "FuzzSupport", path: "Tests/fuzz/targets/FuzzSupport", swiftSettings: strictness))
    let fuzzTargets: [(String, [Target.Dependency])] = [
        ("fuzz-att-decode", ["LatchkeyATT", "LatchkeyTestKit"]),
        ("fuzz-gatt-server", ["LatchkeyGATT", "LatchkeyATT", "LatchkeyTestKit"]),
        ("fuzz-command-frame", ["LatchkeySecurity", "LatchkeyLockProtocol", "LatchkeyLock", "LatchkeySim",
                                "LatchkeyTransport"]),
        ("fuzz-session", ["LatchkeySecurity", "LatchkeyLockProtocol", "LatchkeySim", "LatchkeyTransport"]),
    ]
    for (name, dependencies) in fuzzTargets {
        package.targets.append(.executableTarget(name: name, dependencies: ["FuzzSupport"] + dependencies,
                                                 path: "Tests/fuzz/targets/\(name)", swiftSettings: strictness))
    }
}

// The arm64 cross build's test run (scripts/cross-arm64 test, docs/ARM64.md) builds only the
// test targets it runs under qemu and the targets they depend on: SwiftPM links every test
// target into one bundle and `--build-tests` builds every target, and the rest (kernel,
// runtime, bridge, the executables) would take minutes of the emulated stage's build.
if let kept = Context.environment["LATCHKEY_TEST_TARGETS"] {
    var needed = Set(kept.split(separator: " ").map(String.init))
    var pending = Array(needed)
    while let name = pending.popLast() {
        for dependency in package.targets.first(where: { $0.name == name })?.dependencies ?? [] {
            switch dependency {
            case .targetItem(let target, _), .byNameItem(let target, _):
                if needed.insert(target).inserted { pending.append(target) }
            default: break
            }
        }
    }
    package.targets.removeAll { !needed.contains($0.name) }
    package.products.removeAll()
}

treatingWarningsAsErrors(package.targets)
