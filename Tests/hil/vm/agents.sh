# Helpers for the scenarios that run the agents (sourced after lib.sh and the rig): every
# scenario starts from a clean state it sets up itself (scenario_begin: a fresh work
# directory, the controllers reset, the lines at rest, a freshly provisioned key), starts
# and stops its own agents, and ends through scenario_end, which stops whatever it started
# and exits 1 when a check failed. The same file runs on a board (Tests/hil/pi/run).

L=$RIG_LOCK_INDEX P=$RIG_PHONE_INDEX
LOCK_ADDR=$(cat $HIL_RUN/hci$L.addr)
AUTO_RELOCK_S=2
LOCK_PID= PHONE_PID= SCENARIO_BTMON=

# --- a clean start ----------------------------------------------------------------------------

# scenario_begin NAME: the clean start. A scenario that cannot get it exits 1 (the host
# fails a non-zero exit and every check the scenario did not pass).
scenario_begin() {
    SCENARIO=$1
    W=$HIL_WORK/$1
    LOCK_OUT=$W/lock.out LOCK_ERR=$W/lock.err PHONE_OUT=$W/phone.out PHONE_ERR=$W/phone.err
    trap scenario_end EXIT
    local t0; t0=$(now_int)
    rm -rf $W && mkdir -p $W
    # The neighbour (scenario 11) stops advertising: raw HCI, as b2 drives it.
    [ -n "${RIG_NEIGHBOUR_INDEX:-}" ] && hcitool -i hci$RIG_NEIGHBOUR_INDEX cmd 0x08 0x000a 00 > /dev/null 2>&1
    controllers_reset $L $P || setup_error "the controllers are not clean after a reset: $(for i in $L $P; do btmgmt --index $i con; echo "hci$i adv $(kernel_adv_instances $i) devices: $(cat /sys/kernel/debug/bluetooth/hci$i/device_list)"; done)"
    rig_start
    door_set closed
    write_configs
    provision
    # --verbose: an HCI/mgmt trace of this scenario, read back at its end.
    if [ "${HIL_VERBOSE:-}" = 1 ]; then btmon -w $W/btmon.snoop > /dev/null 2>&1 & SCENARIO_BTMON=$!; fi
    note "$SCENARIO: clean start in $(( $(now_int) - t0 )) ms (fresh state; controllers: ${CONTROLLER_RESETS:-clean})"
}
# provision: the lock's state with the phone's key, and the phone's copy of the secret. The
# first scenario provisions with `latchkey keys add` into $HIL_WORK/.provisioned (0.7 s under
# TCG); the others copy that untouched result, a fresh store identical to their own run of it.
provision() {
    local t=$HIL_WORK/.provisioned
    if [ ! -f $t/phone.key ]; then
        rm -rf $t && mkdir -p $t
        # The phone never asks for arrival unlocks: the actuator moves only on explicit commands.
        latchkey keys add --state-dir $t/lock-state --id 1 --name hil-phone --no-arrival-unlock \
            --export-secret $t/phone.key.tmp > $W/keys.out 2>&1 || setup_error "latchkey keys add: $(cat $W/keys.out)"
        mv $t/phone.key.tmp $t/phone.key
    fi
    cp -a $t/lock-state $t/phone.key $W/
}
setup_error() { echo "HIL-SETUP-ERROR $SCENARIO: $*"; exit 1; }

write_configs() {
    cat > $W/lock.yaml <<YAML
# The lock; its latch output is held active while unlocked (actuator: hold).
name: HIL Door
transport: kernel
adapter: hci$L
state_directory: $W/lock-state
event_format: json
gpio:
  chip: $RIG_CHIP
  actuator: hold
  unlock_line: $RIG_LATCH_LINE
  door_line: $RIG_DOOR_LINE
  button_line: $RIG_BUTTON_LINE
$RIG_GPIO_YAML
lock:
  auto_relock_seconds: $AUTO_RELOCK_S
  # Departure locking is the simulated radio's story (latchkey demo); here it would only
  # add line movements nobody asked for.
  departure_grace_seconds: 600
YAML
    cat > $W/phone.yaml <<YAML
# The phone. grace_seconds is long so the owner never counts as away: every
# actuator movement in this suite is an explicit command.
transport: kernel
adapter: hci$P
state_directory: $W/phone-state
event_format: json
lock_address: "$LOCK_ADDR"
key_id: 1
key_secret_file: $W/phone.key
grace_seconds: 600
YAML
}

