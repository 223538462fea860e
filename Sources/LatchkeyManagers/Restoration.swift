import LatchkeyATT
import LatchkeyTransport

/// State preservation and restoration, the Linux form of Core Bluetooth's, in four steps: a
/// manager opts in with a restore identifier; it writes what it would need after its death
/// through a `RestorationStorage`, durable when the call returns; on relaunch the agent asks
/// `RestorationRegistry` which identifiers had work pending and re-creates those managers; each
/// delivers `willRestoreState` first, then reconciles with what the kernel holds
/// (docs/RESTORATION.md, "The four steps"). The agents' store implements the storage; tests use
/// `InMemoryRestorationStorage`.

/// Which kind of manager preserved an entry.
public enum RestorationRole: String, Hashable, Sendable, CaseIterable {
    case central
    case peripheral
}

/// What a manager preserves: `Codable`, so that a storage encodes it as it likes, and
/// versioned, so that a storage refuses (never misreads) an entry written by another
/// encoding.
public protocol PreservedState: Codable, Sendable, Equatable {
    static var role: RestorationRole { get }
    /// The encoding version; bump it when the shape changes.
    static var version: UInt32 { get }
    /// Whether the manager had Bluetooth work under way. Only those are handed back.
    var hasPendingWork: Bool { get }
}

/// Where managers keep their preserved state. `save` returns once the state would survive
/// the process (the SQLite store commits with fsync). Calls happen on the managers' loop.
public protocol RestorationStorage: AnyObject {
    /// The entry under `identifier`, nil when there is none. Throws when there is one that
    /// cannot be read (another version, damage): the manager then starts without it.
    func load<State: PreservedState>(_ type: State.Type, identifier: String) throws -> State?
    func save<State: PreservedState>(_ state: State, identifier: String) throws
    func remove(_ role: RestorationRole, identifier: String) throws
    /// Every identifier with an entry for `role`, sorted.
    func identifiers(_ role: RestorationRole) throws -> [String]
}

/// Options common to both managers (CBCentralManagerOptionRestoreIdentifierKey,
/// CBPeripheralManagerOptionRestoreIdentifierKey).
public struct ManagerOptions {
    /// Opts in to preservation and restoration under this identifier.
    public var restoreIdentifier: String?
    /// Where the state goes. Without one, the identifier has no effect.
    public var restorationStorage: (any RestorationStorage)?

    public init(restoreIdentifier: String? = nil, restorationStorage: (any RestorationStorage)? = nil) {
        self.restoreIdentifier = restoreIdentifier
        self.restorationStorage = restorationStorage
    }

    package var restoration: (identifier: String, storage: any RestorationStorage)? {
        guard let restoreIdentifier, let restorationStorage else { return nil }
        return (restoreIdentifier, restorationStorage)
    }
}

/// Step 2 of a relaunch: which managers to re-create (UIApplicationLaunchOptionsBluetooth-
/// CentralsKey / PeripheralsKey).
public struct RestorationRegistry {
    public let storage: any RestorationStorage

    public init(storage: any RestorationStorage) { self.storage = storage }

    /// The identifiers whose preserved state of type `State` (`CentralRestorationState`,
    /// `PeripheralRestorationState`: one per role) has work pending, sorted. An entry that
    /// cannot be read is left out: its manager starts fresh.
    public func identifiersWithPendingWork<State: PreservedState>(_ state: State.Type) -> [String] {
        // Launch-time hint only (logged); each manager reports its own unreadable state through didFailToPreserveState.
        guard let all = try? storage.identifiers(State.role) else { return [] }
        // As above: the manager itself reports an entry it cannot read.
        return all.filter { (try? storage.load(State.self, identifier: $0))??.hasPendingWork ?? false }
    }
}

/// Keeps entries in memory: survives a manager, not the process. For tests and the
/// in-process simulation; counts writes so that tests can check what was preserved when.
public final class InMemoryRestorationStorage: RestorationStorage {
    private struct Key: Hashable { var role: RestorationRole; var identifier: String }
    private var entries: [Key: any PreservedState] = [:]
    /// Successful saves so far.
    public private(set) var saves = 0
    /// When set, `save` throws it (a full disk).
    public var saveFailure: (any Error)?

