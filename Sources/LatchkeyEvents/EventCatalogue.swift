// The catalogue of the agents' timeline events: every event an agent prints (JSON lines on
// stdout, journald's LATCHKEY_EVENT and its fields) is declared here once, with what it means and
// its fields in the order they are printed. docs/EVENTS.md is generated from it
// (`latchkey events --markdown`, scripts/update-events); users' journalctl filters, the MQTT
// demo, the HIL judge and the torture audit read these names, so a rename is a change here and
// a line in docs/EVENTS.md's history.

extension EventKind {
    public static let lockStarted = EventKind(
        "lock.started", "The lock agent started: the lock and door states it starts from.",
        [.state, .door])
    public static let lockStopping = EventKind(
        "lock.stopping", "The lock agent is stopping (SIGTERM or SIGINT).")
    public static let lockRecovering = EventKind(
        "lock.recovering", "A decision was on disk without its outcome at start: the lock finishes or abandons it.",
        [EventField("decision", .numbered("decision#"), "the decision's number"), EventField("operation", Event.Operation.eventType, "the operation it decided")])
    public static let lockJournalCaughtUp = EventKind(
        "lock.journal_caught_up", "The decision journal has no decision left without its outcome.")
    public static let lockFault = EventKind(
        "lock.fault", "Something the lock agent could not do; it works on without it.",
        [EventField("fault", .text, "what failed")])
    public static let lockRestored = EventKind(
        "lock.restored", "The lock restored the Bluetooth state the transport kept (services, links, advertising) after a start.",
        [EventField("services", .integer, "services restored"), .centrals, .subscribed,
         EventField("advertising", .boolean, "whether advertising was restored")])
    public static let lockRestorationFailed = EventKind(
        "lock.restoration_failed", "The lock could not restore or save part of its kept Bluetooth state.",
        [.error])
    public static let lockServiceChanged = EventKind(
        "lock.service_changed", "The lock's GATT database changed; Service Changed was indicated to the centrals that asked.",
        [EventField("range", .text, "the changed handle range"), EventField("indicated", .integer, "centrals indicated"), .centrals])
    public static let lockStoreReadOnly = EventKind(
        "lock.store_read_only", "The lock's store stopped taking writes: the lock only locks until it takes them again.",
        [.store, EventField("effect", .text, "what the lock does meanwhile")])
    public static let lockStoreWritable = EventKind(
        "lock.store_writable", "The lock's store takes writes again.",
        [.store])
    public static let lockStoreWalUnprepared = EventKind(
        "lock.store_wal_unprepared", "The store's write-ahead log could not be prepared at start.",
        [.why])
    public static let lockStoreRecovered = EventKind(
        "lock.store_recovered", "The store was found damaged at start and recovered.",
        [.detail])
    public static let lockStoreCheckpointFailed = EventKind(
        "lock.store_checkpoint_failed", "A checkpoint of the store's write-ahead log failed.",
        [.error])
    public static let lockGpioError = EventKind(
        "lock.gpio_error", "A GPIO line could not be read or driven.",
        [.error])
    public static let lockGpioSimCreated = EventKind(
        "lock.gpio_sim_created", "A simulated GPIO chip was created (gpio.simulated_chip_root).",
        [EventField("chip", .text, "the chip's path")])
    public static let lockGpioLibrary = EventKind(
        "lock.gpio_library", "The libgpiod library loaded at run time.",
        [EventField("library", .text, "its file name")])
    public static let lockRealtime = EventKind(
        "lock.realtime", "The lock agent runs at a real-time scheduling priority.",
        [EventField("policy", .text, "the scheduling policy"), .priority, EventField("rtprio_limit", .text, "RLIMIT_RTPRIO as set")])
    public static let lockRealtimeRefused = EventKind(
        "lock.realtime_refused", "The kernel refused the real-time priority; the lock runs at normal priority.",
        [.priority, .error, EventField("hint", .text, "what to change")])
    public static let lockRealtimeLimitFailed = EventKind(
        "lock.realtime_limit_failed", "RLIMIT_RTPRIO could not be read or raised.",
        [.error])
    public static let lockLogFailed = EventKind(
        "lock.log_failed", "An audit-log event could not be written.",
        [.error])
    public static let lockEvent = EventKind(
        "lock.event", "An audit-log event (the door's story: operations, refusals, alarms, mode changes).",
        [EventField("kind", .text, "the event's kind and record"), EventField("state", Event.LockState.eventType, "the lock state after it"), .door,
         .key.optional])
    public static let lockRadio = EventKind(
        "lock.radio", "The radio's power state changed.",
        [.radioState])
    public static let lockAdvertising = EventKind(
        "lock.advertising", "The lock started advertising (or failed to).",
        [.error.optional])
    public static let lockAdvertisingPaused = EventKind(
        "lock.advertising_paused", "Advertising paused: the link limit is reached.",
        [.links])
    public static let lockAdvertisingResumed = EventKind(
        "lock.advertising_resumed", "Advertising resumed: a link slot is free again.",
        [.links])
    public static let lockCentralConnected = EventKind(
        "lock.central_connected", "A central linked to the lock.",
        [.central])
    public static let lockCentralDisconnected = EventKind(
        "lock.central_disconnected", "A central's link went down.",
        [.central, .reason])
    public static let lockLinkDropped = EventKind(
        "lock.link_dropped", "The lock dropped a link (no session in time, too many strikes).",
        [.central, .reason])
    public static let lockSessionOpened = EventKind(
        "lock.session_opened", "A link opened a session with a paired key.",
        [.central, .key])
    public static let lockSessionNotKept = EventKind(
        "lock.session_not_kept", "A link's session could not be kept in the store for a restart.",
        [.central, .key, .error])
    public static let lockSessionRestored = EventKind(
        "lock.session_restored", "A kept session was restored on a link that survived the lock's restart.",
        [.central, .key, .sequence])
    public static let lockSessionNotRestored = EventKind(
        "lock.session_not_restored", "A link that survived the restart had no kept session to restore.",
        [.central, .reason])
    public static let lockBindingRestored = EventKind(
        "lock.binding_restored", "A link's binding to its key was restored after a restart.",
        [.key, .central])
    public static let lockBindingNotRestored = EventKind(
        "lock.binding_not_restored", "A kept binding of a link to a key was not restored.",
        [.key, .central, .reason])
    public static let lockSubscriptionRefused = EventKind(
        "lock.subscription_refused", "A central tried to subscribe without a session.",
        [.central, .reason])
    public static let lockReadRefused = EventKind(
        "lock.read_refused", "A central tried to read without a session.",
        [.central, .reason])
    public static let lockCommandRejected = EventKind(
        "lock.command_rejected", "A command frame failed its checks before any key was known (malformed, wrong seal).",
        [.central, EventField("reason", Event.CommandRejection.eventType, "the rejection")])
    public static let lockCommandRefused = EventKind(
        "lock.command_refused", "The lock refused a key's command.",
        [.key, .op.optional, .mode.optional, .source.optional, .reason.optional, .error.optional])
    public static let lockCommandAccepted = EventKind(
        "lock.command_accepted", "The lock accepted a key's command; the decision is on disk before this line.",
        [.key, .op, EventField("counter", .integer, "the command's counter, now the key's").optional, .source.optional,
         EventField("actuator_ms", .milliseconds, "command received to actuator output changed, ms").optional,
         EventField("decision", .orWord(.integer, "none"), "the decision's number in the journal, or none").optional,
         EventField("durable_ms", .milliseconds, "the part of actuator_ms the disk took").optional])
    public static let lockCounterWriteFailed = EventKind(
        "lock.counter_write_failed", "A lock command's counter could not be stored; the lock held the key until the store takes writes.",
        [.key, .error, EventField("held", .text, "what is held until when")])
    public static let lockPhonePresent = EventKind(
        "lock.phone_present", "A key's phone said it is present (its link belongs to that key).",
        [.key, .central])
    public static let lockDeparture = EventKind(
        "lock.departure", "A key's phone stayed away for the departure grace: it has left (a departure lock follows when configured).",
        [.key])
    public static let lockDepartureCancelled = EventKind(
        "lock.departure_cancelled", "A key's phone linked again within the departure grace: no departure.",
        [.key])
    public static let lockDepartureCreditSpent = EventKind(
        "lock.departure_credit_spent", "An arrival unlock used the key's departure credit.",
        [.key, .op])
    public static let lockDepartureCreditClock = EventKind(
        "lock.departure_credit_clock", "An arrival unlock was allowed by the time since the key's return.",
        [.key, .op, .seconds])
    public static let lockArrivalTiming = EventKind(
        "lock.arrival_timing", "How long an arrival unlock took from the challenge read to the command.",
        [.key, EventField("challenge_to_command_ms", .milliseconds, "challenge read to command, ms"),
         EventField("interval_ms", .orWord(.milliseconds, "unknown"), "the link's connection interval, ms, or unknown")])
    public static let lockArrivalRefused = EventKind(
        "lock.arrival_refused", "An arrival unlock was refused by the arrival policy.",
        [.key, EventField("reason", Event.ArrivalRefusal.eventType, "the policy's rule that refused it")])
    public static let lockArrivalRelock = EventKind(
        "lock.arrival_relock", "The door was not opened after an arrival unlock: the lock relocks.",
        [.key, .seconds])
    public static let lockSuspectedRelay = EventKind(
        "lock.suspected_relay", "An arrival unlock looked relayed (too slow) and was refused.",
        [.key, .reason])
    public static let lockAuditPaced = EventKind(
        "lock.audit_paced", "Refusals from one source came too fast: some were counted, not logged.",
        [.source, EventField("left_out", .integer, "refusals left out of the log since the last one logged"),
         EventField("logged", .boolean, "whether this refusal went into the log")])
    public static let lockLockout = EventKind(
        "lock.lockout", "Too many failures: a key, a link or the bridge is locked out for a while.",
        [EventField("principal", .text, "who is locked out"), EventField("level", .integer, "the lockout's level"), .seconds,
         .key.optional])
    public static let lockBridgeWrongCode = EventKind(
        "lock.bridge_wrong_code", "The bridge sent a command with a wrong code for the key.",
        [.key])
    public static let lockOperatingMode = EventKind(
        "lock.operating_mode", "A key changed the lock's operating mode.",
        [.key, .mode])
    public static let lockOperatingModeRestored = EventKind(
        "lock.operating_mode_restored", "The operating mode was restored from the store at start.",
        [.mode])
    public static let lockOperatingModeNotRestored = EventKind(
        "lock.operating_mode_not_restored", "The stored operating mode was not restored; the lock starts in another.",
        [EventField("stored", Event.OperatingMode.eventType, "the mode stored"), .mode])
    public static let lockPairingOpen = EventKind(
        "lock.pairing_open", "The pairing window opened.",
        [.seconds, .role, .fingerprint])
    public static let lockPairingPending = EventKind(
        "lock.pairing_pending", "A phone asked to pair: its comparison code waits for the owner's confirmation.",
        [.key, .name, .code])
    public static let lockKeyPaired = EventKind(
        "lock.key_paired", "A phone's key was paired.",
        [.key, .name, .role, EventField("arrival", .boolean, "whether the key may ask for arrival unlocks"), .code])
    public static let lockPairingNotEnrolled = EventKind(
        "lock.pairing_not_enrolled", "A pending pairing was not enrolled.",
        [.key, .name, EventField("reason", Event.NotEnrolledReason.eventType, "why it was not")])
    public static let lockPairingRefused = EventKind(
        "lock.pairing_refused", "A pairing request was refused.",
        [.central, .reason, EventField("refused_total", .integer, "pairing requests refused since start")])
    public static let lockPairingClosed = EventKind(
        "lock.pairing_closed", "The pairing window closed.")
    public static let lockKeyEnded = EventKind(
        "lock.key_ended", "A revoked key's links were ended.",
        [.key, .links])
    public static let lockLogRefused = EventKind(
        "lock.log_refused", "A central asked for the audit log and was refused.",
        [.central, .key.optional, .reason])
    public static let lockLogTransfer = EventKind(
        "lock.log_transfer", "The audit log is being sent to a central.",
        [.central, EventField("events", .integer, "events sent")])
    public static let phoneStarted = EventKind(
        "phone.started", "The phone agent started: where it thinks it is.",
        [.presence, .cycle])
    public static let phoneStopping = EventKind(
        "phone.stopping", "The phone agent is stopping (SIGTERM or SIGINT).")
    public static let phoneRestored = EventKind(
        "phone.restored", "The phone restored the link and GATT cache the transport kept, after a start.",
        [EventField("lock", Event.LinkState.eventType, "the lock's link state"),
         EventField("cached_characteristics", .integer, "characteristics in the cache"), .subscribedOrNot])
    public static let phoneRestorationFailed = EventKind(
        "phone.restoration_failed", "The phone could not restore or save its kept Bluetooth state.",
        [.error])
    public static let phoneStoreWalUnprepared = EventKind(
        "phone.store_wal_unprepared", "The store's write-ahead log could not be prepared at start.",
        [.why])
    public static let phoneStoreRecovered = EventKind(
        "phone.store_recovered", "The store was found damaged at start and recovered.",
        [.detail])
    public static let phonePersistFailed = EventKind(
        "phone.persist_failed",
        "The phone's store refused to save its state (said once, until a save works again): no command goes, its counter not durable, and the phone re-links only after a growing wait.",
        [.error])
    public static let phonePersistRecovered = EventKind(
        "phone.persist_recovered", "The phone's store saves again after refusing: the phone links and sends again.",
        [EventField("refused", .integer, "the saves it refused meanwhile"), .seconds])
    public static let phoneRadio = EventKind(
        "phone.radio", "The radio's power state changed.",
        [.radioState])
    public static let phoneConnectPending = EventKind(
        "phone.connect_pending", "The phone asked the kernel to connect to the lock whenever it is in range.",
        [.lock])
    public static let phoneConnectFailed = EventKind(
        "phone.connect_failed", "The connect request failed.",
        [.error])
    public static let phoneLinked = EventKind(
        "phone.linked", "The phone linked to the lock.",
        [.lock])
    public static let phoneLinkAdopted = EventKind(
        "phone.link_adopted", "The phone adopted a link that survived its restart (no new connection).",
        [.lock])
    public static let phoneLinkLost = EventKind(
        "phone.link_lost", "The link to the lock went down.",
        [.reason])
    public static let phoneLinkVerified = EventKind(
        "phone.link_verified", "The lock proved its identity on this link.")
    public static let phoneLinkInterval = EventKind(
        "phone.link_interval", "The phone asked for a new connection interval.",
        [.ms, EventField("why", Event.IntervalReason.eventType, "the link went idle or busy")])
    public static let phoneLinkIntervalUnsupported = EventKind(
        "phone.link_interval_unsupported", "The transport cannot change the connection interval.",
        [.ms])
    public static let phoneGattFailed = EventKind(
        "phone.gatt_failed", "A GATT step (discovery, subscription) failed.",
        [EventField("step", .text, "the step"), .error])
    public static let phoneSubscribed = EventKind(
        "phone.subscribed", "The phone subscribed to the lock's status.")
    public static let phoneGattReady = EventKind(
        "phone.gatt_ready", "The lock's service is discovered and subscribed: commands can go.",
        [EventField("mtu", .integer, "the ATT MTU")])
    public static let phoneCacheStale = EventKind(
        "phone.cache_stale", "The GATT cache no longer matches the lock's database.",
        [.error])
    public static let phoneServicesChanged = EventKind(
        "phone.services_changed", "The lock announced changed services; the cache was invalidated.",
        [EventField("invalidated", .integer, "services invalidated")])
    public static let phoneServiceChangedInvalid = EventKind(
        "phone.service_changed_invalid", "A Service Changed indication could not be read.",
        [EventField("value", .text, "its octets in hex")])
    public static let phonePresentFailed = EventKind(
        "phone.present_failed", "The phone could not tell the lock it is present.",
        [.error])
    public static let phoneLockStatus = EventKind(
        "phone.lock_status", "The lock's status arrived.",
        [EventField("lock_state", .integer, "the lock state as the status frame carries it: Matter's LockStateEnum value (1 locked, 2 unlocked)"),
         EventField("door_state", .integer, "the door state as the status frame carries it: Matter's DoorStateEnum value (0 open, 1 closed)")])
    public static let phoneReplyUnreadable = EventKind(
        "phone.reply_unreadable", "A reply from the lock could not be opened.",
        [EventField("kind", .text, "what it was"), EventField("session", Event.SessionAtReply.eventType, "whether a session was open")])
    public static let phoneBoltReportTimeout = EventKind(
        "phone.bolt_report_timeout", "The lock did not report the bolt's movement in time.")
    public static let phoneCommandWaitsForLink = EventKind(
        "phone.command_waits_for_link", "A command waits for the link.",
        [.op])
    public static let phoneCommandStarted = EventKind(
        "phone.command_started", "A command started: a challenge is asked for, or one held is used.",
        [.op, EventField("challenge", Event.ChallengeAtHand.eventType, "the challenge already there: fetched ahead, or held from before").optional])
    public static let phoneCommandSent = EventKind(
        "phone.command_sent", "A sealed command was written to the lock.",
        [.op, EventField("counter", .integer, "the command's counter")])
    public static let phoneCommandOk = EventKind(
        "phone.command_ok", "The lock carried out the command.",
        [.op, EventField("ms", .milliseconds, "command written to reply, ms")])
    public static let phoneCommandRefused = EventKind(
        "phone.command_refused", "The lock refused the command.",
        [.op, EventField("reason", Event.CommandRejection.eventType, "the lock's rejection")])
    public static let phoneCommandTimeout = EventKind(
        "phone.command_timeout", "The command got no reply in time.",
        [.op])
    public static let phoneSetupTimeout = EventKind(
        "phone.setup_timeout", "The link's setup (discovery, subscription) took too long.")
    public static let phoneHeldChallengeExpired = EventKind(
        "phone.held_challenge_expired", "A challenge held ahead expired before use.",
        [.op])
    public static let phoneHeldChallengeRefused = EventKind(
        "phone.held_challenge_refused", "The lock refused a command sealed with a held challenge; the phone asks again.",
        [.op])
    public static let phoneChallengeAheadFailed = EventKind(
        "phone.challenge_ahead_failed", "A challenge could not be fetched ahead of a command.",
        [.error])
    public static let phoneKeyRevoked = EventKind(
        "phone.key_revoked", "The lock said the phone's key is unknown: it was revoked.",
        [.lock])
    public static let phoneAskingAgain = EventKind(
        "phone.asking_again", "The phone asks again after a refusal it can mend.",
        [.op])
    public static let phoneLogFetchTimeout = EventKind(
        "phone.log_fetch_timeout", "The audit log's transfer stalled.",
        [EventField("received", .integer, "octets received")])
    public static let phoneAway = EventKind(
        "phone.away", "The phone left the lock's range: away.",
        [.cycle])
    public static let phoneHome = EventKind(
        "phone.home", "The phone is home.",
        [.cycle, EventField("unlocked", .boolean, "whether an arrival unlock opened the door")])
    public static let phoneHomeWithoutArrival = EventKind(
        "phone.home_without_arrival", "The phone was near long enough to count as home without an arrival unlock.",
        [.cycle, EventField("nearby_seconds", .seconds, "the nearby limit, s")])
    public static let phonePresence = EventKind(
        "phone.presence", "The presence state changed.",
        [EventField("from", Event.Presence.eventType, "the state before"), EventField("to", Event.Presence.eventType, "the state after")])
    public static let phoneArrivalIntent = EventKind(
        "phone.arrival_intent", "The user said they are arriving (the intent that allows an arrival unlock).",
        [.presence])
    public static let phoneArrivalIntentExpired = EventKind(
        "phone.arrival_intent_expired", "The arrival intent expired unused.")
    public static let phoneArrivalRequest = EventKind(
        "phone.arrival_request", "The phone asks the lock for an arrival unlock.",
        [.cycle])
    public static let phoneArrivalBusy = EventKind(
        "phone.arrival_busy", "An arrival request waits: a command is in flight.",
        [.cycle])
    public static let phoneArrivalRefused = EventKind(
        "phone.arrival_refused", "The lock refused the arrival unlock.",
        [.cycle, .reason])
    public static let phoneArrivalRetry = EventKind(
        "phone.arrival_retry", "The arrival request is tried again.",
        [.cycle, .reason])
    public static let pairScanning = EventKind(
        "pair.scanning", "`latchkey pair` scans for a lock in its pairing window.",
        [.seconds])
    public static let pairFound = EventKind(
        "pair.found", "A lock in its pairing window was found.",
        [.lock, EventField("name", .text, "the lock's name"), .fingerprint])
    public static let pairConnecting = EventKind(
        "pair.connecting", "Connecting to the lock found.",
        [.lock])
    public static let pairLinked = EventKind(
        "pair.linked", "Linked to the lock.",
        [.lock])
    public static let pairRequestSent = EventKind(
        "pair.request_sent", "The pairing request was written.",
        [.name])
    public static let pairPaired = EventKind(
        "pair.paired", "The lock enrolled the phone's key.",
        [.key, .role, .code, EventField("lock_fingerprint", .text, "the lock identity's fingerprint")])
    public static let pairFailed = EventKind(
        "pair.failed", "Pairing failed.",
        [.reason])
    public static let lockAlert = EventKind(
        "lock.alert", "A connection alert (the transport saw something wrong with a device).",
        [EventField("device", .text, "the device"), .event, EventField("detail", .text, "what was seen")])
    public static let phoneAlert = EventKind(
        "phone.alert", "A connection alert (the transport saw something wrong with a device).",
        [EventField("device", .text, "the device"), .event, EventField("detail", .text, "what was seen")])
    public static let lockTransportRefused = EventKind(
        "lock.transport_refused", "The transport refused a request; it is asked again.",
        [EventField("request", .text, "the request"), .reason, EventField("attempt", .integer, "the attempt's number"),
         EventField("retry_in", .duration, "when it is asked again")])
    public static let phoneTransportRefused = EventKind(
        "phone.transport_refused", "The transport refused a request; it is asked again.",
        [EventField("request", .text, "the request"), .reason, EventField("attempt", .integer, "the attempt's number"),
         EventField("retry_in", .duration, "when it is asked again")])
    public static let lockControlRefused = EventKind(
        "lock.control_refused", "A control-socket command was refused to a peer.",
        [EventField("command", .text, "the command's first word"), EventField("peer", Event.ControlPeer.eventType, "the bridge, or another process").optional,
         EventField("uid", .orWord(.integer, "unknown"), "the peer's uid").optional, EventField("pid", .orWord(.integer, "unknown"), "the peer's pid").optional])
    public static let phoneControlRefused = EventKind(
        "phone.control_refused", "A control-socket command was refused to a peer.",
        [EventField("command", .text, "the command's first word"), EventField("peer", Event.ControlPeer.eventType, "the bridge, or another process").optional,
         EventField("uid", .orWord(.integer, "unknown"), "the peer's uid").optional, EventField("pid", .orWord(.integer, "unknown"), "the peer's pid").optional])
    public static let lockAppSuspended = EventKind(
        "lock.app_suspended", "The agent's application layer was suspended.")
    public static let phoneAppSuspended = EventKind(
        "phone.app_suspended", "The agent's application layer was suspended.")
    public static let lockAppResumed = EventKind(
        "lock.app_resumed", "The agent's application layer resumed.",
        [EventField("delivered", .integer, "queued events delivered"), .lost])
    public static let phoneAppResumed = EventKind(
        "phone.app_resumed", "The agent's application layer resumed.",
        [EventField("delivered", .integer, "queued events delivered"), .lost])
    public static let lockAppQueueOverflow = EventKind(
        "lock.app_queue_overflow", "An event arrived while suspended with the queue full: not delivered.",
        [.event, EventField("capacity", .integer, "the queue's capacity"), .lost])
    public static let phoneAppQueueOverflow = EventKind(
        "phone.app_queue_overflow", "An event arrived while suspended with the queue full: not delivered.",
        [.event, EventField("capacity", .integer, "the queue's capacity"), .lost])
    public static let lockAppWoken = EventKind(
        "lock.app_woken", "A transport event woke the suspended application.",
        [.event])
    public static let phoneAppWoken = EventKind(
        "phone.app_woken", "A transport event woke the suspended application.",
        [.event])
    public static let lockAppWakeHandled = EventKind(
        "lock.app_wake_handled", "A wake-up was handled.",
        [.event, EventField("ms", .milliseconds, "how long it took")])
    public static let phoneAppWakeHandled = EventKind(
        "phone.app_wake_handled", "A wake-up was handled.",
        [.event, EventField("ms", .milliseconds, "how long it took")])
    public static let lockAppWakeOverBudget = EventKind(
        "lock.app_wake_over_budget", "A wake-up took longer than its budget.",
        [.event, EventField("ms", .milliseconds, "how long it took"), EventField("budget_ms", .milliseconds, "the budget")])
    public static let phoneAppWakeOverBudget = EventKind(
        "phone.app_wake_over_budget", "A wake-up took longer than its budget.",
        [.event, EventField("ms", .milliseconds, "how long it took"), EventField("budget_ms", .milliseconds, "the budget")])

