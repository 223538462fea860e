# Assembles the VM's initramfs: busybox, the BlueZ tools (btvirt, btmgmt, btmon, hcitool,
# gatttool, sqlite3, bluetoothd with dbus-daemon and strace for the benchmark), one libgpiod with its own tools (host/libgpiod.sh), latchkey, scenario
# r's LD_PRELOAD shim and every shared library they load, the kernel modules the suite needs
# (with their dependencies),
# the out-of-tree gpio-sim, and the VM-side scripts (Tests/hil/vm). Sets INITRD.

# Where the VM's programs come from. amd64: this host's own (busybox-static, bluez, ...), each
# with the libraries ldd lists. arm64 (host/arm64.sh sets these anew): Debian arm64 packages
# unpacked into the cache.
VM_SOURCE= VM_BUSYBOX=/bin/busybox VM_LIBDIR=/usr/lib/x86_64-linux-gnu VM_CC=gcc VM_STRIP=strip
vm_run() { "$@"; }
vm_program() { command -v "$1"; }
vm_copy() { copy_with_libraries "$@"; }

# Modules the VM loads, in Tests/hil/vm/setup's order. On 6.12 ctr, sha512_generic, drbg,
# ecb and ecc are built in (modules.builtin says so and modprobe accepts them); on 6.1 they
# are modules.
HIL_MODULES=(configfs ctr sha512_generic drbg af_alg algif_hash algif_skcipher ecb cmac
             ecdh_generic ecc rfkill crc16 bluetooth hci_vhci)

