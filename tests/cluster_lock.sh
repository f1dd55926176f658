# Sourced by the tests that use the emulated cluster: one user at a time (a
# test that took the cluster down under another one's feet failed it). The
# lock is /tmp/railcoll-cluster.lock, as for scripts/soak.sh, make
# bcast-vs-nodes and measurements by hand (`flock /tmp/railcoll-cluster.lock
# railcoll bench ...`). A caller that holds it already sets
# RAILCOLL_CLUSTER_LOCKED (make sanitize does), so nothing waits for itself.
cluster_lock() {
  [ -n "${RAILCOLL_CLUSTER_LOCKED:-}" ] && return 0
  exec 9>/tmp/railcoll-cluster.lock
  flock 9
  export RAILCOLL_CLUSTER_LOCKED=$$
}
cluster_unlock() {
  [ "${RAILCOLL_CLUSTER_LOCKED:-}" = "$$" ] || return 0
  flock -u 9
  unset RAILCOLL_CLUSTER_LOCKED
}