    /// Every event, in the order docs/EVENTS.md lists them.
    public static let all: [EventKind] = [
        .lockStarted,
        .lockStopping,
        .lockRecovering,
        .lockJournalCaughtUp,
        .lockFault,
        .lockRestored,
        .lockRestorationFailed,
        .lockServiceChanged,
        .lockStoreReadOnly,
        .lockStoreWritable,
        .lockStoreWalUnprepared,
        .lockStoreRecovered,
        .lockStoreCheckpointFailed,
        .lockGpioError,
        .lockGpioSimCreated,
        .lockGpioLibrary,
        .lockRealtime,
        .lockRealtimeRefused,
        .lockRealtimeLimitFailed,
        .lockLogFailed,
        .lockEvent,
        .lockRadio,
        .lockAdvertising,
        .lockAdvertisingPaused,
        .lockAdvertisingResumed,
        .lockCentralConnected,
        .lockCentralDisconnected,
        .lockLinkDropped,
        .lockSessionOpened,
        .lockSessionNotKept,
        .lockSessionRestored,
        .lockSessionNotRestored,
        .lockBindingRestored,
        .lockBindingNotRestored,
        .lockSubscriptionRefused,
        .lockReadRefused,
        .lockCommandRejected,
        .lockCommandRefused,
        .lockCommandAccepted,
        .lockCounterWriteFailed,
        .lockPhonePresent,
        .lockDeparture,
        .lockDepartureCancelled,
        .lockDepartureCreditSpent,
        .lockDepartureCreditClock,
        .lockArrivalTiming,
        .lockArrivalRefused,
        .lockArrivalRelock,
        .lockSuspectedRelay,
        .lockAuditPaced,
        .lockLockout,
        .lockBridgeWrongCode,
        .lockOperatingMode,
        .lockOperatingModeRestored,
        .lockOperatingModeNotRestored,
        .lockPairingOpen,
        .lockPairingPending,
        .lockKeyPaired,
        .lockPairingNotEnrolled,
        .lockPairingRefused,
        .lockPairingClosed,
        .lockKeyEnded,
        .lockLogRefused,
        .lockLogTransfer,
        .lockAlert,
        .lockTransportRefused,
        .lockControlRefused,
        .lockAppSuspended,
        .lockAppResumed,
        .lockAppQueueOverflow,
        .lockAppWoken,
        .lockAppWakeHandled,
        .lockAppWakeOverBudget,
        .phoneStarted,
        .phoneStopping,
        .phoneRestored,
        .phoneRestorationFailed,
        .phoneStoreWalUnprepared,
        .phoneStoreRecovered,
        .phonePersistFailed,
        .phonePersistRecovered,
        .phoneRadio,
        .phoneConnectPending,
        .phoneConnectFailed,
        .phoneLinked,
        .phoneLinkAdopted,
        .phoneLinkLost,
        .phoneLinkVerified,
        .phoneLinkInterval,
        .phoneLinkIntervalUnsupported,
        .phoneGattFailed,
        .phoneSubscribed,
        .phoneGattReady,
        .phoneCacheStale,
        .phoneServicesChanged,
        .phoneServiceChangedInvalid,
        .phonePresentFailed,
        .phoneLockStatus,
        .phoneReplyUnreadable,
        .phoneBoltReportTimeout,
        .phoneCommandWaitsForLink,
        .phoneCommandStarted,
        .phoneCommandSent,
        .phoneCommandOk,
        .phoneCommandRefused,
        .phoneCommandTimeout,
        .phoneSetupTimeout,
        .phoneHeldChallengeExpired,
        .phoneHeldChallengeRefused,
        .phoneChallengeAheadFailed,
        .phoneKeyRevoked,
        .phoneAskingAgain,
        .phoneLogFetchTimeout,
        .phoneAway,
        .phoneHome,
        .phoneHomeWithoutArrival,
        .phonePresence,
        .phoneArrivalIntent,
        .phoneArrivalIntentExpired,
        .phoneArrivalRequest,
        .phoneArrivalBusy,
        .phoneArrivalRefused,
        .phoneArrivalRetry,
        .phoneAlert,
        .phoneTransportRefused,
        .phoneControlRefused,
        .phoneAppSuspended,
        .phoneAppResumed,
        .phoneAppQueueOverflow,
        .phoneAppWoken,
        .phoneAppWakeHandled,
        .phoneAppWakeOverBudget,
        .pairScanning,
        .pairFound,
        .pairConnecting,
        .pairLinked,
        .pairRequestSent,
        .pairPaired,
        .pairFailed,
    ]
}

