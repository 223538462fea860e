# Shared helpers for the host side of the HIL suite (sourced by Tests/hil/run).

# Prints a progress line the CI log can be searched for.
say() { printf '== hil: %s\n' "$*"; }

die() { printf 'hil: error: %s\n' "$*" >&2; exit 1; }

# Runs one named part of the suite and records how long it took, so the report can say
# where the time goes (first run with downloads versus a cached rerun).
STEP_TIMES=()
step() {
    local name=$1; shift
    local start=$SECONDS
    say "$name ..."
    "$@"
    STEP_TIMES+=("$name $((SECONDS - start))s")
    say "$name done in $((SECONDS - start)) s"
}

# Fails with the packages to install when a tool is missing. The suite never skips itself:
# CI installs these in .ci/run.
require_tools() {
    local missing=()
    local pair tool pkg
    for pair in "$@"; do
        tool=${pair%%:*}; pkg=${pair#*:}
        if [[ $tool == /* ]]; then [[ -e $tool ]] || missing+=("$pkg")
        else command -v "$tool" >/dev/null 2>&1 || missing+=("$pkg"); fi
    done
    if ((${#missing[@]})); then
        die "missing tools; install them with: apt-get install -y $(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')"
    fi
}

# The architecture-independent check that a file is a dynamically linked ELF program.
is_dynamic() { ldd "$1" >/dev/null 2>&1; }

# Copies a program and every shared library `ldd` lists (plus the dynamic loader) into a
# root directory, keeping their paths, so it runs inside the initramfs.
copy_with_libraries() {
    local root=$1 program=$2 dest=${3:-$2}
    mkdir -p "$root$(dirname "$dest")"
    cp -L "$program" "$root$dest"
    is_dynamic "$program" || return 0
    local lib
    for lib in $(ldd "$program" | grep -o '/[^ ]*'); do
        [[ -e $root$lib ]] && continue
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
}
