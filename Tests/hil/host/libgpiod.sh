# libgpiod for the VM: 1.6 (the host's libgpiod2 and gpiod packages, Debian 12) or 2.x
# (bookworm-backports' libgpiod3 and gpiod 2.1, Debian 13's API), chosen by HIL_LIBGPIOD
# (1.6 or 2; `Tests/hil/run --libgpiod 2`). latchkey links neither: it dlopen()s
# libgpiod.so.3 or libgpiod.so.2 (docs/ARCHITECTURE.md, "GPIO through libgpiod"), so the VM
# gets exactly one library and that library's own tools, and the lock must find it by itself.
#
# On bookworm, backports' libgpiod3 declares Breaks: libgpiod2 (<< 2.1.3-1~bpo12+1), so
# installing it would remove the 1.6 library and tools the host needs: the 2.x packages are
# fetched with `apt-get download` into the cache and unpacked with `dpkg -x`, never
# installed (the kernel's way, host/kernel.sh). Sets LIBGPIOD2_ROOT (a tree with usr/lib,
# usr/bin and usr/include) and LIBGPIOD2_LIBDIR.

fetch_libgpiod2() {
    local dir=$CACHE/libgpiod2
    LIBGPIOD2_ROOT=$dir/root
    if ! ls "$LIBGPIOD2_ROOT"/usr/lib/*/libgpiod.so.3 > /dev/null 2>&1; then
        backports_apt_options
        apt-get "${APT_OPTS[@]}" -q update > /dev/null || die "cannot update the backports index"
        rm -rf "$dir" && mkdir -p "$dir/debs" "$LIBGPIOD2_ROOT"
        (cd "$dir/debs" && apt-get "${APT_OPTS[@]}" -q download libgpiod3 gpiod libgpiod-dev) > /dev/null \
            || die "apt-get download failed for libgpiod3 gpiod libgpiod-dev (bookworm-backports)"
        local deb
        for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$LIBGPIOD2_ROOT"; done
    fi
    LIBGPIOD2_LIBDIR=$(dirname "$(ls "$LIBGPIOD2_ROOT"/usr/lib/*/libgpiod.so.3)")
}

# Sets LIBGPIOD_LIBRARY (the .so to put in the VM), LIBGPIOD_TOOLS (directory of gpioset
# and the others) and LIBGPIOD_VERSION, for HIL_LIBGPIOD.
select_libgpiod() {
    case ${HIL_LIBGPIOD:=1.6} in
        1.6)
            # awk reads to the end (no `exit`): a reader that stops early kills ldconfig with
            # SIGPIPE, and pipefail turns that into this script's exit 141 (it did, in CI).
            LIBGPIOD_LIBRARY=$(ldconfig -p | awk '$1 == "libgpiod.so.2" && !found++ { print $NF }')
            [[ -n $LIBGPIOD_LIBRARY ]] || die "no libgpiod.so.2 on the host (apt-get install libgpiod2 gpiod)"
            LIBGPIOD_TOOLS=$(dirname "$(command -v gpioset)")
            LIBGPIOD_LD_PATH=
            ;;
        2)
            fetch_libgpiod2
            LIBGPIOD_LIBRARY=$LIBGPIOD2_LIBDIR/libgpiod.so.3
            LIBGPIOD_TOOLS=$LIBGPIOD2_ROOT/usr/bin
            LIBGPIOD_LD_PATH=$LIBGPIOD2_LIBDIR
            ;;
        *) die "--libgpiod must be 1.6 (the host's libgpiod2) or 2 (backports' libgpiod3), not $HIL_LIBGPIOD" ;;
    esac
    LIBGPIOD_VERSION=$(LD_LIBRARY_PATH=$LIBGPIOD_LD_PATH "$LIBGPIOD_TOOLS/gpiodetect" --version | sed -n 1p)
    say "libgpiod for the VM: $LIBGPIOD_LIBRARY ($LIBGPIOD_VERSION)"
}