extension EventField {
    static let central = EventField("central", .text, "the link's central, as the transport names it")
    static let centrals = EventField("centrals", .integer, "how many centrals")
    static let code = EventField("code", .text, "the six-digit comparison code both screens show")
    static let cycle = EventField("cycle", .integer, "the presence cycle (one away-and-back) it belongs to")
    static let detail = EventField("detail", .text, "what was found and done")
    static let door = EventField("door", Event.DoorState.eventType, "the door sensor's state")
    static let error = EventField("error", .text, "what went wrong, as the failing layer described it")
    static let event = EventField("event", .text, "the transport event concerned")
    static let fingerprint = EventField("fingerprint", .text, "the lock identity's fingerprint")
    static let key = EventField("key", .integer, "the phone key the event concerns: its number")
    static let links = EventField("links", .integer, "how many links are up")
    static let lock = EventField("lock", .text, "the lock: its address or link identifier")
    static let lost = EventField("lost", .integer, "events lost to a full queue so far")
    static let mode = EventField("mode", Event.OperatingMode.eventType, "an operating mode")
    static let ms = EventField("ms", .milliseconds, "a duration in milliseconds")
    static let name = EventField("name", .text, "a key's name, escaped for one line")
    static let op = EventField("op", Event.Operation.eventType, "the operation asked for")
    static let presence = EventField("presence", Event.Presence.eventType, "the presence state")
    static let priority = EventField("priority", .integer, "the SCHED_FIFO priority")
    static let reason = EventField("reason", .text, "why, in a word or a phrase")
    static let role = EventField("role", Event.KeyRole.eventType, "the key's role")
    static let seconds = EventField("seconds", .seconds, "a duration in whole seconds")
    static let sequence = EventField("sequence", .integer, "the audit-log sequence number")
    static let source = EventField("source", .text, "how the request came in")
    static let state = EventField("state", Event.LockState.eventType, "the lock state")
    static let radioState = EventField("state", Event.RadioState.eventType, "the radio's power state")
    static let store = EventField("store", .text, "the store's file")
    static let subscribed = EventField("subscribed", .integer, "how many centrals subscribed to the status characteristic")
    static let subscribedOrNot = EventField("subscribed", .boolean, "whether the status characteristic is subscribed")
    static let why = EventField("why", .text, "why, in a phrase")
}

