// The bootstrap key-value store, served by rank 0 on RAILCOLL_STORE (or
// MASTER_ADDR:MASTER_PORT): ranks publish their addresses and node identity and
// read everyone else's. A get waits (on the server) until the key is set.
#pragma once
#include <atomic>
#include <string>
#include <thread>

namespace railcoll::rt {

class StoreServer {
 public:
  StoreServer(const std::string& address, int port);  // binds at once; throws on failure
  ~StoreServer();
  void stop();

 private:
  void serve();
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  std::thread thread_;
};

class StoreClient {
 public:
  StoreClient(const std::string& address, int port, double deadline);
  ~StoreClient();
  void set(const std::string& key, const std::string& value);
  std::string get(const std::string& key, double deadline);  // waits until set

 private:
  int fd_ = -1;
  std::string where_;
};

}  // namespace railcoll::rt
