// Socket helpers: listeners bound to a rail's address, connects from a rail's
// address, rails resolved from RAILCOLL_RAILS (interfaces, subnets, addresses).
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "core/errors.hpp"

namespace railcoll::rt {


double now_seconds();
// "0.507 s": a duration for messages.
std::string seconds_text(double s);

// "host:port" -> (host, port); throws RuntimeError(ARG).
std::pair<std::string, int> split_host_port(const std::string& hp);
// The IPv4 address of `host`: itself when it is one, else the first IPv4
// address the system resolver gives (/etc/hosts, DNS; the resolver's own
// timeouts bound the wait). Throws RuntimeError(Bootstrap) naming `what`.
std::string resolve_ipv4(const std::string& host, const std::string& what);

// `congestion`: the congestion controls to try (choose_congestion), set before
// the connection exists, so that the system's default never initialises it:
// BBR, switched away from afterwards, leaves the kernel pacing the socket.
// Sockets a listener accepts inherit its choice.
int tcp_listen(const std::string& address, int port, int* bound_port, const std::string& congestion = "");
// Connects to address:port from local address `from` (empty: any); retries
// until `deadline` while the peer is not listening yet.
int tcp_connect(const std::string& from, const std::string& address, int port, double deadline,
                const std::string& congestion = "");
// Starts a non-blocking connect from `from`; the fd (writable when connected), or -1.
int tcp_connect_start(const std::string& from, const std::string& address, int port,
                      const std::string& congestion = "");
int unix_listen(const std::string& abstract_name);
int unix_connect(const std::string& abstract_name, double deadline);
int accept_until(int listen_fd, double deadline);
void set_nonblocking(int fd);
// Who is on the other end, for log lines: "198.18.0.2:40112" or "local process 1234".
std::string describe_peer(int fd);
void tune_socket(int fd, bool tcp);
// TCP_NOTSENT_LOWAT on a rail socket (TransportSettings::notsent_lowat); 0 leaves it alone.
void limit_unsent(int fd, int bytes);
// Back to the kernel's unsent limit (net.ipv4.tcp_notsent_lowat; by default none).
void unlimit_unsent(int fd);
// The first congestion control of a comma-separated list (TransportSettings::tcp_congestion)
// that the kernel lets this process set on a TCP socket; "" when the list is
// empty or none could be set (the system's default stays). Returns its name.
std::string choose_congestion(int fd, const std::string& names);

// Writes/reads exactly n bytes on a blocking-mode call with a deadline.
void write_all(int fd, const void* data, size_t n, double deadline, const std::string& what);
void read_all(int fd, void* data, size_t n, double deadline, const std::string& what);

// An up IPv4 interface of this host: its name and first address.
struct Interface {
  std::string name, addr;
};
// A rail chosen: its local address, its interface ("" for an address given as
// such), and why it was chosen ("prefix 'eth'", "subnet 10.0.0.0/24", ...).
struct ChosenRail {
  std::string addr, name, why;
};

// The rails RAILCOLL_RAILS chooses among `ifs` (sorted by name), in the
// grammar NCCL_SOCKET_IFNAME / NCCL_IB_HCA use, plus subnets and addresses:
//   ""               every up non-loopback interface (loopback if none)
//   eth,ib           interfaces whose names begin with a prefix (an exact
//                    name matches itself alone), in the order of the list
//   =rail0,rail1     exactly these names
//   ^lo,docker       every non-loopback interface except those with these
//                    prefixes (^=name,...: exact names)
//   10.0.1.0/24      the interface with an address in that subnet
//   10.0.1.5         that address (need not be an interface's: loopback ones)
// Throws RuntimeError(Arg) for an entry that matches nothing, and when no rail
// is left.
std::vector<ChosenRail> choose_rails(const std::string& spec, const std::vector<Interface>& ifs);
// This host's up IPv4 interfaces, sorted by name.
std::vector<Interface> host_interfaces();
// The local IPv4 address of each rail: choose_rails on this host's interfaces.
std::vector<std::string> resolve_rails(const std::string& spec);

}  // namespace railcoll::rt
