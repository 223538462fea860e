# Assembles the systemd image's initramfs (Tests/hil/run --image systemd): the Debian 12
# userspace mmdebstrap built (rootfs.sh), systemd as PID 1 (/init), the same kernel modules
# and gpio-sim as the busybox image (install_modules), hil-clock, the VM-side scripts, and
# Latchkey as a user has it before installing — a source tree with the release build in
# .build/release, or with the Debian package built from it (--deb) — which the VM installs with
# scripts/install (Tests/hil/systemd/run-in-vm).
# Sets INITRD.

make_systemd_initramfs() {
    local root=$CACHE/systemd-root
    INITRD=$CACHE/initrd-systemd.cpio
    rm -rf "$root" && mkdir -p "$root"
    tar -xf "$ROOTFS_TAR" -C "$root"
    [[ -x $root/usr/lib/systemd/systemd ]] || die "the rootfs has no /usr/lib/systemd/systemd"
    # The kernel runs /init from an initramfs; systemd treats a root without
    # /etc/initrd-release as the real one.
    ln -s /usr/lib/systemd/systemd "$root/init"

    install_modules "$root"
    # udev's hardware database (22 MB) names vendors and models; nothing in the suite asks.
    rm -f "$root/usr/lib/udev/hwdb.bin" "$root/etc/udev/hwdb.bin"
    gcc -O2 -static -o "$root/usr/bin/hil-clock" "$HIL_DIR/vm/tools/hil-clock.c"

    # A scripted boot: root without a password, no getty on the console (the suite's lines
    # would interleave with a login prompt), a fixed hostname.
    sed -i 's/^root:[^:]*:/root::/' "$root/etc/shadow"
    echo hil > "$root/etc/hostname"
    # No maintenance timers (apt, dpkg backup, e2scrub, fstrim): a test VM lives minutes, and
    # one firing mid-scenario would take the CPU the agents' timings are measured on.
    local unit
    for unit in serial-getty@.service getty@.service getty.target \
                apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer fstrim.timer; do
        ln -sf /dev/null "$root/etc/systemd/system/$unit"
    done

    # Latchkey as the user has it: the source tree's install inputs and the release build.
    local src=$root/usr/src/latchkey
    mkdir -p "$src/.build/release" "$src/scripts"
    cp -r "$REPO/systemd" "$REPO/board" "$src/"
    cp "$REPO/scripts/install" "$src/scripts/"
    # HIL_LATCHKEY_DEB (--deb): the Debian package (scripts/build-deb), which the VM installs
    # instead of the build (run-in-vm); the build is then left out (19 MB less to unpack).
    if [[ -n ${HIL_LATCHKEY_DEB:-} ]]; then
        cp "$HIL_LATCHKEY_DEB" "$src/"
    else
        cp "$LATCHKEY_BIN" "$src/.build/release/latchkey"
        # Stripped, as the busybox image's: the same program, 40% less for the kernel to unpack.
        strip "$src/.build/release/latchkey"
    fi

    # The VM side: the rig (shared with the busybox image) and the systemd scenarios.
    mkdir -p "$root/hil"
    cp -r "$HIL_DIR/vm/lib.sh" "$HIL_DIR/vm/rig.sh" "$HIL_DIR/vm/setup" "$HIL_DIR/vm/run-scenarios" \
        "$HIL_DIR/systemd/units.sh" "$HIL_DIR/systemd/run-in-vm" "$HIL_DIR/systemd/alert-hook" "$root/hil/"
    cp -r "$HIL_DIR/systemd/scenarios" "$root/hil/scenarios"
    chmod +x "$root/hil/setup" "$root/hil/run-scenarios" "$root/hil/run-in-vm" "$root/hil/alert-hook" "$root"/hil/scenarios/*
    # The run: hil.target is the default target; hil-run.service, after multi-user.target,
    # installs Latchkey, brings up the rig and runs the scenarios (Tests/hil/systemd/run-in-vm).
    cp "$HIL_DIR/systemd/hil.target" "$HIL_DIR/systemd/hil-run.service" "$root/etc/systemd/system/"
    ln -sf hil.target "$root/etc/systemd/system/default.target"

    pack_cpio "$root" "$INITRD"
    say "systemd initramfs $(du -m "$INITRD" | cut -f1) MB"
}