// One constructor per event: its fields are its parameters, so an emit site cannot misspell or
// reorder a field, and an optional field (`String?`) is left out of the line when nil.
extension Event {
    public static func lockStarted(state: LockState, door: DoorState) -> Event {
        Event(.lockStarted, state, door)
    }

    public static var lockStopping: Event { Event(.lockStopping) }

    public static func lockRecovering(decision: UInt64, operation: Operation) -> Event {
        Event(.lockRecovering, Numbered("decision#", decision), operation)
    }

    public static var lockJournalCaughtUp: Event { Event(.lockJournalCaughtUp) }

    public static func lockFault(fault: String) -> Event {
        Event(.lockFault, fault)
    }

    public static func lockRestored(services: Int, centrals: Int, subscribed: Int, advertising: Bool) -> Event {
        Event(.lockRestored, services, centrals, subscribed, advertising)
    }

    public static func lockRestorationFailed(error: String) -> Event {
        Event(.lockRestorationFailed, error)
    }

    public static func lockServiceChanged(range: String, indicated: Int, centrals: Int) -> Event {
        Event(.lockServiceChanged, range, indicated, centrals)
    }

    public static func lockStoreReadOnly(store: String, effect: String) -> Event {
        Event(.lockStoreReadOnly, store, effect)
    }

