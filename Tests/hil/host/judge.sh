# Judges a HIL console log against the expected checks (Tests/hil/expected-checks): the
# suite passes only when every selected scenario ran to its end with exit status 0 and
# passed exactly the checks the host expects of it, no line anywhere says FAIL, every
# recovery the host bounds was seen (with the link loss that starts it) within its bound,
# the VM reached its end marker and the guest kernel did not crash. A scenario that dies
# early, skips a check or prints one under another name cannot pass by accident.
#
# The VM's side of the contract (Tests/hil/vm/init and the scenarios):
#   HIL-SCENARIO NAME                       a scenario starts
#   PASS CHECK - ...  /  FAIL CHECK - ...   its checks
#   HIL-RECOVERY CHECK MS link_lost=yes|no link_timeouts=N forgotten_ms=F
#                                           a recovery the check measured, in ms, with the
#                                           evidence for its slow path (below)
#   HIL-SCENARIO-EXIT NAME STATUS MS        it ended with this exit status
#   HIL-END                                 every scenario has run
# Sourced by Tests/hil/run, Tests/hil/pi/run and Tests/hil/host/selftest; needs bash 4.
#
# Bounds (Tests/hil/expected-checks: `recovery<=MS [forgotten<=MS]`): a recovery must take at
# most recovery<=MS. The one exception is a forgotten link (docs/TESTING.md): the phone linked
# where hci0's kernel holds no link, which on btvirt (no supervision timeout) only the phone
# giving up on it ends (its 5 s command timeout, or its 10 s GATT setup timeout); then, and
# only with the evidence for it (exactly one link timeout — phone.command_timeout or
# phone.setup_timeout — and a forgotten link seen for at least FORGOTTEN_EVIDENCE_MS), the
# recovery may take up to forgotten<=MS. A link timeout without that evidence (the lock left
# the phone on a link its kernel knows) or two of them fail.
FORGOTTEN_EVIDENCE_MS=2000

# expected_scenarios EXPECTED: every scenario the expected-checks file declares, in order.
expected_scenarios() {
    awk '!/^[[:space:]]*(#|$)/ && !seen[$1]++ { print $1 }' "$1"
}

