# Builds gpio-sim out of tree for $KVER. No Debian kernel enables CONFIG_GPIO_SIM (nor
# IRQ_SIM, which it needs), so the driver and the irq simulator are built together as one
# module from the kernel's own source, against the matching headers and kbuild.
# Sets GPIO_SIM_KO.

build_gpio_sim() {
    local out=$CACHE/gpio-sim/$KVER
    GPIO_SIM_KO=$out/gpio-sim.ko
    if [[ -f $GPIO_SIM_KO && $GPIO_SIM_KO -nt $KDIR/.complete ]]; then
        say "gpio-sim.ko for $KVER (cached)"
        return 0
    fi
    local headers=$KDIR/headers/usr/src/linux-headers-$KVER
    local common
    common=$(sed -n 's|^include /usr/src/\(.*\)/Makefile$|\1|p' "$headers/Makefile")
    [[ -n $common ]] || die "unexpected $headers/Makefile: $(cat "$headers/Makefile")"
    # The flavour's Makefile includes the common one by an absolute /usr/src path: point it
    # at the extracted tree instead of installing the headers on the host.
    echo "include $KDIR/headers/usr/src/$common/Makefile" > "$headers/Makefile"

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
    # CONFIG_DEBUG_INFO_BTF_MODULES would need pahole (dwarves) for a debug section nobody reads.
    make -s -C "$headers" M="$out" CONFIG_DEBUG_INFO_BTF_MODULES= modules > "$out/build.log" 2>&1 \
        || { tail -30 "$out/build.log"; die "gpio-sim build failed (log: $out/build.log)"; }
    modinfo -F vermagic "$GPIO_SIM_KO" | grep -q "^$KVER " || die "gpio-sim.ko vermagic does not match $KVER"
    say "gpio-sim.ko built for $KVER"
}