# --- the agents -------------------------------------------------------------------------------
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }
start_lock() {
    latchkey lock --config $W/lock.yaml --log-level debug >> $LOCK_OUT 2>> $LOCK_ERR &
    LOCK_PID=$!
}
start_phone() {
    latchkey phone --config $W/phone.yaml --log-level debug >> $PHONE_OUT 2>> $PHONE_ERR &
    PHONE_PID=$!
}
# stop PID SIGNAL: signal it and wait (bounded) until it is gone
stop() {
    alive "$1" || return 0
    kill -"$2" "$1"
    wait_gone "$1" "$2"
}
wait_gone() { # PID SIGNAL-it-was-sent
    alive "$1" || return 0
    if ! wait_for 10 sh -c "! kill -0 $1 2>/dev/null"; then
        # A process that ignores its signal is a finding: where each of its threads waits is
        # the evidence (a futex: a deadlock of its own; a kernel function: a stuck kernel),
        # and it must not stop the scenario's end, so no bare `wait` on it.
        note "process $1 did not exit on SIG$2 in 10 s"
        stuck_report "$1"
        kill -KILL "$1" 2>/dev/null
        if ! wait_for 5 sh -c "! kill -0 $1 2>/dev/null"; then
            note "process $1 did not exit on SIGKILL in 5 s: it is stuck in the kernel; the blocked tasks follow"
            # From the dump's first line: the deadlocked pair comes first.
            echo w 2>/dev/null > /proc/sysrq-trigger && dmesg | sed -n '/Show Blocked State/,$p' | tail -n 150
            return 0
        fi
    fi
    wait "$1" 2>/dev/null
    return 0
}
# stuck_report PID: its state and, per thread, the system call it is in and the kernel's stack.
stuck_report() {
    local t
    echo "---- process $1: $(tr '\0' ' ' < /proc/$1/cmdline 2>/dev/null); $(grep -E '^State' /proc/$1/status 2>/dev/null)"
    for t in /proc/$1/task/*; do
        echo "thread ${t##*/} $(cat $t/comm 2>/dev/null): $(grep -E '^State' $t/status 2>/dev/null | tr -s ' \t' ' '); wchan $(cat $t/wchan 2>/dev/null); syscall $(cut -d' ' -f1-3 $t/syscall 2>/dev/null)"
        sed 's/^/    /' $t/stack 2>/dev/null | head -n 12
    done
}
phone_ctl() { timeout 30 latchkey phone-ctl --state-dir $W/phone-state "$@" 2>&1; }
# The phone agent's voluntary context switches, all threads: how often it went to sleep.
phone_sleeps() {
    cat /proc/$PHONE_PID/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/ { n += $2 } END { print n + 0 }'
}

# A failed check says which agent was down.
failed() {
    fail "$@"
    alive "$LOCK_PID" || note "the lock agent is not running"
    alive "$PHONE_PID" || note "the phone agent is not running"
}

# Waits for an agent's event, ending early when that agent has exited.
lock_event()  { local s=$1; shift; wait_for "$s" lock_event_or_dead "$@"  && has_event $LOCK_OUT "$@"; }
phone_event() { local s=$1; shift; wait_for "$s" phone_event_or_dead "$@" && has_event $PHONE_OUT "$@"; }
lock_event_or_dead()  { has_event $LOCK_OUT "$@"  || ! alive "$LOCK_PID"; }
phone_event_or_dead() { has_event $PHONE_OUT "$@" || ! alive "$PHONE_PID"; }

