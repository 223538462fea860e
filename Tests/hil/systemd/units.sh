# Helpers for the systemd image's scenarios (sourced after lib.sh and the rig): the agents run
# only as the installed units, started and stopped with systemctl. Each scenario starts clean
# (unit_scenario_begin): units stopped, their failed state and start counters reset, no test
# drop-in, empty state directories, the controllers reset, fresh configuration in
# /etc/latchkey and a freshly provisioned key — as README.md's steps 2-5 leave a machine.
#
# The one change to the units the suite makes everywhere is where standard output goes: the
# agents' event timeline (event_format: json, one object a line) is appended to a file the
# scenario reads (a drop-in, StandardOutput=append:), so the timeline helpers of lib.sh work
# unchanged; standard error — the diagnostics, the configuration error — stays in the journal.

L=$RIG_LOCK_INDEX P=$RIG_PHONE_INDEX
LOCK_ADDR=$(cat $HIL_RUN/hci$L.addr)
LOCK_UNIT=latchkey-lock.service PHONE_UNIT=latchkey-phone.service
DROPINS=/run/systemd/system
AUTO_RELOCK_S=${AUTO_RELOCK_S:-2}

setup_error() { echo "HIL-SETUP-ERROR $SCENARIO: $*"; exit 1; }

# units_reset: both agents stopped, nothing failed, no drop-in of a previous scenario.
units_reset() {
    systemctl stop $LOCK_UNIT $PHONE_UNIT 'latchkey-gave-up@*.service' 2> /dev/null
    rm -rf $DROPINS/latchkey-*.service.d $DROPINS/latchkey-gave-up@.service.d
    systemctl daemon-reload
    systemctl reset-failed 2> /dev/null
}

# unit_scenario_begin NAME: the clean start (see above). W is the scenario's work directory.
unit_scenario_begin() {
    SCENARIO=$1
    W=$HIL_WORK/$1
    LOCK_OUT=$W/lock.out PHONE_OUT=$W/phone.out
    trap unit_scenario_end EXIT
    local t0; t0=$(now_int)
    rm -rf $W && mkdir -p $W
    units_reset
    # The Debian package makes no state directory (the units' StateDirectory= does, at their
    # first start); scripts/install does (step 5). Made here as both make them, for `keys add`.
    install -d -m 0700 -o latchkey -g latchkey /var/lib/latchkey/lock /var/lib/latchkey/phone
    find /var/lib/latchkey/lock /var/lib/latchkey/phone -mindepth 1 -delete
    [ -n "${RIG_NEIGHBOUR_INDEX:-}" ] && hcitool -i hci$RIG_NEIGHBOUR_INDEX cmd 0x08 0x000a 00 > /dev/null 2>&1
    controllers_reset $L $P || setup_error "the controllers are not clean after a reset"
    door_set closed
    write_unit_configs
    provision_unit_key
    # Standard output (the event timeline) to files the scenario reads; see above.
    timeline_dropin $LOCK_UNIT $LOCK_OUT
    timeline_dropin $PHONE_UNIT $PHONE_OUT
    systemctl daemon-reload
    journal_mark
    note "$SCENARIO: clean start in $(( $(now_int) - t0 )) ms"
}

# journal_mark: journal_since reads only what comes after this (the journal's last entry now).
journal_mark() { JOURNAL_CURSOR=$(journalctl -n 1 --show-cursor -q -o cat | sed -n 's/^-- cursor: //p'); }

# dropin UNIT NAME TEXT: a runtime drop-in (gone at the next clean start).
dropin() {
    mkdir -p $DROPINS/$1.d
    printf '%s\n' "$3" > $DROPINS/$1.d/$2.conf
}
timeline_dropin() {
    : > "$2"
    # StandardError= would inherit the file: it stays the journal, as installed.
    dropin $1 hil-timeline "[Service]
StandardOutput=append:$2
StandardError=journal"
}

