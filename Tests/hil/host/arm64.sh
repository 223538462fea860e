# The arm64 suite (Tests/hil/run --arch arm64): Debian's arm64 kernel under
# qemu-system-aarch64, the arm64 latchkey, and an initramfs of Debian arm64 programs. Sourced
# after the amd64 parts; redefines what differs. docs/TESTING.md, "arm64".
#
# The VM's userland is Debian 13 (trixie) arm64, unpacked and never installed (mmdebstrap's
# extract variant: no maintainer script runs, so no emulation is needed): the arm64 binary
# needs glibc 2.38 (docs/ARM64.md), which bookworm lacks. busybox-static, BlueZ's tools,
# libgpiod 2 and its tools, and the C libraries latchkey links, with what they depend on.
# Cached in $CACHE/arm64/userland-<hash of the list>/.

# Tests/hil/run --arch arm64's choices: --kernel names the flavour (arm64 or arm64-16k), only the
# busybox image boots, and without --scenarios the flavour's set (--set, default full) of
# Tests/hil/arm64-scenarios runs.
arm64_options() {
    case ${HIL_KERNEL:-arm64} in
        arm64|arm64-16k) HIL_FLAVOUR=${HIL_KERNEL:-arm64} HIL_KERNEL=backports ;;
        *) die "--arch arm64 --kernel $HIL_KERNEL: want arm64 or arm64-16k (bookworm-backports' flavours)" ;;
    esac
    [[ $HIL_IMAGE == all || $HIL_IMAGE == busybox ]] || die "--arch arm64 boots the busybox image only"
    HIL_IMAGE=busybox HIL_CONSOLE_SUFFIX=-$HIL_FLAVOUR
    if [[ -z $HIL_SCENARIOS ]]; then
        local set=${HIL_ARM64_SET:-full}
        HIL_SCENARIOS=$(awk -v f="$HIL_FLAVOUR" -v s="$set" '!/^[[:space:]]*(#|$)/ && $1 == f && $2 == s { $1 = $2 = ""; print }' "$HIL_DIR/arm64-scenarios")
        HIL_SCENARIOS=$(echo $HIL_SCENARIOS)
        [[ -n $HIL_SCENARIOS ]] || die "Tests/hil/arm64-scenarios has no set '$set' for $HIL_FLAVOUR"
    fi
    require_tools qemu-system-aarch64:qemu-system-arm qemu-aarch64-static:qemu-user-static \
        aarch64-linux-gnu-gcc-12:gcc-12-aarch64-linux-gnu aarch64-linux-gnu-strip:binutils-aarch64-linux-gnu \
        /usr/aarch64-linux-gnu/lib/libc.a:libc6-dev-arm64-cross readelf:binutils mmdebstrap:mmdebstrap \
        /bin/busybox:busybox-static depmod:kmod modinfo:kmod xz:xz-utils make:make
}

ARM64_SUITE=trixie
ARM64_PACKAGES=(busybox-static bluez bluez-test-tools gpiod libgpiod3 sqlite3 dbus-daemon dbus-bin strace
                libbluetooth3 libsqlite3-0 libyaml-0-2 libmosquitto1 libstdc++6 libgcc-s1 libc6)
ARM64_LIBDIRS=(usr/lib/aarch64-linux-gnu lib/aarch64-linux-gnu usr/lib lib)

fetch_arm64_userland() {
    local key mirror
    key=$(echo "$ARM64_SUITE ${ARM64_PACKAGES[*]}" | sha256sum | cut -c1-12)
    VM_SOURCE=$CACHE/arm64/userland-$key
    if [[ -f $VM_SOURCE/.complete ]]; then
        say "arm64 userland ($ARM64_SUITE, cached in $VM_SOURCE)"
        return 0
    fi
    # The host's own Debian mirror (the one its release comes from, not a security mirror).
    local codename
    codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
    mirror=$(apt-get indextargets --format '$(SITE) $(RELEASE)' 2>/dev/null | awk -v r="$codename" '$2 == r && !found++ { print $1 }')
    [[ -n $mirror ]] || die "no Debian mirror for $codename in the host's apt sources (run apt-get update first)"
    rm -rf "$VM_SOURCE" && mkdir -p "$(dirname "$VM_SOURCE")"
    local packages
    packages=$(IFS=,; echo "${ARM64_PACKAGES[*]}")
    mmdebstrap --quiet --variant=extract --architectures=arm64 --include="$packages" \
        --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' "$ARM64_SUITE" "$VM_SOURCE" "$mirror" \
        > "$CACHE/arm64/userland.log" 2>&1 \
        || { tail -20 "$CACHE/arm64/userland.log"; die "mmdebstrap of the arm64 userland failed (log: $CACHE/arm64/userland.log)"; }
    touch "$VM_SOURCE/.complete"
    say "arm64 userland ($ARM64_SUITE) unpacked in $VM_SOURCE ($(du -sm "$VM_SOURCE" | cut -f1) MB)"
}

