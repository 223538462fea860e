// swift-tools-version: 6.1
// Latchkey: a Bluetooth LE smart-lock agent and its phone-side central, for Pi-class Linux.
//
// The module graph is the layer diagram of docs/ARCHITECTURE.md; dependencies point down:
//   LatchkeyATT        pure ATT PDUs, UUIDs, error codes (stdlib only, no I/O)
//   LatchkeyGATT       pure GATT database, server and client state machines, chunked transfer
//   LatchkeyTestKit    scripted PDU exchanges, fixture databases, PDU-parser verifier (tests only)
//   LatchkeyTransport  the seam: event loop/clock, radio transport, ATT link protocols
//   LatchkeySim        the deterministic twin: manual clock, simulated radio, in-process
//   LatchkeyPosix      real-time poll(2) event loop, Unix sockets, signals (the only Glibc user so far)
//   LatchkeySimAir     the simulated radio shared by processes: an "air" server on a Unix socket
//   LatchkeyMgmt       pure codecs of the kernel's Bluetooth management (mgmt) protocol
//   LatchkeyKernel     the real Linux world: mgmt + L2CAP ATT sockets, libgpiod (the only user of CBluetooth/CGPIOD)
//   LatchkeyManagers   Core-Bluetooth-like central and peripheral managers, generic over the seam
//   LatchkeyLockProtocol pure lock service protocol: UUIDs, command/challenge frames, rejections
//   LatchkeySecurity   per-phone keys, sealed commands (ChaChaPoly), single-use challenges
//   LatchkeyConfig     YAML configuration files with file:line:field errors (Yams)
//   LatchkeyPhone      phone domain: the away/home presence machine (pure)
//   LatchkeyLock       lock domain: lock state machine, GPIO protocol, simulated GPIO
//   LatchkeyAgents     the lock agent and the phone agent, wiring domain + managers + security
//   LatchkeyStore      the durable store behind the agents: SQLite (GRDB), journal, log, keys, restoration
//   LatchkeyRuntime    config files → agents on the real-time loop: the daemons behind the CLI
//   latchkey           the CLI (the only module that picks a transport)
//   latchkey-torture   the agents as processes, SIGKILLed at random moments; checks what survives
import PackageDescription

let strictness: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
]