    public static func lockStoreWritable(store: String) -> Event {
        Event(.lockStoreWritable, store)
    }

    public static func lockStoreWalUnprepared(why: String) -> Event {
        Event(.lockStoreWalUnprepared, why)
    }

    public static func lockStoreRecovered(detail: String) -> Event {
        Event(.lockStoreRecovered, detail)
    }

    public static func lockStoreCheckpointFailed(error: String) -> Event {
        Event(.lockStoreCheckpointFailed, error)
    }

    public static func lockGpioError(error: String) -> Event {
        Event(.lockGpioError, error)
    }

    public static func lockGpioSimCreated(chip: String) -> Event {
        Event(.lockGpioSimCreated, chip)
    }

    public static func lockGpioLibrary(library: String) -> Event {
        Event(.lockGpioLibrary, library)
    }

    public static func lockRealtime(policy: String, priority: Int, rtprioLimit: String) -> Event {
        Event(.lockRealtime, policy, priority, rtprioLimit)
    }

    public static func lockRealtimeRefused(priority: Int, error: String, hint: String) -> Event {
        Event(.lockRealtimeRefused, priority, error, hint)
    }

    public static func lockRealtimeLimitFailed(error: String) -> Event {
        Event(.lockRealtimeLimitFailed, error)
    }