# judge_console LOG EXPECTED "SCENARIO..." [QEMU_STATUS]: prints the problems found and a
# summary line; status 0 only when there are none.
judge_console() {
    local log=$1 expected=$2 selected=$3 qemu_status=${4:-?}
    local problems=() s check rest bound line
    local -A want=() bound_of=() forgotten_bound_of=() chosen=()
    for s in $selected; do chosen[$s]=1; done

    # What the host expects of each selected scenario.
    while read -r s check rest; do
        [[ -z $s || $s == \#* ]] && continue
        [[ -n ${chosen[$s]:-} ]] || continue
        want[$s/$check]=1
        for bound in $rest; do
            case $bound in
                recovery\<=[0-9]*) bound_of[$check]=${bound#recovery<=} ;;
                forgotten\<=[0-9]*) forgotten_bound_of[$check]=${bound#forgotten<=} ;;
                *) problems+=("$expected: '$s $check $rest': unknown bound $bound (want recovery<=MS [forgotten<=MS])") ;;
            esac
        done
    done < "$expected"
    for s in $selected; do
        grep -q "^$s " "$expected" || problems+=("scenario $s: the host expects no check of it (declare its checks in $expected)")
    done

    # What the VM said, scenario by scenario.
    local current='' status passed=0 failed=0 ms lost timeouts forgotten
    local -A started=() exited=() seen=() recovery=() link_lost=() link_timeouts=() forgotten_ms=()
    while IFS= read -r line; do
        case $line in
            'HIL-SCENARIO '*)
                current=${line#HIL-SCENARIO }; current=${current%% *}
                [[ -n ${chosen[$current]:-} ]] || problems+=("scenario $current ran but was not selected")
                started[$current]=1 ;;
            'HIL-SCENARIO-EXIT '*)
                read -r _ s status _ <<< "$line"
                exited[$s]=$status
                [[ $s == "$current" ]] || problems+=("scenario $s: exit reported inside ${current:-no scenario}")
                current='' ;;
            'PASS '*)
                passed=$((passed + 1))
                check=${line#PASS }; check=${check%% *}
                if [[ -z ${want[$current/$check]:-} ]]; then
                    problems+=("unexpected check: PASS $check in scenario ${current:-none} (not in $expected for it)")
                elif [[ -n ${seen[$check]:-} ]]; then
                    problems+=("check $check passed twice")
                fi
                seen[$check]=1 ;;
            'FAIL '*)
                failed=$((failed + 1))
                problems+=("${line%% - *} (scenario ${current:-none})") ;;
            'HIL-RECOVERY '*)
                read -r _ check ms lost timeouts forgotten _ <<< "$line"
                recovery[$check]=$ms
                link_lost[$check]=${lost#link_lost=}
                link_timeouts[$check]=${timeouts#link_timeouts=}
                forgotten_ms[$check]=${forgotten#forgotten_ms=} ;;
        esac
    done < "$log"

    for s in $selected; do
        if [[ -z ${started[$s]:-} ]]; then
            problems+=("scenario $s never started")
        elif [[ -z ${exited[$s]:-} ]]; then
            problems+=("scenario $s did not report its exit (killed, or the VM died in it)")
        elif [[ ${exited[$s]} != 0 ]]; then
            problems+=("scenario $s exited with status ${exited[$s]}")
        fi
    done
    local key
    for key in "${!want[@]}"; do
        check=${key#*/}
        [[ -n ${seen[$check]:-} ]] || problems+=("missing check: $check (scenario ${key%%/*}) did not pass")
    done
    for check in "${!bound_of[@]}"; do
        bound=${bound_of[$check]}
        ms=${recovery[$check]:-}
        if [[ -z $ms ]]; then
            problems+=("$check: no HIL-RECOVERY figure (bound $bound ms)")
            continue
        fi
        [[ ${link_lost[$check]} == yes ]] \
            || problems+=("$check: the link loss the scenario causes was not seen (link_lost=${link_lost[$check]})")
        timeouts=${link_timeouts[$check]} forgotten=${forgotten_ms[$check]}
        if ! [[ $ms =~ ^[0-9]+(\.[0-9]+)?$ && $timeouts =~ ^[0-9]+$ && $forgotten =~ ^[0-9]+$ ]]; then
            problems+=("$check: unreadable HIL-RECOVERY figures (ms '$ms', link_timeouts '$timeouts', forgotten_ms '$forgotten')")
            continue
        fi
        local why="its bound of $bound ms"
        if ((timeouts == 1)) && [[ -n ${forgotten_bound_of[$check]:-} ]] && ((forgotten >= FORGOTTEN_EVIDENCE_MS)); then
            bound=${forgotten_bound_of[$check]}
            why="its bound of $bound ms with one forgotten link ($forgotten ms)"
        elif ((timeouts > 0)); then
            problems+=("$check: the phone ran $timeouts link timeout(s) with a forgotten link of $forgotten ms (allowed: one, after a forgotten link of at least $FORGOTTEN_EVIDENCE_MS ms): it sat on a link nobody answered")
            continue
        fi
        if awk -v ms="$ms" -v bound="$bound" 'BEGIN { exit !(ms > bound) }'; then
            problems+=("$check: recovery took $ms ms, over $why (docs/TESTING.md)")
        fi
    done

    grep -q '^HIL-END' "$log" || problems+=("no end marker (qemu exit status $qemu_status): the VM died, hung or was killed")
    if grep -qE 'Kernel panic|kernel BUG|general protection fault|list_del corruption|Oops' "$log"; then
        problems+=("the guest kernel crashed")
    fi
    if ((${#problems[@]})); then
        printf 'hil: %s\n' "${problems[@]}"
    fi
    echo "hil: $passed passed, $failed failed, ${#want[@]} expected in: $selected"
    ((${#problems[@]} == 0))
}