write_unit_configs() {
    cat > /etc/latchkey/lock.yaml <<YAML
name: HIL Door
transport: kernel
adapter: hci$L
event_format: json
gpio:
  chip: $RIG_CHIP
  actuator: hold
  unlock_line: $RIG_LATCH_LINE
  door_line: $RIG_DOOR_LINE
  button_line: $RIG_BUTTON_LINE
lock:
  auto_relock_seconds: $AUTO_RELOCK_S
  departure_grace_seconds: 600
execution:
  alert_hook: /hil/alert-hook
YAML
    cat > /etc/latchkey/phone.yaml <<YAML
transport: kernel
adapter: hci$P
event_format: json
lock_address: "$LOCK_ADDR"
key_id: 1
key_secret_file: /etc/latchkey/hil.key
grace_seconds: 600
execution:
  alert_hook: /hil/alert-hook
YAML
}

# docs/PAIRING.md: the key added on the lock's side as the service user, its secret given
# to the phone's configuration (0600, owned by latchkey).
provision_unit_key() {
    runuser -u latchkey -- latchkey keys add --state-dir /var/lib/latchkey/lock --id 1 --name hil-phone \
        --no-arrival-unlock --export-secret /var/lib/latchkey/lock/hil.key > $W/keys.out 2>&1 \
        || setup_error "latchkey keys add: $(cat $W/keys.out)"
    install -m 0600 -o latchkey -g latchkey /var/lib/latchkey/lock/hil.key /etc/latchkey/hil.key
    rm /var/lib/latchkey/lock/hil.key
}

# --- the units --------------------------------------------------------------------------------
main_pid() { systemctl show -p MainPID --value "$1"; }
unit_state() { systemctl show -p ActiveState --value "$1"; }
unit_prop() { systemctl show -p "$2" --value "$1"; }
unit_active() { [ "$(unit_state "$1")" = active ]; }

# journal_since UNIT: the unit's journal since the clean start, message text only
journal_since() { journalctl -q -o cat --after-cursor="$JOURNAL_CURSOR" -u "$1"; }
# journal_lines_since UNIT: the same with priority, one "PRIORITY MESSAGE" a line
journal_priority_since() {
    # One entry's fields, in any order, end at an empty line.
    journalctl -q -o export --after-cursor="$JOURNAL_CURSOR" -u "$1" \
        | awk '/^PRIORITY=/ { p = substr($0, 10) } /^MESSAGE=/ { m = substr($0, 9) }
               /^$/ { if (m != "") print p, m; p = ""; m = "" } END { if (m != "") print p, m }'
}

# start_units_linked: both agents started with systemctl (each returns once the agent sent
# READY=1), the phone linked with its GATT ready. Sets AGENTS_WHY and returns 1 otherwise.
start_units_linked() {
    local ml mp t0; ml=$(mark $LOCK_OUT); mp=$(mark $PHONE_OUT); t0=$(now_int)
    timeout 90 systemctl start $LOCK_UNIT || { AGENTS_WHY="systemctl start $LOCK_UNIT failed: $(journal_since $LOCK_UNIT | tail -5)"; return 1; }
    timeout 60 systemctl start $PHONE_UNIT || { AGENTS_WHY="systemctl start $PHONE_UNIT failed: $(journal_since $PHONE_UNIT | tail -5)"; return 1; }
    wait_event 30 $PHONE_OUT $mp phone.gatt_ready \
        || { AGENTS_WHY="no phone.gatt_ready: $(event_line $PHONE_OUT $mp phone.gatt_failed)"; return 1; }
    note "$SCENARIO: units started and linked in $(( $(now_int) - t0 )) ms"
}
phone_ctl() { timeout 30 latchkey phone-ctl --state-dir /var/lib/latchkey/phone "$@" 2>&1; }

