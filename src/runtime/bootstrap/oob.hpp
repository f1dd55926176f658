// The out-of-band exchange a communicator is set up through: every rank's
// node identity, rail addresses and nonce, rank 0's job id and the
// communicator's unique name, and the barriers of mapping the node segment.
// Behind it: the key-value store served by rank 0 (StoreOutOfBand, what
// railcoll_comm_init uses), or anything a caller has, e.g. an MPI
// communicator's MPI_Allgather (the MPI interposition layer), as UCC's and
// NCCL's out-of-band bootstrap callbacks allow.
#pragma once
#include <cstddef>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "runtime/bootstrap/identity.hpp"

namespace railcoll::rt {

class OutOfBand {
 public:
  virtual ~OutOfBand() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank contributes `bytes` from `mine` (the same number on every rank);
  // `all` receives size() * bytes, rank r's at r * bytes. No rank returns before
  // every rank has called, so it is a barrier too. Throws RuntimeError when the
  // exchange fails (a rank missing at a deadline, a broken channel).
  virtual void allgather(const void* mine, size_t bytes, void* all) = 0;
};

// Strings of any length from every rank (two exchanges: lengths, then padded bytes).
std::vector<std::string> allgather_strings(OutOfBand& oob, const std::string& mine);
// Every rank says whether its step of set-up worked (`failed`: null, or what
// this rank caught); if any did not, every rank throws: a rank that failed its
// own error, the others one naming the first rank that failed. So no rank is
// left waiting in the next exchange, which a caller's exchange (MPI) may do
// without a deadline.
void all_or_none(OutOfBand& oob, const std::exception_ptr& failed, const std::string& step);

// Fields of a record (length-prefixed, so they may hold any byte).
std::string pack_fields(const std::vector<std::string>& fields);
// false when `packed` is not a whole number of fields.
bool unpack_fields(const std::string& packed, std::vector<std::string>* fields);

class StoreClient;
class StoreServer;

// The exchange through the key-value store rank 0 serves at who.store
// (store.hpp: every client proves the job key first). A single rank needs no
// store. Exchange k uses keys "ag/k/<rank>".
class StoreOutOfBand final : public OutOfBand {
 public:
  // Rank 0 starts serving, every rank connects and authenticates, before `deadline`.
  StoreOutOfBand(const Identity& who, const std::string& job_key, double deadline);
  ~StoreOutOfBand() override;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void allgather(const void* mine, size_t bytes, void* all) override;
  // The end of set-up: rank 0 stops serving once every rank has read all it
  // needs, and the others return only once it has, so the next communicator's
  // store (on the same address) never meets this one's clients.
  void finish();
  // Set-up failed on this rank: every rank still waiting in the store learns
  // `why` at once ("rank r gave up set-up: ..."); rank 0 serves on until every
  // rank has come and gone, or the deadline, so that each learns it.
  void abandon(const std::string& why);

 private:
  int rank_, size_;
  double deadline_;
  uint64_t exchanges_ = 0;
  std::unique_ptr<StoreServer> server_;
  std::unique_ptr<StoreClient> client_;
};

}  // namespace railcoll::rt
