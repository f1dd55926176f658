// The bootstrap key-value store, served by rank 0 on RAILCOLL_STORE (or
// MASTER_ADDR:MASTER_PORT): ranks publish their addresses and node identity and
// read everyone else's. A get waits (on the server) until the key is set.
//
// Every connection starts with a mutual challenge-response over the job key
// (RAILCOLL_JOB_KEY) and the job id: the server sends a nonce, the client
// answers with its nonce and an HMAC of both, the server proves itself the same
// way. A client that fails is closed and logged; it never reads or writes a key.
// StoreServerCore is the protocol without sockets (so it can be fuzzed).
#pragma once
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace railcoll::rt {

constexpr size_t kStoreNonce = 16;
constexpr uint32_t kMaxStoreMessage = 1 << 20;

// Server side of the protocol for many clients, driven by bytes in, bytes out.
class StoreServerCore {
 public:
  StoreServerCore(std::string key, std::string job) : key_(std::move(key)), job_(std::move(job)) {}
  // A new client: the challenge to send it (nonce: kStoreNonce random bytes).
  std::string open(int client, const std::string& nonce);
  // Bytes from a client. Appends (client, bytes) to send; returns false when the
  // client must be dropped, with the reason in *why.
  bool feed(int client, const char* data, size_t n, std::vector<std::pair<int, std::string>>* out, std::string* why);
  void close(int client);
  bool authenticated(int client) const;

 private:
  struct Client {
    std::string nonce, in;
    bool authenticated = false;
  };
  std::string key_, job_;
  std::map<int, Client> clients_;
  std::map<std::string, std::string> kv_;
  std::multimap<std::string, int> waiting_;  // key -> client
};

// The proofs of the handshake (also used by tests that play a stranger).
std::string store_client_proof(const std::string& key, const std::string& job, const std::string& server_nonce,
                               const std::string& client_nonce);
std::string store_server_proof(const std::string& key, const std::string& job, const std::string& server_nonce,
                               const std::string& client_nonce);

class StoreServer {
 public:
  // Binds at once; throws on failure. `who` names the server in log lines.
  StoreServer(const std::string& address, int port, const std::string& key, const std::string& job);
  ~StoreServer();
  void stop();

 private:
  void serve();
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  StoreServerCore core_;
  std::thread thread_;
};

class StoreClient {
 public:
  // Connects and authenticates (both ways) before the deadline.
  StoreClient(const std::string& address, int port, const std::string& key, const std::string& job, double deadline);
  ~StoreClient();
  void set(const std::string& key, const std::string& value);
  std::string get(const std::string& key, double deadline);  // waits until set
  // Waits until the server closes this connection (it stopped serving).
  void wait_closed(double deadline);

 private:
  int fd_ = -1;
  std::string where_;
};

}  // namespace railcoll::rt