let package = Package(
    name: "Latchkey",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "latchkey", targets: ["latchkey"]),
        .executable(name: "latchkey-bench", targets: ["latchkey-bench"]),
        .executable(name: "latchkey-torture", targets: ["latchkey-torture"]),
    ],
    dependencies: [
        // Each dependency replaces code we would otherwise write and maintain; build-time
        // costs on 2 cores are in the commit messages that added them.
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        // The durable store (WAL, synchronous=FULL, migrations) over the system SQLite 3.40.
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
    ],
    targets: [
        .target(name: "LatchkeyATT", swiftSettings: strictness),
        .target(name: "LatchkeyGATT", dependencies: ["LatchkeyATT"], swiftSettings: strictness),
        // Test support, imported by tests, the benchmark and fuzz targets, never by production modules.
        .target(name: "LatchkeyTestKit", dependencies: ["LatchkeyGATT", "LatchkeyATT"], swiftSettings: strictness),
        .target(name: "LatchkeyTransport", dependencies: ["LatchkeyATT"], swiftSettings: strictness),
        .target(name: "LatchkeySim", dependencies: ["LatchkeyTransport", "LatchkeyATT"], swiftSettings: strictness),
        // epoll-era calls Glibc does not import (ppoll, accept4, pipe2), sockaddr_un, signal self-pipe.
        .target(name: "CLinuxShims"),
        .target(name: "LatchkeyPosix", dependencies: ["LatchkeyTransport", "CLinuxShims"], swiftSettings: strictness),
        // libbluetooth and libgpiod 1.6 headers (apt: libbluetooth-dev, libgpiod-dev), for LatchkeyKernel only.
        .systemLibrary(name: "CBluetooth", pkgConfig: "bluez", providers: [.apt(["libbluetooth-dev"])]),
        .systemLibrary(name: "CGPIOD", pkgConfig: "libgpiod", providers: [.apt(["libgpiod-dev"])]),
        .target(name: "LatchkeyMgmt", dependencies: ["LatchkeyTransport"], swiftSettings: strictness),
        .target(
            name: "LatchkeyKernel",
            dependencies: ["LatchkeyMgmt", "LatchkeyTransport", "LatchkeyPosix", "LatchkeyLock", "CBluetooth", "CGPIOD",
                           "CLinuxShims"],
            // The syscall mocking hook exists in debug builds only (swift-system's ENABLE_MOCKING).
            swiftSettings: strictness + [.define("ENABLE_MOCKING", .when(configuration: .debug))]),
        .target(
            name: "LatchkeySimAir",
            dependencies: ["LatchkeySim", "LatchkeyPosix", "LatchkeyTransport", "LatchkeyATT"],
            swiftSettings: strictness),
        .target(
            name: "LatchkeyManagers",
            dependencies: ["LatchkeyTransport", "LatchkeyGATT", "LatchkeyATT"],
            swiftSettings: strictness),
        .target(name: "LatchkeyLock", dependencies: ["LatchkeyTransport"], swiftSettings: strictness),
        .target(name: "LatchkeyPhone", swiftSettings: strictness),
        .target(name: "LatchkeyConfig", dependencies: [.product(name: "Yams", package: "Yams")], swiftSettings: strictness),
        .target(name: "LatchkeyLockProtocol", dependencies: ["LatchkeyATT"], swiftSettings: strictness),
        .target(
            name: "LatchkeySecurity",
            dependencies: ["LatchkeyLockProtocol", "LatchkeyTransport", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strictness),
        .target(
            name: "LatchkeyAgents",
            dependencies: ["LatchkeyManagers", "LatchkeyPhone", "LatchkeyLock", "LatchkeyLockProtocol", "LatchkeySecurity",
                           "LatchkeyTransport", "LatchkeyGATT", "LatchkeyATT"],
            swiftSettings: strictness),
        // The only module that imports GRDB: agents see the protocols they already define.
        .target(
            name: "LatchkeyStore",
            dependencies: ["LatchkeyAgents", "LatchkeyLock", "LatchkeySecurity", "LatchkeyTransport", "LatchkeyManagers",
                           .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strictness),
        .target(
            name: "LatchkeyRuntime",
            dependencies: ["LatchkeyAgents", "LatchkeyConfig", "LatchkeyPosix", "LatchkeySimAir", "LatchkeySim",
                           "LatchkeyLock", "LatchkeySecurity", "LatchkeyManagers", "LatchkeyTransport",
                           "LatchkeyLockProtocol", "LatchkeyPhone", "LatchkeyStore", "LatchkeyKernel",
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictness),
        .executableTarget(
            name: "latchkey",
            dependencies: ["LatchkeyRuntime", "LatchkeyAgents", "LatchkeyConfig", "LatchkeySimAir", "LatchkeyPosix", "LatchkeyStore",
                           "LatchkeyLock", "LatchkeySecurity", "LatchkeyTransport",
                           .product(name: "ArgumentParser", package: "swift-argument-parser"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictness),
        // Kills the agents at random moments and checks what survives (issue 5).
        .executableTarget(
            name: "latchkey-torture",
            dependencies: ["LatchkeyRuntime", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictness),
        // Counts malloc calls for the benchmark's allocations-per-PDU figure (bench only).
        .target(name: "CMallocCounter"),
        .executableTarget(
            name: "latchkey-bench",
            dependencies: ["LatchkeyGATT", "LatchkeyATT", "CMallocCounter", "LatchkeyStore", "LatchkeyTransport"],
            swiftSettings: strictness,
            // Export the counting malloc so the dynamic linker binds the Swift runtime's calls to it.
            linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic-symbol=malloc"], .when(platforms: [.linux]))]),
        .testTarget(name: "LatchkeyATTTests", dependencies: ["LatchkeyATT", "LatchkeyTestKit"]),
        .testTarget(name: "LatchkeyGATTTests", dependencies: ["LatchkeyGATT", "LatchkeyATT", "LatchkeyTestKit"]),
        .testTarget(name: "LatchkeySimTests", dependencies: ["LatchkeySim", "LatchkeyTransport"]),
        .testTarget(
            name: "LatchkeyManagersTests",
            dependencies: ["LatchkeyManagers", "LatchkeySim", "LatchkeyGATT", "LatchkeyATT", "LatchkeyTestKit"]),
        .testTarget(name: "LatchkeyPosixTests", dependencies: ["LatchkeyPosix", "LatchkeyTransport"]),
        .testTarget(name: "LatchkeyMgmtTests", dependencies: ["LatchkeyMgmt", "LatchkeyTransport", "LatchkeyATT"]),
        .testTarget(
            name: "LatchkeyKernelTests",
            dependencies: ["LatchkeyKernel", "LatchkeyMgmt", "LatchkeyPosix", "LatchkeyTransport", "LatchkeyLock"]),
        .testTarget(
            name: "LatchkeySimAirTests",
            dependencies: ["LatchkeySimAir", "LatchkeySim", "LatchkeyPosix", "LatchkeyTransport", "LatchkeyATT"]),
        .testTarget(name: "LatchkeySecurityTests", dependencies: ["LatchkeySecurity", "LatchkeyLockProtocol", "LatchkeySim"]),
        .testTarget(name: "LatchkeyPhoneTests", dependencies: ["LatchkeyPhone"]),
        .testTarget(name: "LatchkeyConfigTests", dependencies: ["LatchkeyConfig"]),
        .testTarget(
            name: "LatchkeyAgentsTests",
            dependencies: ["LatchkeyAgents", "LatchkeySim", "LatchkeyLock", "LatchkeyPhone", "LatchkeySecurity",
                           "LatchkeyLockProtocol", "LatchkeyTransport", "LatchkeyManagers", "LatchkeyTestKit", "LatchkeyGATT"]),
        .testTarget(
            name: "LatchkeyRuntimeTests",
            dependencies: ["LatchkeyRuntime", "LatchkeyConfig", "LatchkeyLock", "LatchkeyTransport", "LatchkeyPosix",
                           "LatchkeyAgents", "LatchkeyLockProtocol", "LatchkeyManagers", "LatchkeySecurity", "LatchkeySim",
                           "LatchkeyStore", "LatchkeyTestKit", "LatchkeySimAir",
                           .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "LatchkeyLockTests", dependencies: ["LatchkeyLock", "LatchkeySim"]),
        .testTarget(
            name: "LatchkeyStoreTests",
            dependencies: ["LatchkeyStore", "LatchkeyAgents", "LatchkeyLock", "LatchkeySecurity", "LatchkeyPhone",
                           "LatchkeySim", "LatchkeyTransport", "LatchkeyManagers", "LatchkeyLockProtocol", "LatchkeyGATT",
                           "LatchkeyATT"]),
    ]
)

// libFuzzer targets (`Tests/fuzz/run`): added only when LATCHKEY_FUZZ=1, because they call
// libFuzzer's driver and link only with `-sanitize=fuzzer` (shared/notes/swift-build.md).
if Context.environment["LATCHKEY_FUZZ"] == "1" {
    package.targets.append(.target(name: "FuzzSupport", path: "Tests/fuzz/targets/FuzzSupport", swiftSettings: strictness))
    let fuzzTargets: [(String, [Target.Dependency])] = [
        ("fuzz-att-decode", ["LatchkeyATT", "LatchkeyTestKit"]),
        ("fuzz-gatt-server", ["LatchkeyGATT", "LatchkeyATT", "LatchkeyTestKit"]),
        ("fuzz-command-frame", ["LatchkeySecurity", "LatchkeyLockProtocol", "LatchkeyLock", "LatchkeySim",
                                "LatchkeyTransport"]),
    ]
    for (name, dependencies) in fuzzTargets {
        package.targets.append(.executableTarget(name: name, dependencies: ["FuzzSupport"] + dependencies,
                                                 path: "Tests/fuzz/targets/\(name)", swiftSettings: strictness))
    }
}