unit_failed() {
    fail "$@"
    local u
    for u in $LOCK_UNIT $PHONE_UNIT; do note "$u: $(unit_state $u) ($(unit_prop $u SubState), result $(unit_prop $u Result), restarts $(unit_prop $u NRestarts))"; done
}

# unit_scenario_end (the EXIT trap): stops the units; on a failure shows their journals and
# timelines; exits 1 when a check failed.
unit_scenario_end() {
    local rc=$?
    trap - EXIT
    local t0; t0=$(now_int)
    systemctl stop $PHONE_UNIT $LOCK_UNIT
    note "$SCENARIO: units stopped in $(( $(now_int) - t0 )) ms"
    if [ -n "${HIL_FAILED:-}" ] || [ $rc != 0 ] || [ "${HIL_VERBOSE:-}" = 1 ]; then
        local u
        for u in $LOCK_UNIT $PHONE_UNIT 'latchkey-gave-up@*'; do echo "---- journal of $u"; journal_since "$u" | tail -n 30; done
        show_logs $LOCK_OUT $PHONE_OUT
    fi
    [ $rc = 0 ] && [ -n "${HIL_FAILED:-}" ] && rc=1
    exit $rc
}

# kill_held_down UNIT: the agent's main process SIGKILLed and systemd kept from relaunching it
# (`systemctl stop` inside RestartSec=, while the unit waits to restart): a death the agent
# could not clean up after, with nobody starting it again — the power going, a reboot. Prints
# the unit's state after it ("inactive" when held down).
kill_held_down() {
    local pid; pid=$(main_pid $1)
    systemctl kill --kill-whom=main -s KILL $1
    gone() { ! kill -0 $pid 2> /dev/null; }
    wait_for 10 gone
    systemctl stop $1
    unit_state $1
}

# with_bolt_sensor: the lock's configuration gets a bolt sensor, `bolt_unlocked_line:` on
# gpio-sim's spare line, which nothing drives (pulled down: the bolt never reports retracted).
# An unlock then drives the latch and waits for the bolt: its decision stays open until the
# jam timer (5 s) ends it as a jam.
with_bolt_sensor() {
    sed -i "s/^  button_line: .*/&\n  bolt_unlocked_line: spare/" /etc/latchkey/lock.yaml
    grep -q '^  bolt_unlocked_line: spare$' /etc/latchkey/lock.yaml || setup_error "lock.yaml: no bolt_unlocked_line"
}

# --- links kept in systemd's file descriptor store (docs/RESTORATION.md) ----------------------
PHONE_ADDR=$(cat $HIL_RUN/hci$P.addr)
# store_count UNIT: the descriptors systemd holds in the unit's store now
store_count() { unit_prop "$1" NFileDescriptorStore; }
# btmon_start: an HCI trace of every controller into $W/btmon.snoop (btmon_stop ends it)
btmon_start() { btmon -w $W/btmon.snoop > /dev/null 2>&1 & BTMON_PID=$!; sleep 0.3; }
btmon_stop() { sleep 0.3; kill $BTMON_PID 2> /dev/null; wait $BTMON_PID 2> /dev/null; }
# btmon_disconnects: the HCI Disconnect Complete events in the trace (either controller)
btmon_disconnects() { btmon -r $W/btmon.snoop 2> /dev/null | grep -c 'Disconnect Complete'; }
# linked_both: each controller's kernel holds the link to the other
linked_both() { kernel_connected $L $PHONE_ADDR && kernel_connected $P $LOCK_ADDR; }
# restarted UNIT PID0: systemd started the unit again with another main process
restarted() { _p=$(main_pid $1); [ "$_p" != 0 ] && [ "$_p" != "$2" ] && unit_active $1; }