# start_phone_alone: the phone with no lock running; its connect must sit in the kernel (mgmt
# Add Device, auto-connect). Sets AGENTS_WHY and returns 1 when it does not.
start_phone_alone() {
    local m; m=$(mark $PHONE_OUT)
    start_phone
    phone_event 30 $m phone.connect_pending || { AGENTS_WHY="no phone.connect_pending"; return 1; }
    wait_for 5 kernel_pending_connect $P $LOCK_ADDR \
        || { AGENTS_WHY="the kernel holds no auto-connect entry for $LOCK_ADDR: $(cat /sys/kernel/debug/bluetooth/hci$P/device_list)"; return 1; }
}
# start_linked_agents: both agents started together (their start-ups overlap), the lock
# advertising and the phone linked with its GATT set up (discovery, notifications on). Sets
# AGENTS_WHY and returns 1 when they do not get there.
start_linked_agents() {
    local ml mp t0; ml=$(mark $LOCK_OUT); mp=$(mark $PHONE_OUT); t0=$(now_int)
    start_lock
    start_phone
    lock_event 30 $ml lock.advertising || { AGENTS_WHY="no lock.advertising"; return 1; }
    phone_event 20 $mp phone.gatt_ready \
        || { AGENTS_WHY="no phone.gatt_ready: $(event_line $PHONE_OUT $mp phone.gatt_failed)"; return 1; }
    AGENTS_READY_LINE=$(event_line $PHONE_OUT $mp phone.gatt_ready)
    note "$SCENARIO: agents started and linked in $(( $(now_int) - t0 )) ms"
}

# A door event that is not "closed" (open or forcedOpen, depending on the bolt).
door_not_closed() {
    tail -n +$(($1 + 1)) $LOCK_OUT | grep '"event":"lock.event"' | grep '"door":"' | grep -vq '"door":"closed"'
}

# last_linked_before FILE MARK MS: the time of the last phone.linked after MARK at or before MS
# (the link that became ready; an earlier one may have gone nowhere)
last_linked_before() {
    tail -n +$(($2 + 1)) "$1" | grep '"event":"phone.linked"' \
        | sed -n 's/.*"t_ms":\([0-9.]*\).*/\1/p' | awk -v limit="$3" '$1 <= limit { t = $1 } END { print t }'
}

# A forgotten link: hci$P holds a link that hci$L's kernel does not (it deleted it under a new
# link, or its host is down while its controller still advertises: docs/TESTING.md). On a radio
# the supervision timeout ends it; btvirt has none, so only the phone giving up on it does: its
# first command's 5 s timeout (a returning phone with a valid cache sends `present` at once),
# or its GATT setup timeout (10 s) when it had to ask the lock first. forgotten_watch_start samples every 100 ms in the background and keeps the
# longest such stretch, in ms, in $W/forgotten; forgotten_watch_stop ends it.
forgotten_watch_start() {
    echo 0 > $W/forgotten
    ( since= longest=0
      # $$ is the scenario's shell: a scenario killed at its time limit takes the watch along.
      while kill -0 $$ 2>/dev/null; do
          if has_link $P && ! has_link $L; then
              now=$(now_int); [ -n "$since" ] || since=$now
              [ $((now - since)) -gt $longest ] && { longest=$((now - since)); echo $longest > $W/forgotten; }
          else
              since=
          fi
          sleep 0.1
      done ) &
    FORGOTTEN_WATCH=$!
}
forgotten_watch_stop() { [ -n "${FORGOTTEN_WATCH:-}" ] && kill $FORGOTTEN_WATCH 2>/dev/null; FORGOTTEN_WATCH=; }

# recovery CHECK MS LOST MARK: the figure the host judges against CHECK's bounds
# (Tests/hil/expected-checks, host/judge.sh), with the evidence for the slow path: how many
# link timeouts the phone ran since MARK (phone.setup_timeout, phone.command_timeout: it gave
# up on a link nobody answered) and the longest forgotten link seen.
recovery() {
    echo "HIL-RECOVERY $1 $2 link_lost=$3 link_timeouts=$(tail -n +$(($4 + 1)) $PHONE_OUT | grep -cE '"event":"phone\.(setup|command)_timeout"') forgotten_ms=$(cat $W/forgotten 2>/dev/null || echo 0)"
}

# --- a central with the stock tools (BlueZ's gatttool) ---------------------------------------

