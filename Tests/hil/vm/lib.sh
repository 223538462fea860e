# Helpers for the VM-side scripts (busybox sh). Sourced by /init, /hil/setup and each
# scenario. Every wait here is bounded; nothing waits on a bare `wait`.

export PATH=/usr/local/bin:/usr/bin:/usr/sbin:/bin:/sbin
HIL_RUN=/run/hil                  # written by /hil/setup: addresses, chip names
HIL_WORK=/tmp/hil                 # agents' configuration, state and output

now_ms() { hil-clock now; }
# Whole milliseconds, for shell arithmetic.
now_int() { hil-clock now | cut -d. -f1; }

pass() { echo "PASS $1${2:+ - $2}"; }

# btmgmt, bounded: 10 s (answers take milliseconds), then SIGKILL. SIGTERM would not do:
# btmgmt catches it and exits 0, which a reset step would take for the kernel's yes. This
# cannot end a btmgmt stuck inside the kernel (a mgmt handler in uninterruptible sleep on a
# deadlocked Bluetooth core ignores SIGKILL too). Then the scenario's time limit ends it, and
# wait_gone's report on the agents is the evidence.
btmgmt() {
    local rc=0
    timeout -s KILL 10 btmgmt "$@" || rc=$?   # timeout runs the program, not this function
    [ $rc = 137 ] && echo "NOTE btmgmt $* gave no answer in 10 s" >&2
    return $rc
}
fail() { echo "FAIL $1${2:+ - $2}"; HIL_FAILED=1; }
note() { echo "NOTE $*"; }
figure() { echo "FIGURE $*"; }

# wait_for SECONDS COMMAND...: runs COMMAND every 20 ms until it succeeds; 1 after SECONDS.
wait_for() {
    local limit=$1; shift
    local end=$(( $(now_int) + limit * 1000 ))
    while ! "$@"; do
        [ "$(now_int)" -ge "$end" ] && return 1
        sleep 0.02
    done
    return 0
}

# difference of two millisecond times (from events or now_ms), to 0.1 ms
ms_between() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# --- Timeline events: agents print one JSON object per line on stdout ----------------------

# line count of a file (a mark: later searches look only past it)
mark() { [ -f "$1" ] && wc -l < "$1" || echo 0; }

# event_line FILE MARK NAME [FIELD=VALUE]: the first event NAME after line MARK, whose
# FIELD (if given) has VALUE; empty when there is none yet.
event_line() {
    local file=$1 since=$2 name=$3 match=${4:-}
    [ -f "$file" ] || return 0
    local pattern="\"event\":\"$name\""
    if [ -n "$match" ]; then
        tail -n +$((since + 1)) "$file" | grep "$pattern" | grep -m1 "\"${match%%=*}\":\"${match#*=}\""
    else
        tail -n +$((since + 1)) "$file" | grep -m1 "$pattern"
    fi
}
has_event() { [ -n "$(event_line "$@")" ]; }
# wait_event SECONDS FILE MARK NAME [FIELD=VALUE]
wait_event() { local limit=$1; shift; wait_for "$limit" has_event "$@"; }

# field LINE KEY: a string or number field of one JSON event line
field() {
    echo "$1" | sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p; t; s/.*\"$2\":\([0-9.]*\).*/\1/p" | head -1
}
event_time() { field "$(event_line "$@")" t_ms; }

# --- Kernel-side observations ---------------------------------------------------------------

# The kernel's LE connection parameters list for a controller, with each entry's
# auto_connect policy (debugfs device_list: "ADDR (type T) POLICY"); 3 = HCI_AUTO_CONN_ALWAYS,
# what mgmt Add Device with action 2 (auto-connect) installs.
kernel_pending_connect() { # INDEX ADDRESS
    grep -qi "^$2 (type [0-9]) 3\$" "/sys/kernel/debug/bluetooth/hci$1/device_list"
}

# Connections a controller has, by address (btmgmt con prints "ADDR type LE ...").
kernel_connected() { # INDEX ADDRESS
    btmgmt --index "$1" con 2>/dev/null | grep -qi "^$2 "
}
kernel_not_connected() { ! kernel_connected "$@"; }

# How many mgmt advertising instances a controller holds (btmgmt advinfo: "Instances list
# with N items"). The kernel keeps an instance after the process that added it exits.
kernel_adv_instances() { # INDEX
    btmgmt --index "$1" advinfo 2>/dev/null | sed -n 's/.*Instances list with \([0-9]*\) item.*/\1/p' | head -1
}

