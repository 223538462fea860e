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
//   LatchkeyManagers   Core-Bluetooth-like central and peripheral managers, generic over the seam
//   LatchkeyLock       lock domain: lock state machine, GPIO protocol, simulated GPIO
//   latchkey           the CLI (the only module that picks a transport)
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
    ],
    dependencies: [],
    targets: [
        .target(name: "LatchkeyATT", swiftSettings: strictness),
        .target(name: "LatchkeyGATT", dependencies: ["LatchkeyATT"], swiftSettings: strictness),
        // Test support, imported by tests, the benchmark and fuzz targets, never by production modules.
        .target(name: "LatchkeyTestKit", dependencies: ["LatchkeyGATT", "LatchkeyATT"], swiftSettings: strictness),
        .target(name: "LatchkeyTransport", dependencies: ["LatchkeyATT"], swiftSettings: strictness),
        .target(name: "LatchkeySim", dependencies: ["LatchkeyTransport", "LatchkeyATT"], swiftSettings: strictness),
        .target(name: "LatchkeyPosix", dependencies: ["LatchkeyTransport"], swiftSettings: strictness),
        .target(
            name: "LatchkeySimAir",
            dependencies: ["LatchkeySim", "LatchkeyPosix", "LatchkeyTransport", "LatchkeyATT"],
            swiftSettings: strictness),
        .target(
            name: "LatchkeyManagers",
            dependencies: ["LatchkeyTransport", "LatchkeyGATT", "LatchkeyATT"],
            swiftSettings: strictness),
        .target(name: "LatchkeyLock", dependencies: ["LatchkeyTransport"], swiftSettings: strictness),
        .executableTarget(
            name: "latchkey",
            dependencies: ["LatchkeyManagers", "LatchkeySim", "LatchkeySimAir", "LatchkeyPosix", "LatchkeyLock"],
            swiftSettings: strictness),
        // Counts malloc calls for the benchmark's allocations-per-PDU figure (bench only).
        .target(name: "CMallocCounter"),
        .executableTarget(
            name: "latchkey-bench",
            dependencies: ["LatchkeyGATT", "LatchkeyATT", "CMallocCounter"],
            swiftSettings: strictness,
            // Export the counting malloc so the dynamic linker binds the Swift runtime's calls to it.
            linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic-symbol=malloc"], .when(platforms: [.linux]))]),
        .testTarget(name: "LatchkeyATTTests", dependencies: ["LatchkeyATT", "LatchkeyTestKit"]),
        .testTarget(name: "LatchkeyGATTTests", dependencies: ["LatchkeyGATT", "LatchkeyATT", "LatchkeyTestKit"]),
        .testTarget(name: "LatchkeySimTests", dependencies: ["LatchkeySim", "LatchkeyTransport"]),
        .testTarget(
            name: "LatchkeyManagersTests",
            dependencies: ["LatchkeyManagers", "LatchkeySim", "LatchkeyGATT", "LatchkeyATT"]),
        .testTarget(name: "LatchkeySimAirTests", dependencies: ["LatchkeySimAir", "LatchkeySim", "LatchkeyPosix"]),
        .testTarget(name: "LatchkeyLockTests", dependencies: ["LatchkeyLock", "LatchkeySim"]),
    ]
)