    public static func lockLogFailed(error: String) -> Event {
        Event(.lockLogFailed, error)
    }

    public static func lockEvent(kind: String, state: LockState, door: DoorState, key: UInt32? = nil) -> Event {
        Event(.lockEvent, kind, state, door, key)
    }

    public static func lockRadio(state: RadioState) -> Event {
        Event(.lockRadio, state)
    }

    public static func lockAdvertising(error: String? = nil) -> Event {
        Event(.lockAdvertising, error)
    }

    public static func lockAdvertisingPaused(links: Int) -> Event {
        Event(.lockAdvertisingPaused, links)
    }

    public static func lockAdvertisingResumed(links: Int) -> Event {
        Event(.lockAdvertisingResumed, links)
    }

    public static func lockCentralConnected(central: String) -> Event {
        Event(.lockCentralConnected, central)
    }

    public static func lockCentralDisconnected(central: String, reason: String) -> Event {
        Event(.lockCentralDisconnected, central, reason)
    }

    public static func lockLinkDropped(central: String, reason: String) -> Event {
        Event(.lockLinkDropped, central, reason)
    }

    public static func lockSessionOpened(central: String, key: UInt32) -> Event {
        Event(.lockSessionOpened, central, key)
    }

    public static func lockSessionNotKept(central: String, key: UInt32, error: String) -> Event {
        Event(.lockSessionNotKept, central, key, error)
    }

    public static func lockSessionRestored(central: String, key: UInt32, sequence: UInt32) -> Event {
        Event(.lockSessionRestored, central, key, sequence)
    }

    public static func lockSessionNotRestored(central: String, reason: String) -> Event {
        Event(.lockSessionNotRestored, central, reason)
    }

    public static func lockBindingRestored(key: UInt32, central: String) -> Event {
        Event(.lockBindingRestored, key, central)
    }

    public static func lockBindingNotRestored(key: UInt32, central: String, reason: String) -> Event {
        Event(.lockBindingNotRestored, key, central, reason)
    }

    public static func lockSubscriptionRefused(central: String, reason: String) -> Event {
        Event(.lockSubscriptionRefused, central, reason)
    }

    public static func lockReadRefused(central: String, reason: String) -> Event {
        Event(.lockReadRefused, central, reason)
    }

    public static func lockCommandRejected(central: String, reason: CommandRejection) -> Event {
        Event(.lockCommandRejected, central, reason)
    }

    public static func lockCommandRefused(
        key: UInt32,
        op: Operation? = nil,
        mode: OperatingMode? = nil,
        source: String? = nil,
        reason: String? = nil,
        error: String? = nil
    ) -> Event {
        Event(.lockCommandRefused, key, op, mode, source, reason, error)
    }

    public static func lockCommandAccepted(
        key: UInt32,
        op: Operation,
        counter: UInt64? = nil,
        source: String? = nil,
        actuatorMs: Duration? = nil,
        decision: DecisionNumber? = nil,
        durableMs: Duration? = nil
    ) -> Event {
        Event(.lockCommandAccepted, key, op, counter, source, actuatorMs.map(Milliseconds.init), decision, durableMs.map(Milliseconds.init))
    }

    public static func lockCounterWriteFailed(key: UInt32, error: String, held: String) -> Event {
        Event(.lockCounterWriteFailed, key, error, held)
    }

    public static func lockPhonePresent(key: UInt32, central: String) -> Event {
        Event(.lockPhonePresent, key, central)
    }

    public static func lockDeparture(key: UInt32) -> Event {
        Event(.lockDeparture, key)
    }

    public static func lockDepartureCancelled(key: UInt32) -> Event {
        Event(.lockDepartureCancelled, key)
    }

    public static func lockDepartureCreditSpent(key: UInt32, op: Operation) -> Event {
        Event(.lockDepartureCreditSpent, key, op)
    }

