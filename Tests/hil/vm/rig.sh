# The VM's rig: what the scenarios need to know about the hardware, and how they observe
# the actuator and drive the door from outside the lock agent. A real board has its own
# (Tests/hil/pi/rig.sh, jumper wires instead of gpio-sim's simulated side).

RIG_NAME="qemu VM, btvirt + gpio-sim"
RIG_LOCK_INDEX=0                 # hci0
RIG_PHONE_INDEX=1                # hci1
RIG_CHIP=latchkey-hil            # the gpio-sim bank's label (see /hil/setup)
RIG_LATCH_LINE=latch             # line 0: the actuator output
RIG_DOOR_LINE=door               # line 1: the door sensor input
RIG_BUTTON_LINE=button           # line 2: the inside button input
RIG_GPIO_YAML=""                 # extra gpio: lines for the lock's config (none here)
RIG_NEIGHBOUR_INDEX=2            # hci2: an unrelated advertiser next to the phone (scenario 11)
RIG_CONNECT_FAILS_AT_ONCE=1      # btvirt fails an LE connect that meets paused advertising (scenario 41)

_rig_latch() { echo "$(cat $HIL_RUN/sim_dir)/sim_gpio0/value"; }

# latch_mark: later latch_wait calls look for changes from here on (nothing to do: the
# simulated side of an output is a file that always holds the current level).
latch_mark() { :; }
# latch_is VALUE: the actuator output is at VALUE now
latch_is() { [ "$(cat "$(_rig_latch)")" = "$1" ]; }
# latch_wait VALUE TIMEOUT_MS: prints the CLOCK_MONOTONIC ms at which the output reads
# VALUE; fails after TIMEOUT_MS.
latch_wait() { hil-clock wait "$(_rig_latch)" "$1" "$2"; }
# door_set open|closed: the reed switch, through the pull of the door line's simulated side
door_set() { case $1 in open) sim_pull 1 up ;; closed) sim_pull 1 down ;; esac; }
rig_start() { :; }
rig_cleanup() { :; }