# survive_kill UNIT NAME: SIGKILL the unit's main process with the phone linked and subscribed,
# then the phone's next sealed command on the same link. Sets T_KILL, T_ACTIVE, T_ANSWERED
# (the lock's lock.command_accepted), SURVIVE_WHY on failure (returns 1), and the counts
# LOST (phone.link_lost), LOCK_LOST (lock.central_disconnected), RELINKED (phone.linked),
# DISCONNECTS (btmon) and STORE0 (descriptors systemd held before the kill). With
# SURVIVE_HEARD=EVENT, waits (10 s) for the phone's EVENT after the restart before the command
# (T_HEARD: when it came, empty if it never did). Leaves the marks SURVIVE_ML / SURVIVE_MP
# (the lock's and the phone's timelines at the kill) and SURVIVE_MC (the phone's at the command).
survive_kill() {
    local unit=$1 name=$2 pid0 ml mp mp0 reply
    wait_event 10 $PHONE_OUT 0 phone.subscribed || { SURVIVE_WHY="the phone never subscribed"; return 1; }
    STORE0=$(store_count $unit)
    btmon_start
    pid0=$(main_pid $unit) ml=$(mark $LOCK_OUT) mp=$(mark $PHONE_OUT)
    T_KILL=$(now_ms)
    systemctl kill --kill-whom=main -s KILL $unit
    wait_for 60 restarted $unit $pid0 || { SURVIVE_WHY="not restarted within 60 s of the SIGKILL"; return 1; }
    T_ACTIVE=$(now_ms)
    linked_both || { SURVIVE_WHY="a controller lost the link across the restart"; return 1; }
    T_HEARD=
    if [ -n "$SURVIVE_HEARD" ] && wait_event 10 $PHONE_OUT $mp $SURVIVE_HEARD; then
        T_HEARD=$(event_time $PHONE_OUT $mp $SURVIVE_HEARD)
    fi
    mp0=$(mark $PHONE_OUT)
    SURVIVE_ML=$ml SURVIVE_MP=$mp SURVIVE_MC=$mp0
    reply=$(phone_ctl unlock)
    T_HIGH=$(latch_wait 1 10000)
    T_ANSWERED=$(event_time $LOCK_OUT $ml lock.command_accepted op=unlock)
    btmon_stop
    LOST=$(tail -n +$((mp + 1)) $PHONE_OUT | grep -c '"event":"phone.link_lost"')
    RELINKED=$(tail -n +$((mp + 1)) $PHONE_OUT | grep -c '"event":"phone.linked"')
    LOCK_LOST=$(tail -n +$((ml + 1)) $LOCK_OUT | grep -c '"event":"lock.central_disconnected"')
    DISCONNECTS=$(btmon_disconnects)
    [ -n "$T_ANSWERED" ] && [ -n "$T_HIGH" ] || { SURVIVE_WHY="the next command did not move the actuator: latch high ${T_HIGH:-never}; phone-ctl: $reply"; return 1; }
}

# command_after_restart OP: `phone-ctl OP` right after an agent's restart, accepted by the lock.
# btvirt can hand the phone a forgotten link then (hci0's kernel logs "ACL packet for unknown
# connection handle 42"; docs/TESTING.md, "Recovery bounds"): the command is not delivered and the
# link ends; the phone must then link again by itself and the command is sent once more. Sets
# REPLY, ACCEPTED (the lock's lock.command_accepted line) and RETRIED (said in PASS lines).
command_after_restart() {
    local mc mr
    mc=$(mark $LOCK_OUT); mr=$(mark $PHONE_OUT)
    REPLY=$(phone_ctl $1)
    ACCEPTED=$(event_line $LOCK_OUT $mc lock.command_accepted op=$1)
    RETRIED=
    if [ -z "$ACCEPTED" ] && wait_event 30 $PHONE_OUT $mr phone.gatt_ready; then
        RETRIED=" (the first command met a forgotten link: $REPLY; re-linked, sent again)"
        mc=$(mark $LOCK_OUT)
        REPLY=$(phone_ctl $1)
        ACCEPTED=$(event_line $LOCK_OUT $mc lock.command_accepted op=$1)
    fi
}
