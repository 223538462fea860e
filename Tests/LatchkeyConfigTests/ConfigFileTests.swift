import Testing
@testable import LatchkeyConfig

struct ConfigFileTests {
    let text = """
        name: Front Door
        lock:
          auto_relock_seconds: 12.5
          mode: normal
        debug: yes
        """

    @Test func readsTypedValuesAndNestedTables() throws {
        let f = try ConfigFile(path: "/etc/latchkey/lock.yaml", text: text)
        #expect(try f.root.string("name") == "Front Door")
        let lock = try #require(try f.root.table("lock"))
        #expect(try lock.seconds("auto_relock_seconds", in: 0...3600) == .milliseconds(12_500))
        #expect(try lock.choice("mode", ["normal", "passage"]) == "normal")
        #expect(try f.root.bool("debug") == true)
        try lock.finish()
        try f.root.finish()
    }

    @Test func aBadValueNamesFileLineAndField() throws {
        let f = try ConfigFile(path: "lock.yaml", text: "lock:\n  auto_relock_seconds: soon\n")
        let lock = try #require(try f.root.table("lock"))
        let e = #expect(throws: ConfigError.self) { try lock.seconds("auto_relock_seconds", in: 0...3600) }
        #expect(e?.description == "lock.yaml:2: field 'lock.auto_relock_seconds': expected a number of seconds, found 'soon'")
    }

    @Test func outOfRangeIsAnError() throws {
        let f = try ConfigFile(path: "p.yaml", text: "grace_seconds: 100000\n")
        let e = #expect(throws: ConfigError.self) { try f.root.seconds("grace_seconds", in: 0...3600) }
        #expect(e?.line == 1)
        #expect(e?.field == "grace_seconds")
    }

    @Test func anUnknownFieldIsRejectedWithItsLine() throws {
        let f = try ConfigFile(path: "p.yaml", text: "name: x\nauto_relok: 5\n")
        _ = try f.root.string("name")
        let e = #expect(throws: ConfigError.self) { try f.root.finish() }
        #expect(e?.description == "p.yaml:2: field 'auto_relok': unknown field")
    }

    @Test func aSyntaxErrorNamesTheLine() {
        let e = #expect(throws: ConfigError.self) { try ConfigFile(path: "bad.yaml", text: "a: 1\nb: [1, 2\nc: 3\n") }
        #expect(e?.file == "bad.yaml")
        #expect(e?.line != nil)
    }

    @Test func aMissingRequiredFieldIsNamed() throws {
        let f = try ConfigFile(path: "p.yaml", text: "name: x\n")
        let e = #expect(throws: ConfigError.self) { try f.root.required("lock_address") }
        #expect(e?.field == "lock_address")
        #expect(e?.message == "is required")
    }

    @Test func aDuplicateFieldIsAnError() throws {
        // The composer refuses a key given twice in one mapping; the error names the file, the line and the key.
        let e = #expect(throws: ConfigError.self) { try ConfigFile(path: "p.yaml", text: "name: x\nname: y\n") }
        #expect(e?.file == "p.yaml")
        #expect(e?.line == 2)
        #expect(e?.message.contains("'name'") == true)
    }

    @Test func aTableWhereAValueBelongsIsAnError() throws {
        let f = try ConfigFile(path: "p.yaml", text: "name:\n  first: x\n")
        let e = #expect(throws: ConfigError.self) { try f.root.string("name") }
        #expect(e?.message.contains("found a mapping") == true)
    }
}
