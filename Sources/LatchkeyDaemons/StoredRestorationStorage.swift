import FoundationEssentials
import LatchkeyManagers
import LatchkeyStore

/// The managers' `RestorationStorage` over the store's restoration table: each preserved
/// state is one row, keyed by role and restore identifier, its payload the state as JSON
/// (small, and readable with the sqlite3 shell when a relaunch misbehaves) with the
/// state's encoding version beside it. `save` is durable when it returns.
///
/// An entry of another version is refused, never misread: the manager starts without it
/// and says so (`didFailToPreserveState`).
public final class StoredRestorationStorage: RestorationStorage {
    public let entries: RestorationStore

    public init(_ entries: RestorationStore) { self.entries = entries }

    public func load<State: PreservedState>(_ type: State.Type, identifier: String) throws -> State? {
        guard let entry = try entries.get(Self.role(State.role), identifier: identifier) else { return nil }
        guard entry.version == State.version else {
            throw RestorationStorageError.unsupportedVersion(identifier: identifier, found: entry.version,
                                                             expected: State.version)
        }
        do { return try JSONDecoder().decode(State.self, from: Data(entry.payload)) } catch {
            throw RestorationStorageError.undecodable(identifier: identifier, detail: "\(error)")
        }
    }

    public func save<State: PreservedState>(_ state: State, identifier: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = try encoder.encode(state)
        try entries.put(RestorationEntry(role: Self.role(State.role), identifier: identifier, version: State.version,
                                         payload: [UInt8](json)))
    }

    public func remove(_ role: RestorationRole, identifier: String) throws {
        try entries.remove(Self.role(role), identifier: identifier)
    }

    public func identifiers(_ role: RestorationRole) throws -> [String] {
        try entries.list(Self.role(role)).map(\.identifier)
    }

    private static func role(_ role: RestorationRole) -> ManagerRole {
        switch role {
        case .central: .central
        case .peripheral: .peripheral
        }
    }
}

extension AgentStore {
    /// The restoration table as the managers' storage.
    public func restorationStorage() -> StoredRestorationStorage { StoredRestorationStorage(restoration()) }
}
