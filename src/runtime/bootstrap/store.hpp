// The bootstrap key-value store, served by rank 0 on RAILCOLL_STORE (or
// MASTER_ADDR:MASTER_PORT): ranks publish their addresses and node identity and
// read everyone else's. A get waits (on the server) until the key is set.
//
// Every connection starts with a mutual challenge-response over the job key
// (RAILCOLL_JOB_KEY) and the job id: the server sends a nonce, the client
// answers with its nonce, the rank it says it is, its job id and an HMAC of
// them all, the server proves itself the same way. A client that fails is told
// why in one line (never anything about the key), closed and logged; it never
// reads or writes a key.
//
// Set-up fails fast on every rank, not at the deadline: the store fails (every
// get of a key not yet set, waiting or later, is answered with the reason)
// when a rank that has not joined yet fails the handshake ("the ranks'
// RAILCOLL_JOB_KEY differ"), or when a joined rank gives up set-up (its own
// error). Someone who can reach the store while a job starts can therefore
// make the start fail by claiming to be a rank that has not joined yet, never
// join or read anything.
//
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

constexpr size_t kMaxStoreJobId = 1024;

// Server side of the protocol for many clients, driven by bytes in, bytes out.
// size: the ranks of the job (a client claims one of them).
class StoreServerCore {
 public:
  StoreServerCore(std::string key, std::string job, int size)
      : key_(std::move(key)), job_(std::move(job)), size_(size), seen_(size > 0 ? size : 0, 0) {}
  // A new client: the challenge to send it (nonce: kStoreNonce random bytes).
  std::string open(int client, const std::string& nonce);
  // Bytes from a client. Appends (client, bytes) to send; returns false when the
  // client must be dropped, with the reason in *why (what it was told, if
  // anything, is already in *out).
  bool feed(int client, const char* data, size_t n, std::vector<std::pair<int, std::string>>* out, std::string* why);
  void close(int client);
  bool authenticated(int client) const;
  // Why set-up failed ("" while it has not): gets of keys not set are answered so.
  const std::string& failed() const { return failed_; }
  // Every rank but 0 has come (authenticated or refused) and no authenticated
  // client is connected: a failed store may stop.
  bool everyone_left() const;

 private:
  struct Client {
    std::string nonce, in;
    bool authenticated = false;
    int rank = -1;
  };
  bool handshake(int client, Client& c, std::vector<std::pair<int, std::string>>* out, std::string* why);
  void fail(const std::string& why, std::vector<std::pair<int, std::string>>* out);
  std::string key_, job_;
  int size_;
  std::vector<char> seen_;  // [rank] came to the store (authenticated or refused)
  std::string failed_;
  std::map<int, Client> clients_;
  std::map<std::string, std::string> kv_;
  std::multimap<std::string, int> waiting_;  // key -> client
};

// The proofs of the handshake, and a client's whole answer to the challenge
// (also used by tests that play a client or a stranger).
std::string store_client_proof(const std::string& key, const std::string& job, const std::string& server_nonce,
                               const std::string& client_nonce, int rank);
std::string store_server_proof(const std::string& key, const std::string& job, const std::string& server_nonce,
                               const std::string& client_nonce, int rank);
std::string store_answer(const std::string& key, const std::string& job, const std::string& server_nonce,
                         const std::string& client_nonce, int rank);

class StoreServer {
 public:
  // Binds at once; throws on failure. size: the ranks of the job.
  StoreServer(const std::string& address, int port, const std::string& key, const std::string& job, int size);
  ~StoreServer();
  // Stops serving now.
  void stop();
  // Set-up failed: serves on until every rank has come and gone (each learns
  // why from the store), or until `deadline`, then stops.
  void stop_when_everyone_left(double deadline);

 private:
  void serve();
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  StoreServerCore core_;
  std::atomic<double> linger_until_{0};  // 0: serve; > 0: until everyone left or then; < 0: stop now
  std::thread thread_;
};

class StoreClient {
 public:
  // Connects as `rank` and authenticates (both ways) before the deadline.
  StoreClient(const std::string& address, int port, const std::string& key, const std::string& job, int rank,
              double deadline);
  ~StoreClient();
  void set(const std::string& key, const std::string& value);
  // Waits until the key is set; throws Bootstrap at once when set-up failed
  // (the store says why).
  std::string get(const std::string& key, double deadline);
  // This rank gives up set-up: every rank still waiting learns `why` at once.
  // Best effort; never throws.
  void give_up(const std::string& why);
  // Waits until the server closes this connection (it stopped serving).
  void wait_closed(double deadline);

 private:
  int fd_ = -1;
  std::string where_;
};

}  // namespace railcoll::rt
