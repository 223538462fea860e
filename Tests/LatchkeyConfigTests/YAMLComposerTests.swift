import Testing
@testable import LatchkeyConfig

/// The node tree built from libyaml's events: what `ConfigFile` relies on.
struct YAMLComposerTests {
    @Test func scalarsKeepTheirTextAndEveryNodeItsLine() throws {
        let node = try #require(try YAMLComposer.compose("""
            # a comment
            name: "Front Door"
            gpio:
              chip: 'gpiochip0'
              lines: [a, b]
            empty:
            """))
        guard case .mapping(let entries, let line) = node else { Issue.record("not a mapping: \(node)"); return }
        #expect(line == 2)
        #expect(entries.map(\.key.keyText) == ["name", "gpio", "empty"])
        #expect(entries.map(\.key.line) == [2, 3, 6])
        guard case .scalar("Front Door", line: 2) = entries[0].value else { Issue.record("\(entries[0].value)"); return }
        guard case .mapping(let gpio, line: 4) = entries[1].value else { Issue.record("\(entries[1].value)"); return }
        guard case .scalar("gpiochip0", line: 4) = gpio[0].value else { Issue.record("\(gpio[0].value)"); return }
        guard case .sequence(let items, line: 5) = gpio[1].value else { Issue.record("\(gpio[1].value)"); return }
        #expect(items.map(\.keyText) == ["a", "b"])
        guard case .scalar("", _) = entries[2].value else { Issue.record("\(entries[2].value)"); return }
    }

    @Test func anEmptyDocumentIsNoNode() throws {
        #expect(try YAMLComposer.compose("") == nil)
        #expect(try YAMLComposer.compose("# only a comment\n") == nil)
    }

    @Test func anAliasIsACopyOfItsAnchor() throws {
        let node = try #require(try YAMLComposer.compose("base: &b\n  chip: x\nlock: *b\n"))
        guard case .mapping(let entries, _) = node, case .mapping(let lock, _) = entries[1].value else {
            Issue.record("\(node)"); return
        }
        #expect(lock.map(\.key.keyText) == ["chip"])
        #expect(throws: YAMLSyntaxError.self) { try YAMLComposer.compose("lock: *nowhere\n") }
    }

    @Test func aSecondDocumentIsRefused() {
        let e = #expect(throws: YAMLSyntaxError.self) { try YAMLComposer.compose("a: 1\n---\nb: 2\n") }
        #expect(e?.line == 2)
    }

    @Test func libyamlErrorsCarryTheirLine() {
        let e = #expect(throws: YAMLSyntaxError.self) { try YAMLComposer.compose("a: 1\nb: [1, 2\nc: 3\n") }
        #expect(e?.line == 3 || e?.line == 4)
        #expect(e?.message.contains("flow sequence") == true)
    }
}