    public static func lockDepartureCreditClock(key: UInt32, op: Operation, seconds: Duration) -> Event {
        Event(.lockDepartureCreditClock, key, op, WholeSeconds(seconds))
    }

    /// `intervalMs` nil: the link's interval is not known (`unknown`).
    public static func lockArrivalTiming(key: UInt32, challengeToCommandMs: Duration, intervalMs: Duration?) -> Event {
        Event(.lockArrivalTiming, key, Milliseconds(challengeToCommandMs), OrWord(intervalMs.map(Milliseconds.init), else: "unknown"))
    }

    public static func lockArrivalRefused(key: UInt32, reason: ArrivalRefusal) -> Event {
        Event(.lockArrivalRefused, key, reason)
    }

    public static func lockArrivalRelock(key: UInt32, seconds: Duration) -> Event {
        Event(.lockArrivalRelock, key, WholeSeconds(seconds))
    }

    public static func lockSuspectedRelay(key: UInt32, reason: String) -> Event {
        Event(.lockSuspectedRelay, key, reason)
    }

    public static func lockAuditPaced(source: String, leftOut: Int, logged: Bool) -> Event {
        Event(.lockAuditPaced, source, leftOut, logged)
    }

    public static func lockLockout(principal: String, level: UInt32, seconds: Duration, key: UInt32? = nil) -> Event {
        Event(.lockLockout, principal, level, WholeSeconds(seconds), key)
    }

    public static func lockBridgeWrongCode(key: UInt32) -> Event {
        Event(.lockBridgeWrongCode, key)
    }

    public static func lockOperatingMode(key: UInt32, mode: OperatingMode) -> Event {
        Event(.lockOperatingMode, key, mode)
    }

    public static func lockOperatingModeRestored(mode: OperatingMode) -> Event {
        Event(.lockOperatingModeRestored, mode)
    }

    public static func lockOperatingModeNotRestored(stored: OperatingMode, mode: OperatingMode) -> Event {
        Event(.lockOperatingModeNotRestored, stored, mode)
    }

    public static func lockPairingOpen(seconds: Duration, role: KeyRole, fingerprint: String) -> Event {
        Event(.lockPairingOpen, WholeSeconds(seconds), role, fingerprint)
    }

    public static func lockPairingPending(key: UInt32, name: String, code: String) -> Event {
        Event(.lockPairingPending, key, name, code)
    }

    public static func lockKeyPaired(key: UInt32, name: String, role: KeyRole, arrival: Bool, code: String) -> Event {
        Event(.lockKeyPaired, key, name, role, arrival, code)
    }

    public static func lockPairingNotEnrolled(key: UInt32, name: String, reason: NotEnrolledReason) -> Event {
        Event(.lockPairingNotEnrolled, key, name, reason)
    }

    public static func lockPairingRefused(central: String, reason: String, refusedTotal: Int) -> Event {
        Event(.lockPairingRefused, central, reason, refusedTotal)
    }

    public static var lockPairingClosed: Event { Event(.lockPairingClosed) }

    public static func lockKeyEnded(key: UInt32, links: Int) -> Event {
        Event(.lockKeyEnded, key, links)
    }

    public static func lockLogRefused(central: String, key: UInt32? = nil, reason: String) -> Event {
        Event(.lockLogRefused, central, key, reason)
    }

    public static func lockLogTransfer(central: String, events: Int) -> Event {
        Event(.lockLogTransfer, central, events)
    }

    public static func phoneStarted(presence: Presence, cycle: UInt64) -> Event {
        Event(.phoneStarted, presence, cycle)
    }

    public static var phoneStopping: Event { Event(.phoneStopping) }

    public static func phoneRestored(lock: LinkState, cachedCharacteristics: Int, subscribed: Bool) -> Event {
        Event(.phoneRestored, lock, cachedCharacteristics, subscribed)
    }

    public static func phoneRestorationFailed(error: String) -> Event {
        Event(.phoneRestorationFailed, error)
    }

    public static func phoneStoreWalUnprepared(why: String) -> Event {
        Event(.phoneStoreWalUnprepared, why)
    }

    public static func phoneStoreRecovered(detail: String) -> Event {
        Event(.phoneStoreRecovered, detail)
    }

    public static func phonePersistFailed(error: String) -> Event {
        Event(.phonePersistFailed, error)
    }

    public static func phonePersistRecovered(refused: Int, seconds: Duration) -> Event {
        Event(.phonePersistRecovered, refused, WholeSeconds(seconds))
    }

    public static func phoneRadio(state: RadioState) -> Event {
        Event(.phoneRadio, state)
    }

    public static func phoneConnectPending(lock: String) -> Event {
        Event(.phoneConnectPending, lock)
    }

    public static func phoneConnectFailed(error: String) -> Event {
        Event(.phoneConnectFailed, error)
    }

    public static func phoneLinked(lock: String) -> Event {
        Event(.phoneLinked, lock)
    }

    public static func phoneLinkAdopted(lock: String) -> Event {
        Event(.phoneLinkAdopted, lock)
    }

    public static func phoneLinkLost(reason: String) -> Event {
        Event(.phoneLinkLost, reason)
    }

    public static var phoneLinkVerified: Event { Event(.phoneLinkVerified) }

    public static func phoneLinkInterval(ms: Duration, why: IntervalReason) -> Event {
        Event(.phoneLinkInterval, Milliseconds(ms), why)
    }

    public static func phoneLinkIntervalUnsupported(ms: Duration) -> Event {
        Event(.phoneLinkIntervalUnsupported, Milliseconds(ms))
    }

    public static func phoneGattFailed(step: String, error: String) -> Event {
        Event(.phoneGattFailed, step, error)
    }

    public static var phoneSubscribed: Event { Event(.phoneSubscribed) }

    public static func phoneGattReady(mtu: Int) -> Event {
        Event(.phoneGattReady, mtu)
    }

    public static func phoneCacheStale(error: String) -> Event {
        Event(.phoneCacheStale, error)
    }

    public static func phoneServicesChanged(invalidated: Int) -> Event {
        Event(.phoneServicesChanged, invalidated)
    }

    public static func phoneServiceChangedInvalid(value: String) -> Event {
        Event(.phoneServiceChangedInvalid, value)
    }

    public static func phonePresentFailed(error: String) -> Event {
        Event(.phonePresentFailed, error)
    }

    public static func phoneLockStatus(lockState: UInt8, doorState: UInt8) -> Event {
        Event(.phoneLockStatus, lockState, doorState)
    }

