import Foundation
import LatchkeyConfig
import LatchkeySecurity
import LatchkeySim
import LatchkeyTransport
import Testing
@testable import LatchkeyRuntime

/// What the daemons read and open for security (docs/SECURITY.md).
struct SecuritySettingsTests {
    @Test func lockoutLimitsAreConfigurable() throws {
        let s = try LockSettings.load(ConfigFile(path: "lock.yaml", text: """
            sim:
              address: "C0:FF:EE:00:00:01"
            gpio:
              chip: c
              unlock_line: latch
            lock:
              wrong_code_entry_limit: 5
              overall_wrong_code_limit: 20
              user_code_temporary_disable_seconds: 30
              maximum_disable_seconds: 600
            """))
        #expect(s.agent.lockout.perKeyLimit == 5 && s.agent.lockout.overallLimit == 20)
        #expect(s.agent.lockout.disableTime == .seconds(30) && s.agent.lockout.maximumDisableTime == .seconds(600))
    }

    @Test func theStrangerLimitsAreConfigurableAndDefaultToAFewSeconds() throws {
        let text = """
            sim:
              address: "C0:FF:EE:00:00:01"
            gpio:
              chip: c
              unlock_line: latch
            """
        let defaults = try LockSettings.load(ConfigFile(path: "lock.yaml", text: text))
        #expect(defaults.agent.unauthenticatedLinkTimeout == .seconds(5))
        #expect(defaults.agent.unauthenticatedFrameLimit == 3 && defaults.agent.maximumLinks == 4)
        let s = try LockSettings.load(ConfigFile(path: "lock.yaml", text: text + """

            lock:
              unauthenticated_link_seconds: 2.5
              unauthenticated_frames_per_link: 5
              maximum_links: 2
            """))
        #expect(s.agent.unauthenticatedLinkTimeout == .milliseconds(2500))
        #expect(s.agent.unauthenticatedFrameLimit == 5 && s.agent.maximumLinks == 2)
    }

    @Test func aPhoneWithoutAKeyIdUsesItsPairedKeyFile() throws {
        let s = try PhoneSettings.load(ConfigFile(path: "phone.yaml", text: """
            sim:
              address: "C0:FF:EE:00:00:02"
            state_directory: /var/lib/x
            lock_address: "C0:FF:EE:00:00:01"
            """))
        #expect(s.keyID == nil && s.keySecretFile == "/var/lib/x/paired.key")
        let e = #expect(throws: ConfigError.self) {
            try PhoneSettings.load(ConfigFile(path: "phone.yaml", text: """
                sim:
                  address: "C0:FF:EE:00:00:02"
                lock_address: "C0:FF:EE:00:00:01"
                key_id: 3
                """))
        }
        #expect(e?.field == "key_secret_file")
    }

    @Test func thePairedKeyFileRoundTripsWithMode0600() throws {
        let dir = NSTemporaryDirectory() + "latchkey-paired-\(UInt32.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let key = PairedKey(keyID: 7, secret: (0..<32).map { UInt8($0) }, role: .admin, mayRequestArrivalUnlock: false,
                            lockIdentity: Array(repeating: 0xAB, count: 32), comparisonCode: "012345")
        let path = dir + "/paired.key"
        try PairedKeyFile.write(key, to: path)
        let read = try PairedKeyFile.read(path)
        #expect(read.keyID == 7 && read.secret == key.secret)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
    }

    @Test func theLockDaemonsStoresKeepLockoutsOnDisk() throws {
        let dir = NSTemporaryDirectory() + "latchkey-lockout-\(UInt32.random(in: 0 ... .max))"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = ManualEventLoop()
        let first = try StateStores.openLock(dir, loop: loop)
        LockoutGuard(store: first.lockout, loop: loop).recordFailure(keyID: 4)
        #expect(first.pairing != nil, "the daemon's lock can pair")
        // A new daemon on the same state directory sees the failure.
        let second = try StateStores.openLock(dir, loop: loop)
        #expect(try second.lockout.state(of: .key(4)).failures == 1)
        #expect(second.pairing?.identity.publicKey == first.pairing?.identity.publicKey, "one identity per lock")
    }
}