# has_link INDEX: the kernel holds a link on hciINDEX (it adds a sysfs device hciN:HANDLE per
# connection); a glob, no process, so a watch sampling it costs the VM little.
has_link() { set -- /sys/class/bluetooth/hci$1:*; [ -e "$1" ]; }

# controllers_reset INDEX...: clears what a scenario may leave behind, so each starts from the
# same controllers: links (power off and on resets the controller), advertising instances
# (rm-adv 0), auto-connect entries (del-device), a user-space connect()'s entry (dropped by a
# connect given up: forget_connect_entries), the connectable and advertising settings. 1 when
# they are not clean within 10 s; CONTROLLER_RESETS says what was found (a NOTE line in
# scenario_begin). docs/TESTING.md, "A run that cannot pass by accident".
controllers_reset() {
    local i dirty= failed=
    CONTROLLER_RESETS=
    for i in "$@"; do
        controller_state $i
        [ -z "$CONTROLLER_DIRT" ] && continue
        dirty="$dirty $i"
        CONTROLLER_RESETS="$CONTROLLER_RESETS hci$i:$CONTROLLER_DIRT"
        case $CONTROLLER_DIRT in *instances*) reset_step $i rm-adv 0 || failed=1 ;; esac
        case $CONTROLLER_DIRT in *entries*) reset_step $i del-device -t 0 00:00:00:00:00:00 || failed=1 ;; esac
        case $CONTROLLER_DIRT in *advertising*) reset_step $i advertising off || failed=1 ;; esac
        case $CONTROLLER_DIRT in *connectable*) reset_step $i connectable off || failed=1 ;; esac
        case $CONTROLLER_DIRT in *link*) reset_step $i power off || failed=1 ;; esac
        case $CONTROLLER_DIRT in *link*|*off*) reset_step $i power on || failed=1 ;; esac
        case $CONTROLLER_DIRT in *entries*) forget_connect_entries $i ;; esac  # powered: it connects
    done
    CONTROLLER_RESETS=${CONTROLLER_RESETS# }
    [ -z "$dirty" ] && return 0
    # The settings and instances are as the kernel answered each step (btmgmt exits 1 on an
    # error status); links and entries, which a power-on ends only as it completes, are
    # looked at again (sysfs and debugfs, no btmgmt). A failed step: all of it again.
    if [ -n "$failed" ]; then
        wait_for 10 controllers_clean $dirty
    else
        wait_for 10 controllers_unlinked $dirty
    fi
}
reset_step() { local i=$1; shift; btmgmt --index $i "$@" > /dev/null 2>&1; }
# forget_connect_entries INDEX: the entries hciINDEX's kernel keeps for a user-space connect
# (debugfs device_list policy 5, "explicit connect": gatttool's in 50, hil-att-bench's in 60).
# mgmt Remove Device only turns a kept entry into one, and a power cycle keeps it; the kernel
# deletes it when a connect still scanning for its peer is given up. So: one connect to each
# such address, killed after 2 s. The peer is silent by then: controllers_reset turned the
# lower index's advertising off first (hci0 before hci1).
forget_connect_entries() {
    local addr
    for addr in $(awk '$NF == 5 { print $1 }' /sys/kernel/debug/bluetooth/hci$1/device_list 2>/dev/null); do
        timeout 2 gatttool -i hci$1 -b $addr --primary > /dev/null 2>&1
    done
}
controllers_clean() { local i; for i in "$@"; do controller_state $i; [ -z "$CONTROLLER_DIRT" ] || return 1; done; }
controllers_unlinked() {
    local i
    for i in "$@"; do
        has_link $i && return 1
        grep -q ' [1-9]$' /sys/kernel/debug/bluetooth/hci$i/device_list 2>/dev/null && return 1
    done
    return 0
}
# controller_state INDEX: sets CONTROLLER_DIRT to what is not clean on it (empty: clean). An
# auto-connect entry shows in debugfs device_list ("ADDR (type T) POLICY", POLICY 0 = none).
controller_state() {
    CONTROLLER_DIRT=
    has_link $1 && CONTROLLER_DIRT="$CONTROLLER_DIRT link"
    grep -q ' [1-9]$' /sys/kernel/debug/bluetooth/hci$1/device_list 2>/dev/null && CONTROLLER_DIRT="$CONTROLLER_DIRT entries"
    local settings
    settings=" $(btmgmt --index $1 info 2>/dev/null | sed -n 's/^[[:space:]]*current settings: //p') "
    case $settings in *" powered "*) ;; *) CONTROLLER_DIRT="$CONTROLLER_DIRT off" ;; esac
    case $settings in *" connectable "*) CONTROLLER_DIRT="$CONTROLLER_DIRT connectable" ;; esac
    case $settings in *" advertising "*) CONTROLLER_DIRT="$CONTROLLER_DIRT advertising" ;; esac
    [ "$(kernel_adv_instances $1)" = 0 ] || CONTROLLER_DIRT="$CONTROLLER_DIRT instances"
    CONTROLLER_DIRT=${CONTROLLER_DIRT# }
}