    public static func phoneReplyUnreadable(kind: String, session: SessionAtReply) -> Event {
        Event(.phoneReplyUnreadable, kind, session)
    }

    public static var phoneBoltReportTimeout: Event { Event(.phoneBoltReportTimeout) }

    public static func phoneCommandWaitsForLink(op: Operation) -> Event {
        Event(.phoneCommandWaitsForLink, op)
    }

    public static func phoneCommandStarted(op: Operation, challenge: ChallengeAtHand? = nil) -> Event {
        Event(.phoneCommandStarted, op, challenge)
    }

    public static func phoneCommandSent(op: Operation, counter: UInt64) -> Event {
        Event(.phoneCommandSent, op, counter)
    }

    public static func phoneCommandOk(op: Operation, ms: Duration) -> Event {
        Event(.phoneCommandOk, op, Milliseconds(ms))
    }

    public static func phoneCommandRefused(op: Operation, reason: CommandRejection) -> Event {
        Event(.phoneCommandRefused, op, reason)
    }

    public static func phoneCommandTimeout(op: Operation) -> Event {
        Event(.phoneCommandTimeout, op)
    }

    public static var phoneSetupTimeout: Event { Event(.phoneSetupTimeout) }

    public static func phoneHeldChallengeExpired(op: Operation) -> Event {
        Event(.phoneHeldChallengeExpired, op)
    }

    public static func phoneHeldChallengeRefused(op: Operation) -> Event {
        Event(.phoneHeldChallengeRefused, op)
    }

    public static func phoneChallengeAheadFailed(error: String) -> Event {
        Event(.phoneChallengeAheadFailed, error)
    }

    public static func phoneKeyRevoked(lock: String) -> Event {
        Event(.phoneKeyRevoked, lock)
    }

    public static func phoneAskingAgain(op: Operation) -> Event {
        Event(.phoneAskingAgain, op)
    }

    public static func phoneLogFetchTimeout(received: Int) -> Event {
        Event(.phoneLogFetchTimeout, received)
    }

    public static func phoneAway(cycle: UInt64) -> Event {
        Event(.phoneAway, cycle)
    }

    public static func phoneHome(cycle: UInt64, unlocked: Bool) -> Event {
        Event(.phoneHome, cycle, unlocked)
    }

    public static func phoneHomeWithoutArrival(cycle: UInt64, nearbySeconds: Duration) -> Event {
        Event(.phoneHomeWithoutArrival, cycle, WholeSeconds(nearbySeconds))
    }

    public static func phonePresence(from: Presence, to: Presence) -> Event {
        Event(.phonePresence, from, to)
    }

    public static func phoneArrivalIntent(presence: Presence) -> Event {
        Event(.phoneArrivalIntent, presence)
    }

    public static var phoneArrivalIntentExpired: Event { Event(.phoneArrivalIntentExpired) }

    public static func phoneArrivalRequest(cycle: UInt64) -> Event {
        Event(.phoneArrivalRequest, cycle)
    }

    public static func phoneArrivalBusy(cycle: UInt64) -> Event {
        Event(.phoneArrivalBusy, cycle)
    }

    public static func phoneArrivalRefused(cycle: UInt64, reason: String) -> Event {
        Event(.phoneArrivalRefused, cycle, reason)
    }

    public static func phoneArrivalRetry(cycle: UInt64, reason: String) -> Event {
        Event(.phoneArrivalRetry, cycle, reason)
    }

    public static func pairScanning(seconds: Duration) -> Event {
        Event(.pairScanning, WholeSeconds(seconds))
    }

    public static func pairFound(lock: String, name: String, fingerprint: String) -> Event {
        Event(.pairFound, lock, name, fingerprint)
    }

    public static func pairConnecting(lock: String) -> Event {
        Event(.pairConnecting, lock)
    }

    public static func pairLinked(lock: String) -> Event {
        Event(.pairLinked, lock)
    }

    public static func pairRequestSent(name: String) -> Event {
        Event(.pairRequestSent, name)
    }

    public static func pairPaired(key: UInt32, role: KeyRole, code: String, lockFingerprint: String) -> Event {
        Event(.pairPaired, key, role, code, lockFingerprint)
    }

    public static func pairFailed(reason: String) -> Event {
        Event(.pairFailed, reason)
    }

    public static func alert(_ role: AgentRole, device: String, event: String, detail: String) -> Event {
        Event(role == .lock ? .lockAlert : .phoneAlert, device, event, detail)
    }

    public static func transportRefused(
        _ role: AgentRole,
        request: String,
        reason: String,
        attempt: Int,
        retryIn: Duration
    ) -> Event {
        Event(role == .lock ? .lockTransportRefused : .phoneTransportRefused, request, reason, attempt, SwiftDuration(retryIn))
    }

    public static func controlRefused(
        _ role: AgentRole,
        command: String,
        peer: ControlPeer? = nil,
        uid: UInt32? = nil,
        pid: Int32? = nil
    ) -> Event {
        // A peer's uid and pid are printed with it (`unknown` when the kernel did not say), never without it.
        Event(role == .lock ? .lockControlRefused : .phoneControlRefused, command, peer,
              peer.map { _ in OrWord(uid, else: "unknown") }, peer.map { _ in OrWord(pid, else: "unknown") })
    }

    public static func appSuspended(_ role: AgentRole) -> Event {
        Event(role == .lock ? .lockAppSuspended : .phoneAppSuspended)
    }

    public static func appResumed(_ role: AgentRole, delivered: Int, lost: Int) -> Event {
        Event(role == .lock ? .lockAppResumed : .phoneAppResumed, delivered, lost)
    }

    public static func appQueueOverflow(_ role: AgentRole, event: String, capacity: Int, lost: Int) -> Event {
        Event(role == .lock ? .lockAppQueueOverflow : .phoneAppQueueOverflow, event, capacity, lost)
    }

    public static func appWoken(_ role: AgentRole, event: String) -> Event {
        Event(role == .lock ? .lockAppWoken : .phoneAppWoken, event)
    }

    public static func appWakeHandled(_ role: AgentRole, event: String, ms: Duration) -> Event {
        Event(role == .lock ? .lockAppWakeHandled : .phoneAppWakeHandled, event, Milliseconds(ms))
    }

    public static func appWakeOverBudget(_ role: AgentRole, event: String, ms: Duration, budgetMs: Duration) -> Event {
        Event(role == .lock ? .lockAppWakeOverBudget : .phoneAppWakeOverBudget, event, Milliseconds(ms), Milliseconds(budgetMs))
    }
}
