import LatchkeyEvents
import Testing

/// The catalogue is the one definition of the agents' events: these check that it is a
/// consistent one (names unique and shaped as users filter on them, fields unique and in
/// order) and that an event's constructor prints exactly its declared fields.
struct EventCatalogueTests {
    @Test func namesAreUniqueAndShapedAsAgentDotEvent() {
        let names = EventKind.all.map(\.name)
        #expect(Set(names).count == names.count, "a name declared twice")
        for name in names {
            let parts = name.split(separator: ".", omittingEmptySubsequences: false)
            #expect(parts.count == 2 && ["lock", "phone", "pair"].contains(parts[0]), "\(name)")
            #expect(parts.last?.allSatisfy { $0.isLowercase || $0 == "_" } == true, "\(name): lower snake case")
        }
        #expect(EventKind.named("lock.command_accepted") == .lockCommandAccepted)
        #expect(EventKind.named("lock.no_such_event") == nil)
    }

    @Test func everyEventSaysWhatItMeansAndEachFieldOnce() {
        for kind in EventKind.all {
            #expect(kind.meaning.hasSuffix("."), "\(kind.name): its meaning is a sentence")
            let keys = kind.fields.map(\.key)
            #expect(Set(keys).count == keys.count, "\(kind.name): a field twice")
            for field in kind.fields { #expect(!field.meaning.isEmpty, "\(kind.name).\(field.key) means nothing") }
        }
    }

    @Test func aConstructorPrintsItsFieldsInDeclaredOrderLeavingOutOptionalOnesWithoutAValue() {
        let accepted = Event.lockCommandAccepted(key: 1, op: .unlock, counter: 7, decision: .number(3))
        #expect(accepted.name == "lock.command_accepted")
        #expect(accepted.fields.map { "\($0.0)=\($0.1)" } == ["key=1", "op=unlock", "counter=7", "decision=3"])
        let refused = Event.lockCommandRefused(key: 2, op: .lock, source: "bridge", reason: "wrongCode")
        #expect(refused.fields.map(\.0) == ["key", "op", "source", "reason"])
        #expect(Event.lockStopping.fields.isEmpty)
        #expect(Event.lockAdvertising(error: nil).fields.isEmpty)
    }

    @Test func anEventOfBothAgentsIsNamedForTheAgent() {
        #expect(Event.transportRefused(.lock, request: "connect", reason: "busy", attempt: 1, retryIn: .seconds(1)).name
            == "lock.transport_refused")
        #expect(Event.appSuspended(.phone).name == "phone.app_suspended")
        #expect(Event.controlRefused(.phone, command: "unlock").fields.map(\.0) == ["command"])
    }

    @Test func theDocumentsListEveryEvent() {
        let markdown = EventKind.markdown
        for kind in EventKind.all { #expect(markdown.contains("| `\(kind.name)` |"), "\(kind.name) missing from EVENTS.md") }
        let lines = EventKind.nameList.split(separator: "\n").map(String.init)
        #expect(lines == EventKind.all.map(\.name).sorted())
    }
}
