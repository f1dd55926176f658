# Sourced by the tests that use the emulated cluster: one user at a time (a
# test that took the cluster down under another one's feet failed it). The
# lock is /tmp/railcoll-cluster.lock, as for scripts/soak.sh, make
# bcast-vs-nodes and measurements by hand (`flock /tmp/railcoll-cluster.lock
# railcoll bench ...`). A caller that holds it already sets
# RAILCOLL_CLUSTER_LOCKED (make sanitize does), so nothing waits for itself.
#
# ctest's RESOURCE_LOCK keeps a run's own cluster tests apart, so a wait here
# is for a job outside the run (a benchmark, another checkout's tests). ctest's
# TIMEOUT would count that wait as the test's own time and fail it as "timed
# out"; instead the wait is bounded (RAILCOLL_CLUSTER_LOCK_WAIT seconds,
# default 120) and the test is reported skipped, naming the holder.
cluster_lock_holder() {
  local pid
  pid=$(lslocks --noheadings --output PID,PATH 2>/dev/null |
    awk '$2 == "/tmp/railcoll-cluster.lock" { print $1; exit }')
  if [ -n "$pid" ]; then
    echo "pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-160)"
  else
    echo "a process lslocks does not name"
  fi
}
cluster_lock() {
  [ -n "${RAILCOLL_CLUSTER_LOCKED:-}" ] && return 0
  local wait=${RAILCOLL_CLUSTER_LOCK_WAIT:-120}
  exec 9>/tmp/railcoll-cluster.lock
  if ! flock -n 9; then
    echo "waiting up to $wait s for the emulated cluster, held by $(cluster_lock_holder)"
    if ! flock -w "$wait" 9; then
      echo "SKIPPED: the emulated cluster stayed held by another job for $wait s" \
        "($(cluster_lock_holder)); run again when it is free, or set RAILCOLL_CLUSTER_LOCK_WAIT"
      exit 77
    fi
  fi
  export RAILCOLL_CLUSTER_LOCKED=$$
}
cluster_unlock() {
  [ "${RAILCOLL_CLUSTER_LOCKED:-}" = "$$" ] || return 0
  flock -u 9
  unset RAILCOLL_CLUSTER_LOCKED
}
