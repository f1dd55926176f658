#!/usr/bin/env bash
# Several communicators alive at once in the same processes
# (tests/mp_communicators.cpp): one from the launcher's environment, one set up
# through the caller's own exchange with caller-given node identities, and
# overlapping pairs made in a different order on different ranks, all running
# validated collectives, then destroyed with nothing left behind.
#   usage: test_communicators.sh RAILCOLL MP_COMMUNICATORS
set -u
RC=${1:?railcoll}; MP=${2:?mp_communicators}
. "$(dirname "$0")/check_lib.sh"
CHECK_TIMEOUT=300
ports() {  # ports N: a base port with N free ones after it
  # Below the kernel's ephemeral range, as the launcher's store port: a port of
  # that range can be taken by any process's outgoing connection meanwhile.
  python3 - "$1" <<'PY'
import random, socket, sys
n = int(sys.argv[1])
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(200):
    base = random.randrange(10000, low - n)
    socks = []
    try:
        for p in range(base, base + n):
            t = socket.socket(); t.bind(("127.0.0.1", p)); socks.append(t)
    except OSError:
        continue
    finally:
        for t in socks: t.close()
    print(base); break
PY
}
for cfg in "4 --ppn 2 --rails 2" "6 --ppn 3 --rails 1" "4"; do
  n=${cfg%% *}
  check "several communicators at once, -n $cfg" "communicators correct" "$n" -- \
    env MP_PORT_BASE="$(ports "$n")" RAILCOLL_TIMEOUT=60 "$RC" run -n $cfg -- "$MP"
done
check_no_shm_left
summary
