# Boots the VM under qemu (TCG: no hardware virtualisation on CI machines) and records its
# serial console (judged by judge.sh).

# The VM's own watchdog powers it off after this many seconds; the host gives qemu a
# minute more (boot and shutdown) before it kills it.
HIL_VM_TIMEOUT=${HIL_VM_TIMEOUT:-600}

# The machine (host/arm64.sh sets its own), its serial console and its extra kernel arguments.
# no_timer_check: the kernel's check that the IO-APIC timer ticks runs in a fixed window of
# (emulated) time, which a TCG vCPU starved by a loaded host can miss: "Kernel panic - not
# syncing: IO-APIC + timer doesn't work!" 0.05 s into a boot at load ~20 (seen once,
# docs/LINUX-BLE.md "What the HIL suite found"). Virtual machines' kernels commonly skip it.
# thread=single: multi-threaded TCG let a vCPU run a half-patched instruction (the
# kernel's int3-based text patching) and the guest died with "Oops: int3" in
# sched_clock_tick at boot, 1 boot in 4; one host thread for both vCPUs cannot race.
QEMU=(qemu-system-x86_64 -accel tcg,thread=single) VM_CONSOLE=ttyS0 VM_APPEND="no_timer_check "

boot_vm() {
    CONSOLE_LOG=${CONSOLE_LOG:-$CACHE/console.log}
    local scenarios
    scenarios=$(echo $HIL_SCENARIOS | tr ' ' ,)
    local append="console=$VM_CONSOLE panic=-1 quiet ${VM_APPEND:-}${HIL_APPEND:-}hil.scenarios=$scenarios hil.timeout=$HIL_VM_TIMEOUT hil.verbose=${HIL_VERBOSE:-0}"
    say "qemu: kernel $KVER, scenarios: ${scenarios:-all}; console log: $CONSOLE_LOG"
    # -nic none: the VM needs no network. panic=-1 and -no-reboot: a kernel panic ends qemu.
    # Only the suite's own lines are echoed live; the whole console goes to the log, without
    # the firmware's terminal escapes (they would glue themselves to the VM's first line).
    set +e
    timeout --kill-after=10 $((HIL_VM_TIMEOUT + 60)) \
        "${QEMU[@]}" -m "${HIL_VM_MEMORY:-1536}" -smp 2 -nographic -no-reboot -nic none \
            -kernel "$KDIR/image/boot/vmlinuz-$KVER" -initrd "$INITRD" -append "$append" \
            < /dev/null 2>&1 \
        | sed -u 's/\r$//; s/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g' | tee "$CONSOLE_LOG" | grep --line-buffered -E '^(PASS|FAIL|FIGURE|NOTE|HIL-)'
    QEMU_STATUS=${PIPESTATUS[0]}
    set -e
}
