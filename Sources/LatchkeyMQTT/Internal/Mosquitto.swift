#if canImport(Glibc)
import Glibc
#endif
import CMosquitto

/// Every libmosquitto call of this module, typed. One `Mosquitto` is one `struct mosquitto`
/// driven by hand (`threaded_set(false)`): the owner watches `socket` and calls `read`,
/// `write` and `misc`, so libmosquitto never starts a thread and every callback runs on the
/// caller's loop. The library is loaded at the first one (`library`), not linked: the lock and
/// phone agents, which share the binary, never map it or the OpenSSL it brings.
final class Mosquitto {
    private let handle: OpaquePointer
    var onConnect: ((_ reasonCode: Int) -> Void)?
    var onDisconnect: ((_ reasonCode: Int) -> Void)?
    var onPublish: ((_ messageID: Int) -> Void)?
    var onMessage: ((MQTTMessage) -> Void)?

    /// libmosquitto 2.0's soname (Debian's libmosquitto1).
    static let soname = "libmosquitto.so.1"

    /// The library's functions, once per process: dlopen, dlsym of each, mosquitto_lib_init
    /// (which initialises OpenSSL). A failure is the sentence the bridge prints.
    private static let library: Result<latchkey_mosquitto, MQTTError> = {
        guard let opened = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "not found"
            return .failure(MQTTError("libmosquitto: \(reason) (install libmosquitto1)"))
        }
        var table = latchkey_mosquitto()
        if let missing = latchkey_mosquitto_resolve(opened, &table) {
            return .failure(MQTTError("libmosquitto: \(soname) has no \(String(cString: missing)): not 2.0 or later"))
        }
        guard table.mosquitto_lib_init!() == MOSQ_ERR_SUCCESS.rawValue else {
            return .failure(MQTTError("libmosquitto: initialisation failed"))
        }
        return .success(table)
    }()

    /// The loaded table; only reached once `init` has checked `library`.
    private static var api: latchkey_mosquitto {
        guard case .success(let table) = library else { preconditionFailure("libmosquitto used before it loaded") }
        return table
    }

    init(clientID: String) throws(MQTTError) {
        if case .failure(let error) = Self.library { throw error }
        let api = Self.api
        // clean_session true: the bridge's durable cursor, not a broker session, is what survives.
        guard let h = api.mosquitto_new!(clientID, true, nil) else { throw MQTTError("libmosquitto: out of memory") }
        handle = h
        api.mosquitto_user_data_set!(h, Unmanaged.passUnretained(self).toOpaque())
        _ = api.mosquitto_threaded_set!(h, false)
        _ = api.mosquitto_int_option!(h, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5)
        api.mosquitto_connect_v5_callback_set!(h) { _, obj, rc, _, _ in Mosquitto.owner(obj)?.onConnect?(Int(rc)) }
        api.mosquitto_disconnect_v5_callback_set!(h) { _, obj, rc, _ in Mosquitto.owner(obj)?.onDisconnect?(Int(rc)) }
        api.mosquitto_publish_v5_callback_set!(h) { _, obj, mid, _, _ in Mosquitto.owner(obj)?.onPublish?(Int(mid)) }
        api.mosquitto_message_v5_callback_set!(h) { _, obj, message, props in
            guard let owner = Mosquitto.owner(obj), let m = message?.pointee else { return }
            var expiry: UInt32 = 0
            let found = Mosquitto.api.mosquitto_property_read_int32!(props, Int32(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL.rawValue), &expiry, false) != nil
            let bytes = m.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(m.payloadlen))) } ?? []
            owner.onMessage?(MQTTMessage(topic: m.topic.map { String(cString: $0) } ?? "", payload: bytes,
                                         qos: Int(m.qos), retain: m.retain, expirySeconds: found ? expiry : nil))
        }
    }

    deinit { Self.api.mosquitto_destroy!(handle) }

    private static func owner(_ obj: UnsafeMutableRawPointer?) -> Mosquitto? {
        obj.map { Unmanaged<Mosquitto>.fromOpaque($0).takeUnretainedValue() }
    }

    func credentials(username: String, password: String?) throws(MQTTError) {
        try check(Self.api.mosquitto_username_pw_set!(handle, username, password), "username")
    }

    func tls(caFile: String, certificate: String?, key: String?) throws(MQTTError) {
        try check(Self.api.mosquitto_tls_set!(handle, caFile, nil, certificate, key, nil), "TLS files")
    }

    func will(_ message: MQTTMessage) throws(MQTTError) {
        let rc = message.payload.withUnsafeBytes { raw in
            Self.api.mosquitto_will_set_v5!(handle, message.topic, Int32(raw.count), raw.baseAddress, Int32(message.qos),
                                  message.retain, nil)
        }
        try check(rc, "will")
    }

    /// Starts a non-blocking TCP connect (name resolution still blocks, the bridge's loop only).
    func connect(host: String, port: Int, keepalive: Int) -> Int {
        Int(Self.api.mosquitto_connect_async!(handle, host, Int32(port), Int32(keepalive)))
    }

    func disconnect() -> Int { Int(Self.api.mosquitto_disconnect!(handle)) }

    var socket: Int32 { Self.api.mosquitto_socket!(handle) }
    var wantsWrite: Bool { Self.api.mosquitto_want_write!(handle) }
    func read() -> Int { Int(Self.api.mosquitto_loop_read!(handle, 1)) }
    func write() -> Int { Int(Self.api.mosquitto_loop_write!(handle, 1)) }
    func misc() -> Int { Int(Self.api.mosquitto_loop_misc!(handle)) }

    func publish(_ message: MQTTMessage) throws(MQTTError) -> Int {
        var props: OpaquePointer?
        defer { Self.api.mosquitto_property_free_all!(&props) }
        if let expiry = message.expirySeconds {
            try check(Self.api.mosquitto_property_add_int32!(&props, Int32(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL.rawValue), expiry),
                      "message expiry")
        }
        var mid: Int32 = 0
        let rc = message.payload.withUnsafeBytes { raw in
            Self.api.mosquitto_publish_v5!(handle, &mid, message.topic, Int32(raw.count), raw.baseAddress, Int32(message.qos),
                                 message.retain, props)
        }
        try check(rc, "publish to \(message.topic)")
        return Int(mid)
    }

    func subscribe(_ filter: String) throws(MQTTError) {
        // Retain As Published: without it a broker forwards a message published retained to an
        // existing subscription with the flag cleared, and a retained command would pass for a live one.
        let options = Int32(MQTT_SUB_OPT_NO_LOCAL.rawValue | MQTT_SUB_OPT_RETAIN_AS_PUBLISHED.rawValue)
        try check(Self.api.mosquitto_subscribe_v5!(handle, nil, filter, 1, options, nil), "subscribe to \(filter)")
    }

    static func errorText(_ rc: Int) -> String { Self.api.mosquitto_strerror!(Int32(rc)).map { String(cString: $0) } ?? "error \(rc)" }
    static func reasonText(_ code: Int) -> String {
        Self.api.mosquitto_reason_string!(Int32(code)).map { String(cString: $0) } ?? "reason \(code)"
    }
    static let success = Int(MOSQ_ERR_SUCCESS.rawValue)
    /// The text for `rc`; for MOSQ_ERR_ERRNO the system's (errno is still the failed call's).
    static func failureText(_ rc: Int) -> String {
        rc == Int(MOSQ_ERR_ERRNO.rawValue) ? String(cString: strerror(Glibc.errno)) : errorText(rc)
    }

    private func check(_ rc: Int32, _ what: String) throws(MQTTError) {
        guard rc != MOSQ_ERR_SUCCESS.rawValue else { return }
        throw MQTTError("\(what): \(Self.errorText(Int(rc)))")
    }
}
