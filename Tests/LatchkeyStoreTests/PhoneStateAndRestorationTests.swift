import LatchkeyAgents
import LatchkeyPhone
import LatchkeyStore
import Testing

@Suite struct PhoneStateAndRestorationTests {
    @Test func phoneStateRoundTripsAndIsReplacedWhole() throws {
        let fixture = StoreFixture()
        let states = try fixture.open().phoneStateStore()
        #expect(try states.load() == nil)

        var presence = PresenceMachine()
        _ = presence.handle(.linkUp)
        _ = presence.handle(.linkDown)
        _ = presence.handle(.graceExpired)
        let away = PhoneState(presence: presence, counter: 41)
        #expect(away.presence.presence == .away, "the state under test is not the default one")
        try states.save(PhoneState(counter: 3))
        try states.save(away)

        #expect(try fixture.open().phoneStateStore().load() == away)
    }

    @Test func restorationEntriesArePutGotListedAndRemoved() throws {
        let fixture = StoreFixture()
        let restoration = try fixture.open().restoration()
        let central = RestorationEntry(role: .central, identifier: "phone.central", version: 1, payload: [1, 2, 3])
        let lock = RestorationEntry(role: .peripheral, identifier: "lock.peripheral", version: 2, payload: [9])
        let spare = RestorationEntry(role: .central, identifier: "another.central", version: 1, payload: [])
        try restoration.put(central)
        try restoration.put(lock)
        fixture.clocks.advance(by: .seconds(2))
        try restoration.put(spare)
        try restoration.put(RestorationEntry(role: .central, identifier: "phone.central", version: 3, payload: [4]))

        let reopened = try fixture.open().restoration()
        let got = try #require(try reopened.get(.central, identifier: "phone.central"))
        #expect(got.version == 3 && got.payload == [4], "a put replaces the entry")
        #expect(got.updatedWallNanos == fixture.clocks.wallNanos)
        #expect(try reopened.get(.peripheral, identifier: "phone.central") == nil, "identifiers are per role")
        #expect(try reopened.list().map(\.identifier) == ["another.central", "phone.central", "lock.peripheral"])
        #expect(try reopened.list(.peripheral).map(\.payload) == [[9]])

        #expect(try reopened.remove(.central, identifier: "another.central"))
        #expect(try !reopened.remove(.central, identifier: "another.central"))
        #expect(try fixture.open().restoration().list(.central).map(\.identifier) == ["phone.central"])
    }
}