LOCK_SERVICE=4c4b0001-0c1d-4e5a-9b3f-7a6c61746368
LOCK_STATE=4c4b0002-0c1d-4e5a-9b3f-7a6c61746368
LOCK_CONTROL=4c4b0003-0c1d-4e5a-9b3f-7a6c61746368
# gatt INDEX ARGS...: gatttool on hciINDEX against the lock, a fresh connection, bounded
gatt_on() { local i=$1; shift; timeout 20 gatttool -i hci$i -b $LOCK_ADDR -t public "$@" 2>&1; }
# lock_handles INDEX: discovers, from hciINDEX, the lock state's value handle and its CCCD (the
# 0x2902 descriptor between the value and the next characteristic declaration) and the
# control characteristic's value handle: STATE_VALUE, STATE_CCCD, CONTROL_VALUE (empty when
# not found; what gatttool said is in $W/chars.out and $W/desc.out).
lock_handles() {
    local next_decl end
    STATE_VALUE= STATE_CCCD= CONTROL_VALUE=
    gatt_on $1 --characteristics > $W/chars.out
    value_of() { grep -i "uuid = $1" $W/chars.out | sed -n 's/.*char value handle = \(0x[0-9a-f]*\).*/\1/p' | head -1; }
    STATE_VALUE=$(value_of $LOCK_STATE)
    CONTROL_VALUE=$(value_of $LOCK_CONTROL)
    [ -n "$STATE_VALUE" ] || return 0
    next_decl=$(sed -n 's/^handle = \(0x[0-9a-f]*\), char properties.*/\1/p' $W/chars.out \
        | while read h; do [ $((h)) -gt $((STATE_VALUE)) ] && { echo $h; break; }; done)
    end=$(printf '0x%04x' $(( ${next_decl:-0x10000} - 1 )))
    gatt_on $1 --char-desc -s $(printf '0x%04x' $((STATE_VALUE + 1))) -e $end > $W/desc.out
    STATE_CCCD=$(grep -i 'uuid = 00002902-' $W/desc.out | sed -n 's/^handle = \(0x[0-9a-f]*\),.*/\1/p' | head -1)
}
# att_errors SNOOP: the ATT Error Responses in a btmon trace, one "Error: ... (0xNN)" line each
# (each appears twice: sent by one controller's host, received by the other's)
att_errors() {
    btmon -r "$1" 2>/dev/null | grep -A4 'ATT: Error Response' | grep -o 'Error: .*(0x[0-9a-fA-F]*)'
}

# --- the end ----------------------------------------------------------------------------------
# scenario_end (the EXIT trap): stops the agents, shows their output when a check failed (or
# everything with --verbose), and exits 1 when a check failed, or with the scenario's own
# non-zero status.
scenario_end() {
    local rc=$?
    trap - EXIT
    forgotten_watch_stop
    # Both told at once, then each waited for.
    local t0; t0=$(now_int)
    alive "$PHONE_PID" && kill -TERM $PHONE_PID
    alive "$LOCK_PID" && kill -TERM $LOCK_PID
    wait_gone "$PHONE_PID" TERM
    wait_gone "$LOCK_PID" TERM
    note "$SCENARIO: agents stopped in $(( $(now_int) - t0 )) ms"
    rig_cleanup
    # The scenario's own undoing (a filesystem it mounted), once its agents are gone.
    [ -n "${SCENARIO_CLEANUP:-}" ] && eval "$SCENARIO_CLEANUP"
    [ -n "$SCENARIO_BTMON" ] && kill $SCENARIO_BTMON 2>/dev/null && sleep 0.5
    if [ "${HIL_VERBOSE:-}" = 1 ]; then
        for f in $LOCK_OUT $PHONE_OUT $LOCK_ERR $PHONE_ERR; do [ -f $f ] && { echo "---- $f"; cat $f; }; done
        echo "---- btmon (mgmt commands, advertising, scanning, connections)"
        btmon -C 200 -t -r $W/btmon.snoop 2>/dev/null | grep -E '^[@<>] ' \
            | grep -E 'Add Device|Remove Device|Advertising|Scan Enable|Create Connection|Connection Complete|Disconnect|Device Connected|Device Disconnected|Set Powered' \
            | sed 's/   */ /g' | cut -c1-150
    elif [ -n "${HIL_FAILED:-}" ] || [ $rc != 0 ]; then
        show_logs $LOCK_OUT $LOCK_ERR $PHONE_OUT $PHONE_ERR
        echo "---- dmesg tail"; dmesg | tail -n 12
    fi
    if [ -n "${HIL_FAILED:-}" ] || [ $rc != 0 ]; then
        echo "---- the controllers as the kernel sees them now"
        for i in $L $P; do btmgmt --index $i info | grep -E 'addr|current settings'; btmgmt --index $i con; done
        btmgmt --index $L advinfo 2>&1 | head -n 5
        echo "hci$P device_list: $(cat /sys/kernel/debug/bluetooth/hci$P/device_list)"
    fi
    [ $rc = 0 ] && [ -n "${HIL_FAILED:-}" ] && rc=1
    exit $rc
}
