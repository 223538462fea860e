# Builds gpio-sim out of tree for $KVER. No Debian kernel enables CONFIG_GPIO_SIM (nor
# IRQ_SIM, which it needs), so the driver and the irq simulator are built together as one
# module from the kernel's own source, against the matching headers and kbuild. Debian's arm64
# flavours lack CONFIG_BT_HCIVHCI too: for them hci_vhci is built the same way. arm64 modules
# are cross-built (ARCH=arm64, CROSS_COMPILE=aarch64-linux-gnu-: the headers' compiler is
# gcc-12, so aarch64-linux-gnu-gcc-12 from bookworm's gcc-12-aarch64-linux-gnu).
# Sets GPIO_SIM_KO, and HCI_VHCI_KO (empty when the kernel has its own).

# The make arguments that build a module for the flavour's architecture on this host.
kbuild_cross() { [[ $HIL_ARCH == amd64 ]] || echo "ARCH=$HIL_ARCH CROSS_COMPILE=aarch64-linux-gnu-"; }

# kbuild_module OUT: builds the module whose Kbuild and sources are in OUT for $KVER.
kbuild_module() {
    local out=$1 headers=$KDIR/headers/usr/src/linux-headers-$KVER
    # CONFIG_DEBUG_INFO_BTF_MODULES would need pahole (dwarves) for a debug section nobody reads.
    # shellcheck disable=SC2046
    make -s -C "$headers" M="$out" $(kbuild_cross) CONFIG_DEBUG_INFO_BTF_MODULES= modules > "$out/build.log" 2>&1 \
        || { tail -30 "$out/build.log"; die "$(basename "$out") build failed (log: $out/build.log)"; }
}

# The flavour's Makefile includes the common one by an absolute /usr/src path: point it at
# the extracted tree instead of installing the headers on the host.
point_headers_here() {
    local headers=$KDIR/headers/usr/src/linux-headers-$KVER common
    grep -q "^include $KDIR/" "$headers/Makefile" && return 0
    common=$(sed -n 's|^include /usr/src/\(.*\)/Makefile$|\1|p' "$headers/Makefile")
    [[ -n $common ]] || die "unexpected $headers/Makefile: $(cat "$headers/Makefile")"
    echo "include $KDIR/headers/usr/src/$common/Makefile" > "$headers/Makefile"
}

build_modules() {
    build_gpio_sim
    HCI_VHCI_KO=
    if grep -q '/hci_vhci.ko' "$KDIR/image/lib/modules/$KVER/modules.order"; then return 0; fi
    local out=$CACHE/hci_vhci/$KVER
    HCI_VHCI_KO=$out/hci_vhci.ko
    if [[ -f $HCI_VHCI_KO && $HCI_VHCI_KO -nt $KDIR/.complete ]]; then
        say "hci_vhci.ko for $KVER (cached)"
        return 0
    fi
    [[ -f $KDIR/src/drivers/bluetooth/hci_vhci.c ]] || die "$KDIR has no hci_vhci.c: delete it to fetch the kernel again"
    point_headers_here
    rm -rf "$out" && mkdir -p "$out"
    cp "$KDIR/src/drivers/bluetooth/hci_vhci.c" "$out/"
    echo 'obj-m := hci_vhci.o' > "$out/Kbuild"
    kbuild_module "$out"
    modinfo -F vermagic "$HCI_VHCI_KO" | grep -q "^$KVER " || die "hci_vhci.ko vermagic does not match $KVER"
    say "hci_vhci.ko built for $KVER (the kernel has none)"
}

build_gpio_sim() {
    local out=$CACHE/gpio-sim/$KVER
    GPIO_SIM_KO=$out/gpio-sim.ko
    if [[ -f $GPIO_SIM_KO && $GPIO_SIM_KO -nt $KDIR/.complete ]]; then
        say "gpio-sim.ko for $KVER (cached)"
        return 0
    fi
    point_headers_here
    rm -rf "$out" && mkdir -p "$out"
    cp "$KDIR/src/drivers/gpio/gpio-sim.c" "$out/gpio-sim-main.c"
    cp "$KDIR/src/drivers/gpio/gpiolib.h" "$out/gpiolib.h"
    # irq_to_desc() is not exported to modules; generic_handle_irq() does the same lookup
    # and calls the handler irq_sim installs (handle_simple_irq).
    sed 's/handle_simple_irq(irq_to_desc(irqnum))/generic_handle_irq(irqnum)/' \
        "$KDIR/src/kernel/irq/irq_sim.c" > "$out/irq_sim.c"
    grep -q 'generic_handle_irq(irqnum)' "$out/irq_sim.c" || die "irq_sim.c: the irq_to_desc edit did not apply"
    cat > "$out/Kbuild" <<'KBUILD'
obj-m := gpio-sim.o
gpio-sim-y := gpio-sim-main.o irq_sim.o
KBUILD
    kbuild_module "$out"
    modinfo -F vermagic "$GPIO_SIM_KO" | grep -q "^$KVER " || die "gpio-sim.ko vermagic does not match $KVER"
    say "gpio-sim.ko built for $KVER"
}
