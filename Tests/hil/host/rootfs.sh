# The systemd image's userspace: Debian 12 (bookworm) with systemd as PID 1, built from
# Debian's packages with mmdebstrap into a tarball cached in .build-hil/rootfs/<key>/, where
# the key is a hash of the package list and the options: a changed list builds a new one.
# Sets ROOTFS_TAR. Needs mmdebstrap (root: it picks its "root" mode itself) and the mirror
# the host's apt uses on the first run (22-60 s; docs/PERFORMANCE.md, "CI time").

# What the image holds besides minbase:
#   systemd-sysv udev kmod       PID 1, device units (the agents' units wait for hci0's), modprobe
#   libbluetooth3 libgpiod2 libmosquitto1 libsqlite3-0 libyaml-0-2
#                                the C libraries a Pi needs beside the binary (the Debian
#                                package's Depends: the VM installs it offline, so they are here)
#   bluez bluez-test-tools gpiod the rig (btvirt, btmgmt, btmon, hcitool) and the stock GPIO tools;
#                                bluez brings bluetooth.service, which README.md has the user mask
#   procps util-linux            pidof/pgrep, runuser/setsid for the scenarios
ROOTFS_PACKAGES=(systemd-sysv udev kmod libbluetooth3 libgpiod2 libmosquitto1 libsqlite3-0 libyaml-0-2
                 bluez bluez-test-tools gpiod procps util-linux)
# No documentation, manual pages or translations: a third of the size, nothing reads them.
ROOTFS_OPTIONS=(--variant=minbase --dpkgopt='path-exclude=/usr/share/man/*'
                --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/locale/*'
                --dpkgopt='path-exclude=/usr/share/info/*')

fetch_rootfs() {
    local codename=bookworm mirror key dir
    key=$(printf '%s\n' "$codename" "${ROOTFS_PACKAGES[@]}" "${ROOTFS_OPTIONS[@]}" | sha256sum | cut -c1-12)
    dir=$CACHE/rootfs/$key
    ROOTFS_TAR=$dir/rootfs.tar
    if [[ -f $dir/.complete ]]; then
        say "rootfs $key (cached: $(du -m "$ROOTFS_TAR" | cut -f1) MB)"
        return 0
    fi
    mirror=$(apt-get indextargets --format '$(SITE) $(RELEASE)' 2>/dev/null | awk -v r="$codename" '$2 == r && !found++ { print $1 }')
    [[ -n $mirror ]] || die "no Debian mirror for $codename in the host's apt sources (run apt-get update first)"
    rm -rf "$dir" && mkdir -p "$dir"
    local include
    include=$(IFS=,; echo "${ROOTFS_PACKAGES[*]}")
    say "mmdebstrap $codename from $mirror: $include"
    mmdebstrap "${ROOTFS_OPTIONS[@]}" --include="$include" "$codename" "$ROOTFS_TAR" "$mirror" \
        > "$dir/mmdebstrap.log" 2>&1 || { tail -30 "$dir/mmdebstrap.log"; die "mmdebstrap failed (log: $dir/mmdebstrap.log)"; }
    touch "$dir/.complete"
    say "rootfs $key built: $(du -m "$ROOTFS_TAR" | cut -f1) MB"
}
