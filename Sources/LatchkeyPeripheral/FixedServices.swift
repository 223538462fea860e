import LatchkeyGATT
import LatchkeyManagers

/// The services a peripheral manager publishes in front of the app's, in each layout a version
/// of it has published. A relaunch recognises the one its preserved state was made with by the
/// preserved Database Hash: that is where the preserved run's Service Changed was.
enum FixedServices: CaseIterable {
    /// Generic Access at 0x0001–0x0005, Generic Attribute at 0x0006–0x000D (Service Changed
    /// at 0x0008): this version, the layout of the Core specification's example database
    /// (Vol 3 Part G 7.3.3) and of most stacks.
    case genericAccessFirst
    /// Generic Attribute alone at 0x0001–0x0008 (Service Changed at 0x0003): the versions
    /// before the Generic Access service.
    case genericAttributeOnly

    static let current = FixedServices.genericAccessFirst

    /// Adds them to an empty database, which always has room for them at their fixed handles;
    /// returns the Generic Attribute service's handles.
    @discardableResult
    func publish(in database: GATTDatabase, genericAccess: GenericAccess) -> GATTServiceHandles {
        switch self {
        case .genericAccessFirst:
            try! database.add(GenericAccessService.definition(genericAccess), startHandle: GenericAccessService.startHandle)
            return try! database.add(GenericAttributeService.definition, startHandle: GenericAttributeService.startHandle)
        case .genericAttributeOnly:
            return try! database.add(GenericAttributeService.definition, startHandle: 0x0001)
        }
    }
}