    public init() {}

    public func load<State: PreservedState>(_ type: State.Type, identifier: String) throws -> State? {
        guard let entry = entries[Key(role: State.role, identifier: identifier)] else { return nil }
        guard let state = entry as? State else { throw RestorationStorageError.wrongType(identifier) }
        return state
    }

    public func save<State: PreservedState>(_ state: State, identifier: String) throws {
        if let saveFailure { throw saveFailure }
        entries[Key(role: State.role, identifier: identifier)] = state
        saves += 1
    }

    public func remove(_ role: RestorationRole, identifier: String) throws {
        entries[Key(role: role, identifier: identifier)] = nil
    }

    public func identifiers(_ role: RestorationRole) throws -> [String] {
        entries.keys.filter { $0.role == role }.map(\.identifier).sorted()
    }
}

public enum RestorationStorageError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The entry was written for another state type.
    case wrongType(String)
    /// The entry was written by another encoding version.
    case unsupportedVersion(identifier: String, found: UInt32, expected: UInt32)
    /// The entry could not be decoded.
    case undecodable(identifier: String, detail: String)

    public var description: String {
        switch self {
        case .wrongType(let id): "restoration entry \(id) holds another manager's state"
        case .unsupportedVersion(let id, let found, let expected):
            "restoration entry \(id) has version \(found), expected \(expected)"
        case .undecodable(let id, let detail): "restoration entry \(id) cannot be decoded: \(detail)"
        }
    }
}

/// The preservation bookkeeping of one manager, the same for both roles: what was loaded at
/// init and waits to be delivered, what was last written, a load error to report.
package struct Preservation<State: PreservedState> {
    package let identifier: String
    package let storage: any RestorationStorage
    /// Loaded at init; delivered (and cleared) once the transport knows its state.
    package private(set) var awaiting: State?
    private var lastWritten: State?
    private var loadError: (any Error)?
    /// While restoring, partial states are not written; the end of reconciliation writes once.
    package var isReconciling = false
    /// After `discard()`: nothing is written any more.
    private var isDiscarded = false

    /// Loads the entry under the identifier at once, so that a manager knows its work before
    /// any transport callback can arrive.
    package init(identifier: String, storage: any RestorationStorage) {
        self.identifier = identifier
        self.storage = storage
        do {
            awaiting = try storage.load(State.self, identifier: identifier)
            lastWritten = awaiting
        } catch {
            loadError = error
        }
    }

    package var isRestoring: Bool { awaiting != nil }

    /// Writes `state` if it changed since the last write; an idle state removes the entry,
    /// so that a relaunch does not hand the manager back. Nothing is written while restoring.
    package mutating func write(_ state: State) throws {
        guard awaiting == nil, !isReconciling, !isDiscarded, state != lastWritten else { return }
        if state.hasPendingWork {
            try storage.save(state, identifier: identifier)
        } else {
            try storage.remove(State.role, identifier: identifier)
        }
        lastWritten = state
    }

    /// The loaded state, once, when the transport has left `.unknown`; reconciliation starts.
    package mutating func takeAwaiting(whenReady radio: RadioState) -> State? {
        guard radio != .unknown, let state = awaiting else { return nil }
        awaiting = nil
        isReconciling = true
        return state
    }

    /// Removes the entry and stops writing: the manager is being shut down on purpose, and a
    /// relaunch must not hand its work back (iOS after a force-quit).
    package mutating func discard() throws {
        isDiscarded = true
        awaiting = nil
        try storage.remove(State.role, identifier: identifier)
    }

    package mutating func takeLoadError() -> (any Error)? {
        defer { loadError = nil }
        return loadError
    }
}

/// A UUID as its canonical string ("2902", "7E570001-..."), readable in a store dump.
public struct PreservedUUID: Codable, Hashable, Sendable {
    public var uuid: BluetoothUUID

    public init(_ uuid: BluetoothUUID) { self.uuid = uuid }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let uuid = BluetoothUUID(string: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "bad UUID \(text)"))
        }
        self.uuid = uuid
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(uuid.description)
    }
}