# Drives a gpio-sim input line from the outside, as a switch with a pull resistor would.
sim_pull() { echo "pull-$2" > "$(cat $HIL_RUN/sim_dir)/sim_gpio$1/pull"; }

# The stock libgpiod tools, whichever libgpiod the VM got (/hil/libgpiod: "1.6 ..." or
# "2 ...", host/libgpiod.sh). 1.6's gpioset needs --mode=signal to hold a line; 2.x's tools
# take -c CHIP, gpioset holds until killed, and gpioget prints "1"=active unless --numeric.
gpio_api() { cut -d' ' -f1 /hil/libgpiod; }
gpio_hold() { # CHIP OFFSET VALUE: holds the output until killed (run it in the background)
    if [ "$(gpio_api)" = 2 ]; then exec gpioset -c "$1" "$2=$3"; else exec gpioset --mode=signal "$1" "$2=$3"; fi
}
gpio_get() { # CHIP OFFSET: prints 0 or 1
    if [ "$(gpio_api)" = 2 ]; then gpioget --numeric -c "$1" "$2"; else gpioget "$1" "$2"; fi
}

# Dumps the tail of each log file given, so a failure explains itself on the console.
show_logs() {
    local f
    for f in "$@"; do
        [ -f "$f" ] || continue
        echo "---- tail of $f"
        tail -n 25 "$f"
    done
}

# --- HCI traces -----------------------------------------------------------------------------

# hci_scan_parameters SNOOP INDEX: the interval and window of every LE Set Scan Parameters
# (or LE Set Extended Scan Parameters, one per PHY entry) a host sent to controller INDEX, in
# order, one "0xIIII 0xWWWW" line each (0.625 ms units), from a `btmon -w` snoop file. These
# are the kernel's own commands to its controller: a passive auto-connect scan starts with one.
hci_scan_parameters() { # SNOOP INDEX
    btmon -C 200 -r "$1" 2>/dev/null | awk -v want="[hci$2]" '
        /^[<>@] / { cmd = (index($0, "< HCI Command: LE Set Scan Parameters") == 1 ||
                           index($0, "< HCI Command: LE Set Extended Scan Parameters") == 1) && index($0, want) > 0
                    interval = ""; next }
        cmd && /Interval: .*\(0x[0-9a-f]*\)/ { interval = $0; sub(/.*\(/, "", interval); sub(/\).*/, "", interval) }
        cmd && /Window: .*\(0x[0-9a-f]*\)/ && interval != "" { w = $0; sub(/.*\(/, "", w); sub(/\).*/, "", w)
                                                               print interval, w; interval = "" }'
}

# hci_scan_filter_policies SNOOP INDEX: the Scanning_Filter_Policy of every LE Set (Extended)
# Scan Parameters the host sent to controller INDEX, in order, one hex octet a line: 0x00
# accepts every advertiser, 0x01 only those on the controller's filter accept list.
hci_scan_filter_policies() { # SNOOP INDEX
    btmon -C 200 -r "$1" 2>/dev/null | awk -v want="[hci$2]" '
        /^[<>@] / { cmd = (index($0, "< HCI Command: LE Set Scan Parameters") == 1 ||
                           index($0, "< HCI Command: LE Set Extended Scan Parameters") == 1) && index($0, want) > 0; next }
        cmd && /Filter policy: .*\(0x[0-9a-f]*\)/ { p = $0; sub(/.*\(/, "", p); sub(/\).*/, "", p); print p }'
}

# hci_adv_reports_from SNOOP INDEX ADDRESS: how many LE Meta events carrying an advertising
# report (legacy or extended) of ADDRESS controller INDEX delivered to its host.
hci_adv_reports_from() { # SNOOP INDEX ADDRESS
    btmon -C 200 -r "$1" 2>/dev/null | awk -v want="[hci$2]" -v addr="$(echo "$3" | tr a-f A-F)" '
        /^[<>@] / { meta = index($0, "> HCI Event: LE Meta Event") == 1 && index($0, want) > 0; report = 0; next }
        meta && /Advertising Report/ { report = 1 }
        meta && report && index(toupper($0), "ADDRESS: " addr) > 0 { n++; meta = 0 }
        END { print n + 0 }'
}
