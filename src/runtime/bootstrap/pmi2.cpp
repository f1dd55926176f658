// The PMI-2 client (MPICH's PMI-2 API as Slurm's libpmi2 implements it:
// PMI2_Init, PMI2_KVS_Put, PMI2_KVS_Fence, PMI2_KVS_Get), for launchers that
// offer PMI-2 but not PMIx (`srun --mpi=pmi2`), loaded with dlopen when one
// started this process (launcher_exchange.hpp). Values are text of at most
// PMI2_MAX_VALLEN bytes, so a record goes as hex in numbered pieces. PMI-2 has
// no timeouts: a rank that never comes leaves the others in the fence until
// the launcher ends the job (srun does when a task exits).
#ifdef RAILCOLL_HAVE_PMI2  // cmake/launchers.cmake: the header was found
#include <slurm/pmi2.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "runtime/bootstrap/auth.hpp"
#include "runtime/bootstrap/launcher_exchange.hpp"

namespace railcoll::rt {

namespace {

constexpr size_t kPieceHex = 1000;  // hex characters per value, under PMI2_MAX_VALLEN

class Pmi2Client {
 public:
  static Pmi2Client& get() {
    static Pmi2Client client;
    return client;
  }
  ~Pmi2Client() {
    if (lib_) finalize_();
  }
  int rank = 0, size = 0;
  std::string job;
  decltype(&PMI2_KVS_Put) put = nullptr;
  decltype(&PMI2_KVS_Fence) fence = nullptr;
  decltype(&PMI2_KVS_Get) get_value = nullptr;

 private:
  Pmi2Client() {
    void* lib = load_client_library("libpmi2.so.0", "a PMI-2 launcher started this process (PMI_FD is set)",
                                    "Debian: libpmi2-0");
    auto sym = [lib](const char* name) { return client_symbol(lib, "libpmi2.so.0", name); };
    auto init = reinterpret_cast<decltype(&PMI2_Init)>(sym("PMI2_Init"));
    auto job_id = reinterpret_cast<decltype(&PMI2_Job_GetId)>(sym("PMI2_Job_GetId"));
    finalize_ = reinterpret_cast<decltype(&PMI2_Finalize)>(sym("PMI2_Finalize"));
    put = reinterpret_cast<decltype(&PMI2_KVS_Put)>(sym("PMI2_KVS_Put"));
    fence = reinterpret_cast<decltype(&PMI2_KVS_Fence)>(sym("PMI2_KVS_Fence"));
    get_value = reinterpret_cast<decltype(&PMI2_KVS_Get)>(sym("PMI2_KVS_Get"));
    int spawned = 0, appnum = 0;
    if (int rc = init(&spawned, &size, &rank, &appnum); rc != PMI2_SUCCESS)
      throw RuntimeError(Status::Bootstrap, "PMI-2: PMI2_Init failed (" + std::to_string(rc) + ")");
    lib_ = lib;
    char id[PMI2_MAX_VALLEN] = {0};
    if (int rc = job_id(id, sizeof id); rc != PMI2_SUCCESS)
      throw RuntimeError(Status::Bootstrap, "PMI-2: PMI2_Job_GetId failed (" + std::to_string(rc) + ")");
    job = id;
  }
  void* lib_ = nullptr;
  decltype(&PMI2_Finalize) finalize_ = nullptr;
};

class Pmi2Exchange final : public LauncherExchange {
 public:
  Pmi2Exchange() : c_(Pmi2Client::get()) {
    static std::atomic<unsigned> instances{0};  // every rank makes communicators in the same order
    instance_ = instances++;
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    host_ = host;
  }
  const char* name() const override { return "PMI-2"; }
  int rank() const override { return c_.rank; }
  int size() const override { return c_.size; }
  std::string node() const override { return host_; }
  std::string job() const override { return "pmi2." + c_.job; }

  void allgather(const void* mine, size_t bytes, void* all) override {
    // One key space for the whole job (PMI-2 keys are not per process): the rank is in the key.
    const std::string prefix = "rc" + std::to_string(instance_) + "." + std::to_string(exchanges_++) + ".";
    const std::string hex = to_hex(mine, bytes);
    const size_t pieces = (hex.size() + kPieceHex - 1) / kPieceHex;  // the same on every rank
    for (size_t p = 0; p < pieces; ++p)
      if (int rc = c_.put(key(prefix, c_.rank, p).c_str(), hex.substr(p * kPieceHex, kPieceHex).c_str());
          rc != PMI2_SUCCESS)
        throw RuntimeError(Status::Bootstrap, "PMI-2: PMI2_KVS_Put failed (" + std::to_string(rc) + ")");
    if (int rc = c_.fence(); rc != PMI2_SUCCESS)
      throw RuntimeError(Status::Bootstrap, "PMI-2: PMI2_KVS_Fence failed (" + std::to_string(rc) + ")");
    std::vector<char> value(PMI2_MAX_VALLEN + 1);
    for (int r = 0; r < c_.size; ++r) {
      std::string theirs;
      for (size_t p = 0; p < pieces; ++p) {
        int len = 0;
        int rc = c_.get_value(c_.job.c_str(), r, key(prefix, r, p).c_str(), value.data(), PMI2_MAX_VALLEN, &len);
        if (rc != PMI2_SUCCESS || len < 0 || len > PMI2_MAX_VALLEN)
          throw RuntimeError(Status::Bootstrap, "PMI-2: PMI2_KVS_Get of rank " + std::to_string(r) + "'s record failed (" +
                                                    std::to_string(rc) + ")");
        theirs.append(value.data(), strnlen(value.data(), static_cast<size_t>(len)));
      }
      const std::string got = from_hex(theirs);
      if (got.size() != bytes)
        throw RuntimeError(Status::Protocol, "PMI-2: rank " + std::to_string(r) + "'s set-up record is not " +
                                                 std::to_string(bytes) + " bytes");
      if (bytes > 0) memcpy(static_cast<char*>(all) + r * bytes, got.data(), bytes);
    }
  }

 private:
  static std::string key(const std::string& prefix, int rank, size_t piece) {
    return prefix + std::to_string(rank) + "." + std::to_string(piece);
  }
  Pmi2Client& c_;
  unsigned instance_ = 0;
  uint64_t exchanges_ = 0;
  std::string host_;
};

}  // namespace

std::unique_ptr<LauncherExchange> open_pmi2(double) { return std::make_unique<Pmi2Exchange>(); }

}  // namespace railcoll::rt

#endif  // RAILCOLL_HAVE_PMI2
