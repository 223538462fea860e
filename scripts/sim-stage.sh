# Sourced by scripts/measure-idle and scripts/update-order-file: the air, a lock agent and a
# phone agent on the simulated radio and a file-backed GPIO chip (FileGPIOChip's layout),
# in the scratch directory $dir, with the phone's key added on the lock.
#
#   stage_prepare BINARY            chip, configurations, key
#   stage_start_air BINARY          the air, waited for
#   stage_exercise BINARY           an unlock and a lock from the phone, each answered
#   stage_wait_for FILE PATTERN S   waits up to S seconds for PATTERN in FILE

stage_prepare() {
  local binary=$1 chip=$dir/gpio/demo-lock line
  mkdir -p "$chip" "$dir/phone-state"
  chmod 700 "$dir/phone-state"
  printf demo-lock > "$chip/label"
  for line in 0:motor_unlock 1:motor_lock 2:door 3:button; do
    mkdir "$chip/line${line%%:*}"
    printf %s "${line#*:}" > "$chip/line${line%%:*}/name"
    printf 0 > "$chip/line${line%%:*}/value"
    printf pull-down > "$chip/line${line%%:*}/pull"
    : > "$chip/line${line%%:*}/consumer"
  done
  cat > "$dir/lock.yaml" <<YAML
name: Stage Door
transport: sim
sim: {air_socket: $dir/air.sock, address: "C0:FF:EE:00:00:01", position: 0}
state_directory: $dir/lock-state
event_format: json
gpio: {simulated_chip_root: $dir/gpio, chip: demo-lock, actuator: motor, motor_run_ms: 300,
       unlock_line: motor_unlock, lock_line: motor_lock, door_line: door, button_line: button}
YAML
  cat > "$dir/phone.yaml" <<YAML
transport: sim
sim: {air_socket: $dir/air.sock, address: "C0:FF:EE:00:00:02", position: 2}
state_directory: $dir/phone-state
event_format: json
lock_address: "C0:FF:EE:00:00:01"
key_id: 1
key_secret_file: $dir/phone-state/key.hex
YAML
  "$binary" keys add --state-dir "$dir/lock-state" --id 1 --name stage-phone \
    --export-secret "$dir/phone-state/key.hex" >/dev/null
}

stage_start_air() {
  "$1" air --socket "$dir/air.sock" > "$dir/air.out" 2>&1 &
  pids+=($!)
  stage_wait_for "$dir/air.out" listening 5
}

stage_exercise() {
  local command
  # The lock starts by locking (the motor runs 300 ms): a command before it ends finds the bolt busy.
  stage_wait_for "$dir/lock.out" '"state":"locked"' 10 || return 1
  for command in unlock lock; do
    "$1" phone-ctl --state-dir "$dir/phone-state" "$command" | grep "^ok $command" > /dev/null \
      || { echo "phone-ctl $command failed" >&2; cat "$dir"/*.out >&2; return 1; }
    # The motor runs 300 ms; the next command would find the bolt busy.
    stage_wait_for "$dir/lock.out" "lockOperation($command by remote" 10
  done
}

stage_wait_for() {
  local file=$1 pattern=$2 seconds=$3 i
  for ((i = 0; i < seconds * 10; i++)); do
    grep -q -- "$pattern" "$file" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "no '$pattern' in $file after $seconds s:" >&2
  cat "$dir"/*.out >&2
  return 1
}
