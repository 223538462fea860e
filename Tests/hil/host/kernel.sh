# Fetches a Debian kernel (image, headers, kbuild, the three gpio-sim source files) into
# the cache with apt-get download + dpkg -x; never installs it on the host.
#
# HIL_KERNEL selects it:
#   backports (default)  bookworm-backports 6.12, pinned to HIL_KERNEL_PIN. 6.1 crashes in
#                        hci_chan_del when an LE ATT socket is closed after link loss
#                        (upstream ab4eedb790ca is missing); 6.12 has the fix.
#   stable               the release's own linux-image-amd64 (6.1, with that crash).
#   <ABI>                an exact ABI name, e.g. 6.12.95+deb12-amd64.
# HIL_ARCH=arm64 (Tests/hil/run --arch arm64) takes the same backports version of an arm64
# flavour instead, HIL_FLAVOUR: arm64 (4 KB pages) or arm64-16k; its image and headers are
# arm64 packages, its kbuild (the host's modpost and fixdep) the amd64 one.
# Sets KVER (the ABI, `uname -r` in the VM) and KDIR (its cache directory).

# Backports moves on: the pin is what the suite was last measured with; when backports has
# dropped it, the newest backports kernel is used and the run says so.
HIL_KERNEL_PIN=${HIL_KERNEL_PIN:-6.12.95+deb12-amd64}
HIL_ARCH=${HIL_ARCH:-amd64}
HIL_FLAVOUR=${HIL_FLAVOUR:-amd64}
# The package-name suffix of the flavour's own packages (image, headers): apt picks the host's
# architecture for a bare name.
flavour_arch() { [[ $HIL_ARCH == amd64 ]] || echo ":$HIL_ARCH"; }

# apt options for a private index that adds <codename>-backports beside nothing else, so the
# host's apt state is never touched. The mirror is the host's own Debian mirror.
backports_apt_options() {
    local codename mirror dir=$CACHE/apt
    codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
    mirror=$(apt-get indextargets --format '$(SITE) $(RELEASE)' 2>/dev/null | awk -v r="$codename" '$2 == r && !found++ { print $1 }')
    [[ -n $mirror ]] || die "no Debian mirror for $codename in the host's apt sources (run apt-get update first)"
    mkdir -p "$dir/lists/partial" "$dir/archives/partial"
    echo "deb [arch=amd64,arm64] $mirror $codename-backports main" > "$dir/sources.list"
    APT_OPTS=(-o "Dir::Etc::SourceList=$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
              -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir" -o APT::Sandbox::User=root
              -o APT::Architectures::=amd64 -o APT::Architectures::=arm64)
}

# The ABI that linux-image-<flavour> depends on in the current index.
newest_abi() {
    apt-cache "${APT_OPTS[@]}" show --no-all-versions "linux-image-$HIL_FLAVOUR$(flavour_arch)" \
        | sed -n "s/^Depends:.*linux-image-\([0-9][^ ,]*-$HIL_FLAVOUR\)\([ ,].*\)\{0,1\}$/\1/p" | sed -n 1p
}

package_version() {
    apt-cache "${APT_OPTS[@]}" show --no-all-versions "$1" 2>/dev/null | sed -n 's/^Version: //p' | sed -n 1p
}

resolve_kernel() {
    APT_OPTS=(-o APT::Sandbox::User=root)
    case ${HIL_KERNEL:=backports} in
        backports)
            KVER=${HIL_KERNEL_PIN%-amd64}-$HIL_FLAVOUR
            [[ -f $CACHE/kernel/$KVER/.complete ]] && return 0   # cached: no network needed
            backports_apt_options
            apt-get "${APT_OPTS[@]}" -q update >/dev/null || die "cannot update the backports index"
            if [[ -z $(package_version "linux-image-$KVER$(flavour_arch)") ]]; then
                KVER=$(newest_abi)
                [[ -n $KVER ]] || die "no linux-image-$HIL_FLAVOUR in backports"
                say "WARNING: pinned kernel $HIL_KERNEL_PIN is gone from backports; using $KVER (set HIL_KERNEL_PIN=${KVER%-$HIL_FLAVOUR}-amd64)"
            fi ;;
        stable)
            KVER=$(newest_abi)
            [[ -n $KVER ]] || die "no linux-image-amd64 in the host's apt index (run apt-get update)"
            say "WARNING: $KVER crashes when an ATT socket is closed after link loss; scenarios 30, 31 and 32 may kill the VM" ;;
        *)
            KVER=$HIL_KERNEL
            [[ -f $CACHE/kernel/$KVER/.complete ]] && return 0
            if [[ -z $(package_version "linux-image-$KVER") ]]; then
                backports_apt_options
                apt-get "${APT_OPTS[@]}" -q update >/dev/null || die "cannot update the backports index"
            fi ;;
    esac
}

fetch_kernel() {
    resolve_kernel
    KDIR=$CACHE/kernel/$KVER
    if [[ -f $KDIR/.complete ]]; then
        say "kernel $KVER (cached, package $(cat "$KDIR/package-version"))"
        return 0
    fi
    local arch; arch=$(flavour_arch)
    local version=$(package_version "linux-image-$KVER$arch")
    [[ -n $version ]] || die "linux-image-$KVER$arch is not in the apt index"
    local flavourless=${KVER%-"$HIL_FLAVOUR"} series=${version%%-*}
    series=$(echo "$series" | cut -d. -f1,2)          # 6.12.95 -> 6.12
    local kbuild=linux-kbuild-$flavourless            # 6.12 names kbuild by full version,
    [[ -n $(package_version "$kbuild") ]] || kbuild=linux-kbuild-$series   # 6.1 by series
    local packages=("linux-image-$KVER$arch=$version" "linux-headers-$KVER$arch=$version"
                    "linux-headers-$flavourless-common=$version" "$kbuild=$version"
                    "linux-source-$series=$version")
    rm -rf "$KDIR" && mkdir -p "$KDIR/debs"
    say "downloading ${packages[*]}"
    (cd "$KDIR/debs" && apt-get "${APT_OPTS[@]}" -q download "${packages[@]}") >/dev/null \
        || die "apt-get download failed for ${packages[*]}"
    local deb
    for deb in "$KDIR"/debs/linux-{image,headers,kbuild}-*.deb; do
        case $deb in
            */linux-image-*) dpkg -x "$deb" "$KDIR/image" ;;
            *) dpkg -x "$deb" "$KDIR/headers" ;;
        esac
    done
    # Only four files of the ~150 MB source tarball are needed (see gpio-sim.sh): hci_vhci.c
    # for the kernels built without it (the arm64 flavours).
    mkdir -p "$KDIR/src"
    dpkg-deb --fsys-tarfile "$KDIR"/debs/linux-source-*.deb \
        | tar -xO "./usr/src/linux-source-$series.tar.xz" \
        | tar -xJ -C "$KDIR/src" --strip-components=1 \
            "linux-source-$series/drivers/gpio/gpio-sim.c" "linux-source-$series/drivers/gpio/gpiolib.h" \
            "linux-source-$series/kernel/irq/irq_sim.c" "linux-source-$series/drivers/bluetooth/hci_vhci.c"
    rm -rf "$KDIR/debs"
    echo "$version" > "$KDIR/package-version"
    touch "$KDIR/.complete"
    say "kernel $KVER (package $version) fetched"
}
