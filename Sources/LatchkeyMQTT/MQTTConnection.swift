/// A client connection to an MQTT 5 broker: the seam between the bridge and the network.
/// `MosquittoConnection` (libmosquitto on the real-time loop) and `SimulatedBroker`'s
/// connections implement it. Everything is delivered on the caller's loop, one thread.
public protocol MQTTConnection: AnyObject {
    var delegate: (any MQTTConnectionDelegate)? { get set }
    /// Starts a connection attempt; the outcome arrives as `didConnect` or `didFailToConnect`.
    func connect()
    /// Sends DISCONNECT (the will is not published) and closes.
    func disconnect()
    /// Queues a message. QoS 1 messages are acknowledged by `didAcknowledge` with the
    /// returned message id; a message not acknowledged before a disconnection may not have
    /// arrived (or arrived and its PUBACK was lost), and is never sent again by the connection:
    /// after the next `didConnect` the owner publishes again what must arrive.
    func publish(_ message: MQTTMessage) throws(MQTTError) -> Int
    /// Subscribes at QoS 1; the broker's copies of our own publications are not sent back
    /// (No Local), and a message keeps the retain flag it was published with (Retain As
    /// Published), so that a retained command is recognised even on a live subscription.
    func subscribe(_ filter: String) throws(MQTTError)
}

public protocol MQTTConnectionDelegate: AnyObject {
    func mqttDidConnect(_ connection: any MQTTConnection)
    func mqtt(_ connection: any MQTTConnection, didFailToConnect failure: MQTTConnectFailure)
    /// A session ended: a lost link, the broker closing, or our own `disconnect()`.
    func mqtt(_ connection: any MQTTConnection, didDisconnect reason: String)
    func mqtt(_ connection: any MQTTConnection, didAcknowledge messageID: Int)
    func mqtt(_ connection: any MQTTConnection, didReceive message: MQTTMessage)
}
