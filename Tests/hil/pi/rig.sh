# The Raspberry Pi rig (docs/TESTING.md): the same scenarios as the VM, with two jumper wires
# in place of gpio-sim's simulated side and a USB Bluetooth dongle as the phone's controller.
#
#   jumper 1: pin 11 (GPIO17, the lock's latch output) -> pin 13 (GPIO27, probe input)
#   jumper 2: pin 15 (GPIO22, door driver output)      -> pin 16 (GPIO23, the lock's door input)
#
# Line names are the Raspberry Pi device tree's (GPIO17, ...); the chip is found by label:
# pinctrl-bcm2711 (Pi 4), pinctrl-bcm2835 (Pi 3, Zero 2 W), pinctrl-rp1 (Pi 5).

RIG_NAME="Raspberry Pi with jumpers 11-13 and 15-16"
RIG_LOCK_INDEX=${HIL_LOCK_INDEX:-0}      # the on-board controller
RIG_PHONE_INDEX=${HIL_PHONE_INDEX:-1}    # a USB dongle
RIG_CHIP=${HIL_PI_CHIP:-pinctrl-bcm2711}
RIG_LATCH_LINE=GPIO17
RIG_DOOR_LINE=GPIO23
RIG_BUTTON_LINE=GPIO24                   # left unconnected: pulled down, never pressed
RIG_GPIO_YAML="  door_bias: pull-down
  button_bias: pull-down"
RIG_RADIO_NOTE="a real radio: the figures include advertising and connection intervals"

# The libgpiod tools' API: 1 on bookworm (1.6), 2 on trixie (2.x), whose tools take a line
# by its name alone (their -c takes gpiochipN, not a label), hold an output until killed,
# and print a falling edge's %e as 2, not 0.
RIG_GPIO_API=$(gpiodetect --version | sed -n 1p | grep ' v1\.' > /dev/null && echo 1 || echo 2)
_rig_line() { gpiofind "$1" | cut -d' ' -f2; }   # offset of a named line on its chip (1.6)
_rig_edge() { if [ "$RIG_GPIO_API" = 2 ] && [ "$1" = 0 ]; then echo 2; else echo "$1"; fi; }  # %e of an edge to VALUE

# The probe input is watched for the whole run: its edges (type, CLOCK_MONOTONIC stamp)
# go to a file, because while gpiomon holds the line nothing else may read it.
rig_start() {
    if [ "$RIG_GPIO_API" = 2 ]; then
        gpiomon --format='%e %S' GPIO27 > $HIL_WORK/latch.edges 2> $HIL_WORK/gpiomon.err &
    else
        gpiomon --format='%e %s.%n' "$RIG_CHIP" "$(_rig_line GPIO27)" > $HIL_WORK/latch.edges 2> $HIL_WORK/gpiomon.err &
    fi
    echo $! > $HIL_WORK/gpiomon.pid
    echo 0 > $HIL_WORK/latch.mark
}
latch_mark() { wc -l < $HIL_WORK/latch.edges > $HIL_WORK/latch.mark; }
# The level after the last edge; low before any (the latch output starts inactive).
latch_is() { [ "$(tail -n 1 $HIL_WORK/latch.edges | cut -d' ' -f1)" = "$(_rig_edge $1)" ] || { [ ! -s $HIL_WORK/latch.edges ] && [ "$1" = 0 ]; }; }
# latch_wait VALUE TIMEOUT_MS: the time (ms) of the first edge to VALUE after the mark.
latch_wait() {
    local end=$(( $(now_int) + $2 )) since line
    while :; do
        since=$(cat $HIL_WORK/latch.mark)
        line=$(tail -n +$((since + 1)) $HIL_WORK/latch.edges | grep -n -m1 "^$(_rig_edge $1) ")
        if [ -n "$line" ]; then
            echo $((since + ${line%%:*})) > $HIL_WORK/latch.mark
            echo "${line#*:}" | awk '{ split($2, t, "."); printf "%.3f\n", t[1] * 1000 + t[2] / 1e6 }'
            return 0
        fi
        [ "$(now_int)" -ge "$end" ] && return 1
        sleep 0.001
    done
}
# door_set open|closed: drive the door input through jumper 2, holding the driver line.
door_set() {
    [ -f $HIL_WORK/door.pid ] && kill "$(cat $HIL_WORK/door.pid)" 2>/dev/null
    local value; value=$([ "$1" = open ] && echo 1 || echo 0)
    if [ "$RIG_GPIO_API" = 2 ]; then gpioset "GPIO22=$value" &
    else gpioset --mode=signal "$RIG_CHIP" "$(_rig_line GPIO22)=$value" &
    fi
    echo $! > $HIL_WORK/door.pid
}
rig_cleanup() {
    local f
    for f in $HIL_WORK/door.pid $HIL_WORK/gpiomon.pid; do [ -f $f ] && kill "$(cat $f)" 2>/dev/null; done
    return 0
}
