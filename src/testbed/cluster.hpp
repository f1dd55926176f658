// The emulated multi-rail cluster: one network namespace per node, one bridge
// per rail, one shaped veth pair per (node, rail). See docs/cluster.md.
//
// Everything here runs `ip` and `tc` as child processes (no shell) and turns a
// failure into a CommandError whose message is one line: the command and its
// stderr.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace railcoll::cluster {

constexpr int kMaxNodes = 250;  // addresses .1 .. .250; .254 is the bridge
constexpr int kMaxRails = 8;
constexpr int kMaxPpn = 64;

struct Config {
  int nodes = 4;
  int ppn = 4;
  int rails = 2;
  std::string rate = "1gbit";      // as the user wrote it (tc syntax)
  uint64_t rate_bps = 1000000000;  // bits per second, per rail and direction
  // "bucket" (the default): tbf's bucket holds 1 ms at the rate, at least
  // 128 KiB, so a rail idle for a moment passes that much at memory speed.
  // "wire": a bucket of two frames, so no message goes faster than the rate,
  // as on a wire (choose_shaping; docs/cluster.md, "Shaping").
  std::string shaper = "bucket";
  uint64_t burst_bytes = 0;        // tbf bucket size
  int latency_ms = 0;              // tbf queue length, as time at the rate
  // "given" (--rate), or "auto": the highest rate this machine can feed, found
  // by `cluster up --rate auto` (testbed/ceiling.hpp), with the share of the
  // rail bound the plain TCP all-to-all reached at it.
  std::string rate_source = "given";
  double ceiling_pct = 0;
};

// An external command failed; what() is "`cmd args` failed (exit N): stderr".
struct CommandError : std::runtime_error {
  explicit CommandError(const std::string& w) : std::runtime_error(w) {}
};

// Bad input (rate syntax, malformed state file): a one-line message.
struct ClusterInputError : std::runtime_error {
  explicit ClusterInputError(const std::string& w) : std::runtime_error(w) {}
};

// ---- names and addresses (rail r, node i -> 198.18.r.(i+1)) ----
std::string node_name(int node);                 // rc-n<i>: namespace and hostname
std::string bridge_name(int rail);               // rcbr<r>
std::string root_veth_name(int node, int rail);  // rcv<i>r<r> (root side)
std::string rail_if_name(int rail);              // rail<r> (node side)
std::string rail_address(int rail, int node);    // 198.18.r.(i+1)
std::string bridge_address(int rail);            // 198.18.r.254
std::string rail_subnet(int rail);               // 198.18.r.0/24
std::string rail_subnets(int k);                 // the first k, comma-separated

// A tc rate ("1gbit", "500mbit", "2.5Gbit", "100mbps", "1000000") in bits/s.
uint64_t parse_rate(const std::string& text);
// Fills burst_bytes and latency_ms from rate_bps and shaper; throws
// ClusterInputError for a shaper other than "bucket" or "wire".
void choose_shaping(Config& cfg);

// ---- state (/run/railcoll/cluster.conf) ----
std::string state_dir();
std::string state_path();
std::optional<Config> load_state();  // nullopt if no file; ClusterInputError if malformed

bool is_root();

// What of a cluster exists now, found by name (rc-n*, rcbr*, rcv*).
struct Present {
  std::vector<std::string> namespaces, bridges, root_veths;
  bool any() const { return !namespaces.empty() || !bridges.empty() || !root_veths.empty(); }
  std::string summary() const;  // "2 namespaces, 1 bridge, 3 veths"
};
Present scan();

// Locks /run/railcoll (flock) so two up/down never interleave.
class StateLock {
 public:
  StateLock();
  ~StateLock();
  StateLock(const StateLock&) = delete;
  StateLock& operator=(const StateLock&) = delete;

 private:
  int fd_ = -1;
};

// "" unless a root-namespace interface other than ours already has an
// address in 198.18.0.0/15 (the cluster's addresses would clash with it).
std::string address_conflict();

// Creates the cluster and writes the state file. On failure removes
// everything it made and throws CommandError. Call with nothing present.
void up(const Config& cfg);
// Gives every rail of the cluster that is up the rate `rate_bps` (both
// directions; the bucket and queue chosen by choose_shaping) and rewrites the
// state file; `rate_source`/`ceiling_pct` are recorded as they are in `cfg`.
// Throws CommandError.
void set_rate(Config& cfg, uint64_t rate_bps);

// Stops the processes still running inside the nodes (SIGTERM, 3 s, SIGKILL),
// then removes everything named like a cluster part and the state file;
// succeeds when nothing is there. Returns how many processes it stopped.
// Throws CommandError if something stays.
int down();

// Health of each part of a cluster.
struct NodeHealth {
  bool namespace_ok = false;
  std::vector<std::string> rail_problems;  // per rail: "" if fine, else what is wrong
};
struct Health {
  std::vector<std::string> bridge_problems;  // per rail
  std::vector<NodeHealth> nodes;
  bool healthy() const;
};
Health check(const Config& cfg);
// A healthy cluster is up and this process may use it (root): what
// `railcoll cluster status` exits 0 for.
bool usable();

// ---- faults ----
// Rail `rail` of node `node` loses its link (up=false) or gets it back, as a
// NIC whose cable is pulled: `ip -n rc-n<node> link set rail<rail> down|up`.
// Processes in the node see a netlink RTM_NEWLINK without IFF_RUNNING at once;
// the bridge's end of the veth loses its carrier. Throws CommandError.
void set_rail_link(int node, int rail, bool up);
// Flaps that link for `seconds`: down at 0, up at `period`, down at 2*period,
// ... on a fixed schedule (a slow `ip` does not stretch it), and leaves it up.
// Returns how many changes it made (downs plus ups). Throws CommandError.
int flap_rail(int node, int rail, double seconds, double period);

// ---- running programs inside nodes ----
// argv that runs `prog_args` in node `node`'s namespace with its own UTS
// namespace and hostname rc-n<node>.
std::vector<std::string> node_exec_argv(int node, const std::vector<std::string>& prog_args);
// The rsh agent Open MPI's mpirun uses to start orted in a node.
std::string rsh_agent_script();
// `prog` as an absolute path: searched in PATH if it has no '/'. "" if not
// found or not executable.
std::string resolve_program(const std::string& prog);

}  // namespace railcoll::cluster
