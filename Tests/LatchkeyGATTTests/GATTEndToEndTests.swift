import LatchkeyATT
import LatchkeyGATT
import LatchkeyTestKit
import Testing

/// A `GATTClient` wired to a `GATTServer` in memory: the client's view of the database
/// must match the database, at the smallest and a large MTU.
@Suite("GATT client against GATT server, in memory")
struct GATTEndToEndTests {
    struct Discovered {
        var services: [DiscoveredService] = []
        var characteristics: [UInt16: [DiscoveredCharacteristic]] = [:]
        var descriptors: [UInt16: [DiscoveredDescriptor]] = [:]
    }

    /// Runs full discovery as an application would: services, then characteristics of each,
    /// then descriptors of each, each step started from the previous one's completion.
    static func discoverEverything(_ loop: Loopback) throws -> Discovered {
        var result = Discovered()
        var failures: [GATTClientError] = []
        func record<T>(_ r: Result<T, GATTClientError>) -> T? {
            switch r {
            case .success(let v): return v
            case .failure(let e): failures.append(e); return nil
            }
        }
        loop.client.exchangeMTU { _ = record($0) }
        loop.client.discoverPrimaryServices { r in
            guard let services = record(r) else { return }
            result.services = services
            for service in services {
                loop.client.discoverCharacteristics(of: service) { r in
                    guard let chars = record(r) else { return }
                    result.characteristics[service.startHandle] = chars
                    for c in chars {
                        loop.client.discoverDescriptors(of: c) { r in
                            result.descriptors[c.valueHandle] = record(r)
                        }
                    }
                }
            }
        }
        loop.pump()
        #expect(failures.isEmpty)
        #expect(!loop.client.isAwaitingResponse && !loop.client.hasOutgoing)
        return result
    }

    /// What discovery must find, computed from the database's attribute table.
    static func expected(_ db: GATTDatabase) -> Discovered {
        var result = Discovered()
        let attrs = db.attributes
        for (i, a) in attrs.enumerated() where a.type == .primaryService {
            guard case .service(let end) = a.kind else { continue }
            result.services.append(DiscoveredService(uuid: BluetoothUUID(littleEndian: a.value)!, startHandle: a.handle,
                                                     endHandle: end))
            let decls = attrs[(i + 1)...].filter { $0.handle <= end && $0.type == .characteristic }
            var chars: [DiscoveredCharacteristic] = []
            for (j, d) in decls.enumerated() {
                let v = d.value
                let next = j + 1 < decls.count ? decls[decls.startIndex + j + 1].handle - 1 : end
                chars.append(DiscoveredCharacteristic(
                    uuid: BluetoothUUID(littleEndian: v[3...])!, properties: CharacteristicProperties(rawValue: v[0]),
                    declarationHandle: d.handle, valueHandle: UInt16(v[1]) | UInt16(v[2]) << 8, endHandle: next))
            }
            result.characteristics[a.handle] = chars
            for c in chars {
                result.descriptors[c.valueHandle] = db.attributes(in: c.valueHandle...c.endHandle).dropFirst()
                    .map { DiscoveredDescriptor(uuid: $0.type, handle: $0.handle) }
            }
        }
        return result
    }

    @Test("discovery finds every primary service, characteristic and descriptor of the large fixture",
          arguments: [23, 185, 247, 517])
    func fullDiscovery(mtu: Int) throws {
        let fixture = Fixture.large()
        let server = GATTServer(database: fixture.database, preferredMTU: 517)
        server.delegate = fixture.delegate
        let loop = Loopback(client: GATTClient(preferredMTU: mtu), server: server)
        let found = try Self.discoverEverything(loop)
        let want = Self.expected(fixture.database)
        #expect(found.services == want.services)
        #expect(found.services.count == 5)
        #expect(found.characteristics == want.characteristics)
        #expect(found.descriptors == want.descriptors)
        #expect(found.descriptors[LargeDB.eventLog]?.map(\.uuid)
                == [.characteristicUserDescription, LargeDB.logFormatUUID])
        #expect(server.mtu == mtu && loop.client.mtu == mtu)
        // Every PDU crossed within the negotiated MTU (the Exchange MTU pair itself is 3 octets).
        #expect(loop.trace.allSatisfy { $0.bytes.count <= mtu })
    }

    @Test("long read, reliable write of a long value, and read back, at the default MTU")
    func longValues() throws {
        let fixture = Fixture.large()
        let server = GATTServer(database: fixture.database)
        server.delegate = fixture.delegate
        let loop = Loopback(client: GATTClient(preferredMTU: 23), server: server)
        let read = Completion<Result<[UInt8], GATTClientError>>()
        loop.client.read(LargeDB.eventLog, read.record)
        loop.pump()
        #expect(read.value == .success(LargeDB.eventLogValue))

        let newValue = (0..<300).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let write = Completion<Result<Void, GATTClientError>>()
        let readBack = Completion<Result<[UInt8], GATTClientError>>()
        loop.client.write(newValue, to: LargeDB.eventLog, write.record)
        loop.client.read(LargeDB.eventLog, readBack.record)
        loop.pump()
        #expect(write.succeeded())
        #expect(readBack.value == .success(newValue))
        #expect(fixture.delegate.writes.last?.value == newValue)
        // 17 prepares of 18 octets, one execute.
        #expect(loop.trace.filter { $0.fromClient && $0.bytes.first == 0x16 }.count == 17)
    }

    @Test("subscribe, then receive a notification and a confirmed indication")
    func subscriptions() throws {
        let fixture = Fixture.large()
        let server = GATTServer(database: fixture.database)
        server.delegate = fixture.delegate
        let loop = Loopback(client: GATTClient(), server: server)
        var received: [(UInt16, [UInt8], Bool)] = []
        loop.client.onValue = { received.append(($0, Array($1), $2)) }
        let subscribed = Completion<Result<Void, GATTClientError>>()
        loop.client.setClientConfiguration([.notify, .indicate], descriptor: LargeDB.lockStateCCCD, subscribed.record)
        loop.pump()
        #expect(subscribed.succeeded())
        #expect(fixture.delegate.configurationChanges.map(\.configuration) == [[.notify, .indicate]])

        loop.serverSends(try server.notification([0x02], forValueAt: LargeDB.lockState).get())
        loop.serverSends(try server.indication([0x03], forValueAt: LargeDB.lockState).get())
        #expect(server.indicationPending)
        loop.pump()
        #expect(!server.indicationPending)  // the client's confirmation reached the server
        #expect(received.map(\.1) == [[0x02], [0x03]])
        #expect(received.map(\.2) == [false, true])
    }

    @Test("errors travel end to end as .att(code, handle)")
    func errorsEndToEnd() throws {
        let fixture = Fixture.large()
        let loop = Loopback(client: GATTClient(), server: GATTServer(database: fixture.database))
        let secret = Completion<Result<[UInt8], GATTClientError>>()
        let control = Completion<Result<Void, GATTClientError>>()
        loop.client.read(LargeDB.secret, secret.record)
        loop.client.write([0x01], to: LargeDB.lockControl, control.record)
        loop.pump()
        #expect(secret.value == .failure(.att(.readNotPermitted, handle: LargeDB.secret)))
        #expect(control.failure() == GATTClientError.att(.insufficientEncryption, handle: LargeDB.lockControl))
    }
}