# Prints the modules.order path (kernel/.../x.ko) of each module in the closure of the
# given names under their `depends`; built-in modules are skipped.
module_closure() {
    local mdir=$1; shift
    local -A where=() seen=()
    local p n
    while read -r p; do n=${p##*/}; n=${n%.ko}; where[${n//-/_}]=$p; done < "$mdir/modules.order"
    local queue=("$@")
    while ((${#queue[@]})); do
        n=${queue[0]//-/_}; queue=("${queue[@]:1}")
        [[ -n $n && -z ${seen[$n]:-} ]] || continue
        seen[$n]=1
        if [[ -z ${where[$n]:-} ]]; then
            grep -q "/${n}.ko\$\|/${n//_/-}.ko\$" "$mdir/modules.builtin" || die "module $n is neither built in nor in modules.order"
            continue
        fi
        p=${where[$n]}
        echo "$p"
        local file=$mdir/$p; [[ -f $file ]] || file=$file.xz
        local deps; deps=$(modinfo -F depends "$file")
        IFS=, read -r -a more <<< "$deps"
        queue+=("${more[@]}")
    done
}

# install_modules ROOT: the closure of HIL_MODULES, decompressed (busybox modprobe reads plain
# .ko), plus gpio-sim, into ROOT/lib/modules/$KVER; then modules.dep for this small tree.
# Further module names may follow ROOT.
install_modules() {
    local root=$1; shift
    local mdir=$KDIR/image/lib/modules/$KVER rel
    mkdir -p "$root/lib/modules/$KVER/extra"
    cp "$mdir"/modules.{order,builtin,builtin.modinfo} "$root/lib/modules/$KVER/"
    # A kernel without hci_vhci (the arm64 flavours) gets the one built out of tree (gpio-sim.sh).
    local wanted=("${HIL_MODULES[@]}")
    [[ -z ${HCI_VHCI_KO:-} ]] || wanted=("${wanted[@]/hci_vhci/}")
    for rel in $(module_closure "$mdir" "${wanted[@]}" "$@"); do
        mkdir -p "$root/lib/modules/$KVER/$(dirname "$rel")"
        if [[ -f $mdir/$rel.xz ]]; then xz -dc "$mdir/$rel.xz" > "$root/lib/modules/$KVER/$rel"
        else cp "$mdir/$rel" "$root/lib/modules/$KVER/$rel"; fi
    done
    cp "$GPIO_SIM_KO" "$root/lib/modules/$KVER/extra/gpio-sim.ko"
    [[ -z ${HCI_VHCI_KO:-} ]] || cp "$HCI_VHCI_KO" "$root/lib/modules/$KVER/extra/hci_vhci.ko"
    depmod -b "$root" "$KVER"
}

# pack_cpio ROOT OUT: the tree as a newc archive. No cpio on a plain Debian host: busybox has
# one. Uncompressed, because the kernel unpacks it faster under TCG than it inflates a gzip of it.
pack_cpio() { (cd "$1" && find . | busybox cpio -o -H newc 2>/dev/null) > "$2"; }

make_initramfs() {
    local root=$CACHE/initramfs-root
    INITRD=$CACHE/initrd.cpio
    rm -rf "$root"
    mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,etc,hil,lib/modules/"$KVER"/extra}

    # busybox and its applets.
    cp "$VM_BUSYBOX" "$root/bin/busybox"
    local applet
    for applet in $(vm_run "$VM_BUSYBOX" --list-full); do
        [[ -e $root/$applet ]] || ln -s /bin/busybox "$root/$applet"
    done

    # Programs, each with the libraries it loads.
    local prog
    # sqlite3: scenario 23 reads the lock's decision journal from outside the agent.
    # bluetoothd, dbus-daemon, dbus-send, strace: the GATT server benchmark's other row and
    # its system-call counts (scenario 60-bench-gatt-vs-bluez).
    for prog in btvirt btmgmt btmon hcitool gatttool sqlite3 dbus-daemon dbus-send strace; do
        vm_copy "$root" "$(vm_program "$prog")" "/usr/bin/$prog"
    done
    vm_copy "$root" "$VM_SOURCE/usr/libexec/bluetooth/bluetoothd" /usr/libexec/bluetooth/bluetoothd
    vm_copy "$root" "$LATCHKEY_BIN" /usr/bin/latchkey
    # One libgpiod (host/libgpiod.sh) and its own tools. latchkey dlopen()s it, so ldd does
    # not list it: it goes where the dynamic loader looks without a cache.
    mkdir -p "$root$VM_LIBDIR"
    cp -L "$LIBGPIOD_LIBRARY" "$root$VM_LIBDIR/$(basename "$LIBGPIOD_LIBRARY")"
    for prog in gpioset gpioget gpioinfo gpiomon gpiodetect; do
        LD_LIBRARY_PATH=$LIBGPIOD_LD_PATH vm_copy "$root" "$LIBGPIOD_TOOLS/$prog" "/usr/bin/$prog"
    done
    echo "$HIL_LIBGPIOD $LIBGPIOD_VERSION" > "$root/hil/libgpiod"
    "$VM_STRIP" "$root/usr/bin/latchkey"
    "$VM_CC" -O2 -static -o "$root/usr/bin/hil-clock" "$HIL_DIR/vm/tools/hil-clock.c"
    "$VM_CC" -O2 -Wall -static -o "$root/usr/bin/hil-att-bench" "$HIL_DIR/vm/tools/hil-att-bench.c"
    "$VM_CC" -O2 -Wall -static -o "$root/usr/bin/hil-att-flood" "$HIL_DIR/vm/tools/hil-att-flood.c"
    # dbus-daemon looks up the groups of every connecting uid (getpwuid): root must exist.
    printf 'root:x:0:0:root:/root:/bin/sh\n' > "$root/etc/passwd"
    printf 'root:x:0:\n' > "$root/etc/group"
    # Scenario 12's LD_PRELOAD shim; against a glibc no newer than the one the initramfs carries.
    mkdir -p "$root/usr/lib"
    "$VM_CC" -O2 -Wall -shared -fPIC -o "$root/usr/lib/hil-refuse-add-device.so" "$HIL_DIR/vm/tools/hil-refuse-add-device.c" -ldl

    install_modules "$root"

    # The VM side.
    cp "$HIL_DIR/vm/init" "$root/init"
    cp -r "$HIL_DIR/vm/lib.sh" "$HIL_DIR/vm/agents.sh" "$HIL_DIR/vm/rig.sh" "$HIL_DIR/vm/setup" "$HIL_DIR/vm/run-scenarios" "$HIL_DIR/vm/scenarios" "$HIL_DIR/vm/bench" "$root/hil/"
    chmod +x "$root/init" "$root/hil/setup" "$root/hil/run-scenarios" "$root"/hil/scenarios/*

    pack_cpio "$root" "$INITRD"
    say "initramfs $(du -m "$INITRD" | cut -f1) MB ($(find "$root/lib/modules" -name '*.ko' | wc -l) modules)"
}
