import Foundation
import LatchkeyConfig
import LatchkeySecurity
@testable import LatchkeySettings
import LatchkeySim
import LatchkeyTransport
import Testing
@testable import LatchkeyControl
@testable import LatchkeyDaemons

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
        let dir = try scratchDirectory("paired")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/paired.key"
        // An old file another user could read is replaced, not rewritten in place.
        #expect(FileManager.default.createFile(atPath: path, contents: Data("old".utf8), attributes: [.posixPermissions: 0o644]))
        try PairedKeyFile.write(Self.pairedKey, lockAddress: BluetoothAddress(0xC0FFEE000001), to: path)
        let read = try PairedKeyFile.read(path)
        #expect(read.keyID == 7 && read.secret == Self.pairedKey.secret && read.lockAddress == BluetoothAddress(0xC0FFEE000001))
        #expect(try mode(path) == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["paired.key"], "no temporary file left")
    }

    static let pairedKey = PairedKey(keyID: 7, secret: (0..<32).map { UInt8($0) }, role: .admin, mayRequestArrivalUnlock: false,
                                     lockIdentity: Array(repeating: 0xAB, count: 32), comparisonCode: "012345")

    /// Another local user who can read the key can open the door: the phone refuses to use it
    /// and says how to fix it.
    @Test func aKeyFileOthersCanReadIsRefusedWithTheFix() throws {
        let dir = try scratchDirectory("exposed")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let paired = dir + "/paired.key"
        try PairedKeyFile.write(Self.pairedKey, lockAddress: BluetoothAddress(0xC0FFEE000001), to: paired)
        let plain = dir + "/key.hex"
        try writeSecretFile(plain, Self.pairedKey.secret)
        for bits in [0o640, 0o604, 0o660] {
            try FileManager.default.setAttributes([.posixPermissions: bits], ofItemAtPath: paired)
            let e = #expect(throws: RuntimeError.self) { try PairedKeyFile.read(paired) }
            #expect(e?.description.contains("chmod 600 \(paired)") == true, "\(e?.description ?? "")")
            try FileManager.default.setAttributes([.posixPermissions: bits], ofItemAtPath: plain)
            #expect(throws: RuntimeError.self) { try PhoneDaemon.readSecret(plain) }
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: paired)
        #expect(throws: Never.self) { try PairedKeyFile.read(paired) }
        // A link to a key file is not the key file.
        let link = dir + "/linked.key"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: paired)
        #expect(throws: RuntimeError.self) { try PairedKeyFile.read(link) }
    }

    /// A secret file is never written through a link someone planted, and a write that fails
    /// leaves the old file as it was and no temporary beside it.
    @Test func secretFilesReplaceLinksAndFailCleanly() throws {
        let dir = try scratchDirectory("secret")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let target = dir + "/elsewhere"
        #expect(FileManager.default.createFile(atPath: target, contents: Data("untouched".utf8)))
        let path = dir + "/key.hex"
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
        try writeSecretFile(path, Self.pairedKey.secret)
        #expect(String(decoding: try Data(contentsOf: URL(fileURLWithPath: target)), as: UTF8.self) == "untouched")
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.type] as? FileAttributeType == .typeRegular,
                "the link itself was replaced")
        #expect(try PhoneDaemon.readSecret(path) == Self.pairedKey.secret)
        #expect(throws: RuntimeError.self) { try writeSecretFile(dir + "/missing/key.hex", Self.pairedKey.secret) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["elsewhere", "key.hex"])
    }

    /// `keys add` writes the secret first: when that fails there is no key nobody holds, and
    /// when the key cannot be stored its file goes too.
    @Test func keysAddWritesTheSecretBeforeTheKey() throws {
        let dir = try scratchDirectory("keys-add")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let keys = InMemoryKeyStore()
        let key = PhoneKey(id: 3, name: "guest", secret: CommandSealing.newSecret(), role: .user)
        #expect(throws: RuntimeError.self) { try KeyExport.add(key, to: keys, exportingSecretTo: dir + "/missing/k") }
        #expect(keys.keys.isEmpty, "no key without its secret on disk")
        keys.failWrites = true
        #expect(throws: RuntimeError.self) { try KeyExport.add(key, to: keys, exportingSecretTo: dir + "/k") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty, "no secret for a key that is not there")
        keys.failWrites = false
        try KeyExport.add(key, to: keys, exportingSecretTo: dir + "/k")
        #expect(keys.key(id: 3) == key)
        #expect(try PhoneDaemon.readSecret(dir + "/k") == key.secret)
        #expect(try mode(dir + "/k") == 0o600)
    }

    @Test func aPhoneNeedsNoLockAddressOnceItsPairedKeyFileHasOne() throws {
        let s = try PhoneSettings.load(ConfigFile(path: "phone.yaml", text: """
            sim:
              address: "C0:FF:EE:00:00:02"
            """))
        #expect(s.lockAddress == nil && s.keyID == nil)
        let e = #expect(throws: ConfigError.self) {
            try PhoneSettings.load(ConfigFile(path: "phone.yaml", text: """
                sim:
                  address: "C0:FF:EE:00:00:02"
                key_id: 3
                key_secret_file: /k
                """))
        }
        #expect(e?.field == "lock_address", "a key made by `keys add` comes with no address")
    }

    private func scratchDirectory(_ name: String) throws -> String {
        let dir = NSTemporaryDirectory() + "latchkey-\(name)-\(UInt32.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        return dir
    }

    private func mode(_ path: String) throws -> Int? {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
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
