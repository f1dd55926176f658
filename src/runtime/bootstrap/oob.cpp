// The out-of-band exchange (oob.hpp): helpers over any OutOfBand, and the one
// through rank 0's key-value store.
#include "runtime/bootstrap/oob.hpp"

#include <cstring>

#include "core/errors.hpp"
#include "runtime/bootstrap/net.hpp"
#include "runtime/bootstrap/store.hpp"

namespace railcoll::rt {

namespace {
// A record larger than this is a bug or an attack, not a set-up message.
constexpr uint64_t kMaxRecord = 1 << 20;
}  // namespace

std::vector<std::string> allgather_strings(OutOfBand& oob, const std::string& mine) {
  const int n = oob.size();
  std::vector<uint64_t> lengths(n);
  uint64_t len = mine.size();
  oob.allgather(&len, sizeof len, lengths.data());
  uint64_t longest = 0;
  for (int r = 0; r < n; ++r) {
    if (lengths[r] > kMaxRecord)
      throw RuntimeError(Status::Protocol, "rank " + std::to_string(r) + " sent a set-up record of " +
                                               std::to_string(lengths[r]) + " bytes");
    longest = std::max(longest, lengths[r]);
  }
  std::string padded = mine;
  padded.resize(longest, '\0');
  std::string all(longest * n, '\0');
  if (longest > 0) oob.allgather(padded.data(), longest, all.data());
  std::vector<std::string> out(n);
  for (int r = 0; r < n; ++r) out[r] = all.substr(r * longest, lengths[r]);
  return out;
}

void all_or_none(OutOfBand& oob, const std::exception_ptr& failed, const std::string& step) {
  const int n = oob.size();
  std::vector<char> ok(n);
  char mine = failed ? 0 : 1;
  oob.allgather(&mine, 1, ok.data());
  if (failed) std::rethrow_exception(failed);
  for (int r = 0; r < n; ++r)
    if (!ok[r])
      throw RuntimeError(Status::Bootstrap,
                         "rank " + std::to_string(r) + " could not " + step + " (its own error says why)");
}

std::string pack_fields(const std::vector<std::string>& fields) {
  std::string out;
  for (auto& f : fields) {
    uint32_t n = static_cast<uint32_t>(f.size());
    out.append(reinterpret_cast<const char*>(&n), sizeof n);
    out += f;
  }
  return out;
}

bool unpack_fields(const std::string& packed, std::vector<std::string>* fields) {
  fields->clear();
  size_t at = 0;
  while (at < packed.size()) {
    uint32_t n;
    if (packed.size() - at < sizeof n) return false;
    memcpy(&n, packed.data() + at, sizeof n);
    at += sizeof n;
    if (packed.size() - at < n) return false;
    fields->push_back(packed.substr(at, n));
    at += n;
  }
  return true;
}

// ---------------------------------------------------------------- the store

StoreOutOfBand::StoreOutOfBand(const Identity& who, const std::string& job_key, double deadline)
    : rank_(who.rank), size_(who.size), deadline_(deadline) {
  if (size_ < 1 || rank_ < 0 || rank_ >= size_)
    throw RuntimeError(Status::Bootstrap,
                       "rank " + std::to_string(rank_) + " is not in [0, size " + std::to_string(size_) + ")");
  if (size_ == 1) return;
  auto hp = split_host_port(who.store);
  // MASTER_ADDR may be a host name (torchrun's default is one).
  const std::string address = resolve_ipv4(hp.first, "the store's host");
  if (rank_ == 0) {
    try {
      server_ = std::make_unique<StoreServer>(address, hp.second, job_key, who.job_id, size_);
    } catch (const RuntimeError& e) {
      throw RuntimeError(Status::Bootstrap, std::string("rank 0 cannot serve the store: ") + e.what());
    }
  }
  client_ = std::make_unique<StoreClient>(address, hp.second, job_key, who.job_id, rank_, deadline_);
}

StoreOutOfBand::~StoreOutOfBand() {
  client_.reset();
  if (server_) server_->stop();
}

void StoreOutOfBand::allgather(const void* mine, size_t bytes, void* all) {
  char* out = static_cast<char*>(all);
  if (size_ == 1) {
    memcpy(out, mine, bytes);
    return;
  }
  const std::string prefix = "ag/" + std::to_string(exchanges_++) + "/";
  client_->set(prefix + std::to_string(rank_), std::string(static_cast<const char*>(mine), bytes));
  for (int r = 0; r < size_; ++r) {
    std::string v = client_->get(prefix + std::to_string(r), deadline_);
    if (v.size() != bytes)
      throw RuntimeError(Status::Protocol, "rank " + std::to_string(r) + " gave " + std::to_string(v.size()) +
                                               " bytes to set-up exchange " + std::to_string(exchanges_ - 1) +
                                               ", this rank " + std::to_string(bytes));
    memcpy(out + r * bytes, v.data(), bytes);
  }
}

void StoreOutOfBand::abandon(const std::string& why) {
  if (client_) client_->give_up(why);
  client_.reset();
  if (server_) server_->stop_when_everyone_left(deadline_);
}

void StoreOutOfBand::finish() {
  if (size_ == 1) return;
  client_->set("done/" + std::to_string(rank_), "1");
  if (rank_ == 0) {
    for (int r = 0; r < size_; ++r) client_->get("done/" + std::to_string(r), deadline_);
    client_.reset();
    server_->stop();
  } else {
    client_->wait_closed(deadline_);
    client_.reset();
  }
}

}  // namespace railcoll::rt