# The path of a library the VM's loader would find, inside the unpacked userland.
arm64_library() {
    local name=$1 dir
    for dir in "${ARM64_LIBDIRS[@]}"; do
        [[ -e $VM_SOURCE/$dir/$name ]] && { echo "$dir/$name"; return 0; }
    done
    return 1
}

# arm64_copy ROOT PROGRAM DEST: the program, and every library its DT_NEEDED entries name,
# transitively (readelf reads any architecture's ELF; ldd would have to run the program),
# plus the dynamic loader, into ROOT at the userland's paths.
arm64_copy() {
    local root=$1 program=$2 dest=$3
    mkdir -p "$root$(dirname "$dest")"
    cp -L "$program" "$root$dest"
    local queue=("$program") file lib rel interp
    interp=$(readelf -l "$program" 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
    if [[ -n $interp && ! -e $root$interp ]]; then
        mkdir -p "$root$(dirname "$interp")"
        cp -L "$VM_SOURCE$interp" "$root$interp"
    fi
    while ((${#queue[@]})); do
        file=${queue[0]}; queue=("${queue[@]:1}")
        for lib in $(readelf -d "$file" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
            rel=$(arm64_library "$lib") || die "$(basename "$file") needs $lib, which the arm64 userland lacks (add its package to ARM64_PACKAGES)"
            [[ -e $root/$rel ]] && continue
            mkdir -p "$root/$(dirname "$rel")"
            cp -L "$VM_SOURCE/$rel" "$root/$rel"
            queue+=("$VM_SOURCE/$rel")
        done
    done
}

# The arm64 libgpiod (2.x, Debian 13's) and its tools; the VM gets exactly these.
select_arm64_libgpiod() {
    HIL_LIBGPIOD=2
    LIBGPIOD_LIBRARY=$VM_SOURCE/$(arm64_library libgpiod.so.3) || die "no libgpiod.so.3 in the arm64 userland"
    LIBGPIOD_TOOLS=$VM_SOURCE/usr/bin
    LIBGPIOD_LD_PATH=
    LIBGPIOD_VERSION=$(vm_run "$LIBGPIOD_TOOLS/gpiodetect" --version | sed -n 1p)
    say "libgpiod for the VM: $LIBGPIOD_LIBRARY ($LIBGPIOD_VERSION)"
}

use_arm64_userland() {
    fetch_arm64_userland
    VM_BUSYBOX=$VM_SOURCE/usr/bin/busybox VM_LIBDIR=/usr/lib/aarch64-linux-gnu
    VM_CC=aarch64-linux-gnu-gcc-12 VM_STRIP=aarch64-linux-gnu-strip
    select_arm64_libgpiod
}
# qemu-user runs the userland's programs here only to ask them their applets and versions.
vm_run() { qemu-aarch64-static -L "$VM_SOURCE" "$@"; }
vm_program() { [[ -x $VM_SOURCE/usr/bin/$1 ]] && echo "$VM_SOURCE/usr/bin/$1" || die "no $1 in the arm64 userland"; }
vm_copy() { arm64_copy "$@"; }

# The arm64 latchkey: the static release build scripts/cross-arm64 makes (scratch
# .build-arm64; the same build scripts/build-deb --arch arm64 packages), or --binary.
build_latchkey() {
    if [[ -n ${HIL_LATCHKEY_BIN:-} ]]; then
        LATCHKEY_BIN=$HIL_LATCHKEY_BIN
    else
        local flags=(-c release --static-swift-stdlib) log=$CACHE/swift-build-arm64.log
        if ! "$REPO/scripts/cross-arm64" swift build "${flags[@]}" --product latchkey > "$log" 2>&1; then
            tail -n 40 "$log"
            die "arm64 swift build failed (log: $log)"
        fi
        LATCHKEY_BIN=$("$REPO/scripts/cross-arm64" swift build "${flags[@]}" --show-bin-path | tail -n 1)/latchkey
    fi
    [[ -x $LATCHKEY_BIN ]] || die "no arm64 latchkey at $LATCHKEY_BIN"
    readelf -h "$LATCHKEY_BIN" | grep -q 'Machine:.*AArch64' || die "$LATCHKEY_BIN is not an arm64 program"
    say "latchkey: $LATCHKEY_BIN (arm64, $(stat -c %s "$LATCHKEY_BIN") bytes)"
}

# qemu-system-aarch64's virt board. -cpu max: the default CPU is 32-bit, and the Cortex
# models lack 16 KB pages; pauth-impdef=on: the same pointer authentication with a cheap
# hash instead of QARMA, which TCG spends most of an arm64 kernel's time on otherwise. The
# console is the board's PL011.
QEMU=(qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on -accel tcg) VM_CONSOLE=ttyAMA0 VM_APPEND=
