#include "runtime/bootstrap/store.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "runtime/bootstrap/auth.hpp"
#include "runtime/bootstrap/net.hpp"

namespace railcoll::rt {

// The handshake: challenge "RCS3" nonce; answer "RCA3" nonce proof rank(i32)
// job-length(u16) job; then "RCO3" proof (accepted), or "RCN3" length(u16)
// reason and the connection closes (refused). Then requests are u32 length,
// then 'S' key '\0' value | 'G' key | 'F' reason (this rank gives up set-up);
// the reply to G is u32 length, value; or kFailedReply, u32 length, the reason
// set-up failed.
namespace {
constexpr char kChallenge[4] = {'R', 'C', 'S', '3'};
constexpr char kAnswer[4] = {'R', 'C', 'A', '3'};
constexpr char kAccepted[4] = {'R', 'C', 'O', '3'};
constexpr char kRefused[4] = {'R', 'C', 'N', '3'};
constexpr size_t kAnswerFixed = 4 + kStoreNonce + 32 + 4 + 2;  // then the job id
constexpr size_t kAcceptedBytes = 4 + 32;
constexpr uint32_t kFailedReply = 0xffffffffu;

std::string proof(const char* role, const std::string& key, const std::string& job, const std::string& server_nonce,
                  const std::string& client_nonce, int rank) {
  std::string msg = std::string("railcoll store ") + role + '\0' + job + '\0' + server_nonce + client_nonce +
                    std::string(reinterpret_cast<const char*>(&rank), sizeof rank);
  Digest d = hmac_sha256(key, msg);
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

std::string u32_prefixed(const std::string& body) {
  uint32_t n = static_cast<uint32_t>(body.size());
  return std::string(reinterpret_cast<char*>(&n), 4) + body;
}

std::string request(char op, const std::string& key, const std::string& value) {
  return u32_prefixed(std::string(1, op) + key + (op == 'S' ? std::string(1, '\0') + value : ""));
}

std::string failed_reply(const std::string& why) {
  uint32_t marker = kFailedReply;
  return std::string(reinterpret_cast<char*>(&marker), 4) + u32_prefixed(why);
}

}  // namespace

std::string store_client_proof(const std::string& key, const std::string& job, const std::string& server_nonce,
                               const std::string& client_nonce, int rank) {
  return proof("client", key, job, server_nonce, client_nonce, rank);
}
std::string store_server_proof(const std::string& key, const std::string& job, const std::string& server_nonce,
                               const std::string& client_nonce, int rank) {
  return proof("server", key, job, server_nonce, client_nonce, rank);
}
std::string store_answer(const std::string& key, const std::string& job, const std::string& server_nonce,
                         const std::string& client_nonce, int rank) {
  uint16_t job_len = static_cast<uint16_t>(std::min(job.size(), kMaxStoreJobId));
  return std::string(kAnswer, 4) + client_nonce + store_client_proof(key, job, server_nonce, client_nonce, rank) +
         std::string(reinterpret_cast<const char*>(&rank), 4) + std::string(reinterpret_cast<char*>(&job_len), 2) +
         job.substr(0, job_len);
}

// ---------------------------------------------------------------- the protocol --

std::string StoreServerCore::open(int client, const std::string& nonce) {
  clients_[client] = Client{nonce, {}, false, -1};
  return std::string(kChallenge, 4) + nonce;
}

void StoreServerCore::close(int client) {
  clients_.erase(client);
  for (auto it = waiting_.begin(); it != waiting_.end();) it = it->second == client ? waiting_.erase(it) : std::next(it);
}

bool StoreServerCore::authenticated(int client) const {
  auto it = clients_.find(client);
  return it != clients_.end() && it->second.authenticated;
}

bool StoreServerCore::everyone_left() const {
  for (int r = 1; r < size_; ++r)
    if (!seen_[r]) return false;
  for (auto& kv : clients_)
    if (kv.second.authenticated) return false;
  return true;
}

// Set-up failed: every waiting get, and every later get of a key not set, is
// answered with the reason. The first reason stays.
void StoreServerCore::fail(const std::string& why, std::vector<std::pair<int, std::string>>* out) {
  if (!failed_.empty()) return;
  failed_ = why;
  for (auto& w : waiting_) out->push_back({w.second, failed_reply(failed_)});
  waiting_.clear();
}

// The client's answer to the challenge: false (with *why) when it must go.
bool StoreServerCore::handshake(int client, Client& c, std::vector<std::pair<int, std::string>>* out,
                                std::string* why) {
  size_t check = std::min(c.in.size(), sizeof kAnswer);
  if (memcmp(c.in.data(), kAnswer, check) != 0) {
    *why = "it does not speak the railcoll store protocol (version 3)";
    return false;
  }
  if (c.in.size() < kAnswerFixed) return true;
  int rank;
  uint16_t job_len;
  memcpy(&rank, c.in.data() + 4 + kStoreNonce + 32, 4);
  memcpy(&job_len, c.in.data() + 4 + kStoreNonce + 36, 2);
  if (job_len > kMaxStoreJobId) {
    *why = "malformed answer (a job id of " + std::to_string(job_len) + " bytes)";
    return false;
  }
  if (c.in.size() < kAnswerFixed + job_len) return true;
  const std::string client_nonce = c.in.substr(4, kStoreNonce), job = c.in.substr(kAnswerFixed, job_len);
  const std::string expected = proof("client", key_, job_, c.nonce, client_nonce, rank);
  const bool a_rank = rank >= 0 && rank < size_;
  if (!equal_constant_time(expected.data(), c.in.data() + 4 + kStoreNonce, 32)) {
    // Nothing about the key is told; whether the job ids differ is not a secret.
    const bool other_job = job != job_;
    *why = other_job ? "wrong job key or job id (RAILCOLL_JOB_KEY, RAILCOLL_JOB_ID): its job id differs"
                     : "wrong job key or job id (RAILCOLL_JOB_KEY, RAILCOLL_JOB_ID): its key differs";
    std::string told = other_job ? "this rank's RAILCOLL_JOB_ID differs from rank 0's"
                                 : "the ranks' RAILCOLL_JOB_KEY differ: this rank's does not match rank 0's";
    uint16_t n = static_cast<uint16_t>(told.size());
    out->push_back({client, std::string(kRefused, 4) + std::string(reinterpret_cast<char*>(&n), 2) + told});
    // A rank of the job that has not joined yet cannot join: every rank fails now.
    if (a_rank && rank > 0 && !seen_[rank]) {
      seen_[rank] = 1;
      fail("rank " + std::to_string(rank) + " cannot join: " +
               (other_job ? "its RAILCOLL_JOB_ID differs from rank 0's"
                          : "the ranks' RAILCOLL_JOB_KEY differ (rank " + std::to_string(rank) +
                                "'s does not match rank 0's)"),
           out);
    }
    return false;
  }
  if (!a_rank) {
    *why = "it says it is rank " + std::to_string(rank) + " of " + std::to_string(size_);
    return false;
  }
  c.authenticated = true;
  c.rank = rank;
  seen_[rank] = 1;
  c.in.erase(0, kAnswerFixed + job_len);
  out->push_back({client, std::string(kAccepted, 4) + proof("server", key_, job_, c.nonce, client_nonce, rank)});
  return true;
}

bool StoreServerCore::feed(int client, const char* data, size_t n, std::vector<std::pair<int, std::string>>* out,
                           std::string* why) {
  auto found = clients_.find(client);
  if (found == clients_.end()) {
    *why = "unknown client";
    return false;
  }
  Client& c = found->second;
  c.in.append(data, n);
  if (!c.authenticated) {
    if (!handshake(client, c, out, why)) return false;
    if (!c.authenticated) return true;  // the answer is not all here yet
  }
  while (c.in.size() >= 4) {
    uint32_t len;
    memcpy(&len, c.in.data(), 4);
    if (len == 0 || len > kMaxStoreMessage) {
      *why = "malformed request (length " + std::to_string(len) + ")";
      return false;
    }
    if (c.in.size() < 4 + size_t(len)) break;
    std::string body = c.in.substr(4, len);
    c.in.erase(0, 4 + size_t(len));
    if (body[0] == 'S') {
      auto z = body.find('\0');
      if (z == std::string::npos) {
        *why = "malformed set request (no value)";
        return false;
      }
      std::string key = body.substr(1, z - 1), value = body.substr(z + 1);
      kv_[key] = value;
      auto range = waiting_.equal_range(key);
      for (auto it = range.first; it != range.second; ++it) out->push_back({it->second, u32_prefixed(value)});
      waiting_.erase(range.first, range.second);
    } else if (body[0] == 'G') {
      std::string key = body.substr(1);
      if (auto it = kv_.find(key); it != kv_.end())
        out->push_back({client, u32_prefixed(it->second)});
      else if (!failed_.empty())
        out->push_back({client, failed_reply(failed_)});
      else
        waiting_.emplace(key, client);
    } else if (body[0] == 'F') {
      fail("rank " + std::to_string(c.rank) + " gave up set-up: " + body.substr(1), out);
    } else {
      *why = "unknown request type";
      return false;
    }
  }
  return true;
}

// ---------------------------------------------------------------- the server --

StoreServer::StoreServer(const std::string& address, int port, const std::string& key, const std::string& job,
                         int size)
    : core_(key, job, size) {
  listen_fd_ = tcp_listen(address, port, nullptr);
  if (pipe(wake_) != 0) throw RuntimeError(Status::Bootstrap, "pipe failed");
  thread_ = std::thread([this] { serve(); });
}

StoreServer::~StoreServer() { stop(); }

void StoreServer::stop() {
  if (thread_.joinable()) {
    linger_until_.store(-1);
    char c = 0;
    (void)!write(wake_[1], &c, 1);
    thread_.join();
  }
  for (int* fd : {&listen_fd_, &wake_[0], &wake_[1]})
    if (*fd >= 0) close(*fd), *fd = -1;
}

void StoreServer::stop_when_everyone_left(double deadline) {
  if (thread_.joinable()) {
    linger_until_.store(std::max(deadline, 1e-9));
    char c = 0;
    (void)!write(wake_[1], &c, 1);
    thread_.join();  // the thread ends itself, by the deadline at the latest
  }
  stop();
}

void StoreServer::serve() {
  std::vector<int> clients;
  auto refuse = [&](int fd, const std::string& why) {
    fprintf(stderr, "railcoll: the store refused a connection from %s: %s\n", describe_peer(fd).c_str(), why.c_str());
  };
  auto drop = [&](size_t i) {
    core_.close(clients[i]);
    close(clients[i]);
    clients[i] = -1;
  };
  // What the core says to a client (a refusal, too, goes before the close).
  auto send_out = [&](std::vector<std::pair<int, std::string>>& out, int only) {
    for (auto& o : out) {
      if (o.second.empty() || (only >= 0 && o.first != only)) continue;
      if (std::find(clients.begin(), clients.end(), o.first) == clients.end()) continue;
      try {
        write_all(o.first, o.second.data(), o.second.size(), now_seconds() + 10, "store client");
      } catch (...) {
      }
      o.second.clear();
    }
  };
  for (;;) {
    const double linger = linger_until_.load();  // 0: serve; > 0: until everyone left; < 0: stop
    if (linger < 0 || (linger > 0 && (core_.everyone_left() || now_seconds() > linger))) break;
    std::vector<pollfd> p{{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (int fd : clients) p.push_back({fd, POLLIN, 0});
    if (poll(p.data(), p.size(), linger > 0 ? 50 : 1000) < 0 && errno != EINTR) break;
    if (p[0].revents) {
      char c;
      (void)!read(wake_[0], &c, 1);
      continue;
    }
    std::vector<std::pair<int, std::string>> out;
    if (p[1].revents & POLLIN) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        clients.push_back(fd);
        out.push_back({fd, core_.open(fd, random_bytes(kStoreNonce))});
      }
    }
    for (size_t i = 2; i < p.size(); ++i) {
      if (!p[i].revents) continue;
      size_t ci = i - 2;
      char buf[65536];
      ssize_t r = read(clients[ci], buf, sizeof buf);
      if (r <= 0) {
        if (!core_.authenticated(clients[ci])) refuse(clients[ci], "it closed the connection before authenticating");
        drop(ci);
        continue;
      }
      std::string why;
      if (!core_.feed(clients[ci], buf, static_cast<size_t>(r), &out, &why)) {
        refuse(clients[ci], why);
        send_out(out, clients[ci]);
        drop(ci);
      }
    }
    send_out(out, -1);
    clients.erase(std::remove(clients.begin(), clients.end(), -1), clients.end());
  }
  // The listener goes first: a client that sees its connection close may at
  // once connect for the next communicator, and must not land in this backlog.
  close(listen_fd_);
  listen_fd_ = -1;
  for (int fd : clients) close(fd);
}

// ---------------------------------------------------------------- the client --

StoreClient::StoreClient(const std::string& address, int port, const std::string& key, const std::string& job,
                         int rank, double deadline)
    : where_("the store at " + address + ":" + std::to_string(port)) {
  try {
    fd_ = tcp_connect("", address, port, deadline);
  } catch (const RuntimeError& e) {
    throw RuntimeError(Status::Bootstrap, "cannot reach " + where_ + " (is rank 0 running?): " + e.what());
  }
  try {
    char challenge[4 + kStoreNonce];
    read_all(fd_, challenge, sizeof challenge, deadline, where_);
    if (memcmp(challenge, kChallenge, 4) != 0)
      throw RuntimeError(Status::Bootstrap, where_ + " does not speak the railcoll store protocol (version 3)");
    std::string server_nonce(challenge + 4, kStoreNonce), client_nonce = random_bytes(kStoreNonce);
    std::string answer = store_answer(key, job, server_nonce, client_nonce, rank);
    write_all(fd_, answer.data(), answer.size(), deadline, where_);
    char accepted[kAcceptedBytes];
    read_all(fd_, accepted, 4, deadline, where_);
    if (memcmp(accepted, kRefused, 4) == 0) {  // told why, in one line
      uint16_t n = 0;
      read_all(fd_, &n, 2, deadline, where_);
      std::string told(n, '\0');
      read_all(fd_, told.data(), n, deadline, where_);
      throw RuntimeError(Status::Bootstrap, where_ + " refused this rank: " + told);
    }
    read_all(fd_, accepted + 4, kAcceptedBytes - 4, deadline, where_);
    std::string expected = proof("server", key, job, server_nonce, client_nonce, rank);
    if (memcmp(accepted, kAccepted, 4) != 0 || !equal_constant_time(accepted + 4, expected.data(), 32))
      throw RuntimeError(Status::Bootstrap, where_ + " failed to prove it knows the job key (the ranks' "
                                                     "RAILCOLL_JOB_KEY or RAILCOLL_JOB_ID differ?)");
  } catch (const RuntimeError& e) {
    close(fd_);
    fd_ = -1;
    if (e.status == Status::Bootstrap) throw;
    throw RuntimeError(Status::Bootstrap, std::string(e.what()) + " during the handshake with " + where_);
  }
}

void StoreClient::wait_closed(double deadline) {
  for (;;) {
    char c;
    ssize_t r = recv(fd_, &c, 1, MSG_DONTWAIT);
    if (r == 0) return;
    if (r > 0) throw RuntimeError(Status::Protocol, where_ + " sent something after set-up");
    if (errno != EAGAIN && errno != EINTR) return;  // reset: closed too
    double left = deadline - now_seconds();
    if (left <= 0)
      throw RuntimeError(Status::Timeout, "timed out waiting for " + where_ +
                                              " to close at the end of set-up (a rank did not finish starting)");
    pollfd p{fd_, POLLIN, 0};
    poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
  }
}

StoreClient::~StoreClient() {
  if (fd_ >= 0) close(fd_);
}

void StoreClient::set(const std::string& key, const std::string& value) {
  std::string f = request('S', key, value);
  write_all(fd_, f.data(), f.size(), now_seconds() + 30, where_);
}

void StoreClient::give_up(const std::string& why) {
  std::string f = u32_prefixed("F" + why.substr(0, 4000));
  try {
    write_all(fd_, f.data(), f.size(), now_seconds() + 1, where_);
  } catch (...) {  // the others then learn it at their deadline
  }
}

std::string StoreClient::get(const std::string& key, double deadline) {
  std::string f = request('G', key, "");
  write_all(fd_, f.data(), f.size(), deadline, where_);
  uint32_t n = 0;
  try {
    read_all(fd_, &n, 4, deadline, where_);
    const bool failed = n == kFailedReply;
    if (failed) read_all(fd_, &n, 4, deadline, where_);
    if (n > kMaxStoreMessage) throw RuntimeError(Status::Protocol, "malformed reply from " + where_);
    std::string v(n, '\0');
    read_all(fd_, v.data(), n, deadline, where_);
    if (failed) throw RuntimeError(Status::Bootstrap, v);
    return v;
  } catch (const RuntimeError& e) {
    if (e.status == Status::Timeout)
      throw RuntimeError(Status::Timeout, "timed out waiting for '" + key + "' in " + where_ +
                                                    " (a rank did not start or died during start-up)");
    throw;
  }
}

}  // namespace railcoll::rt
