// The PMIx client (PMIx standard v4: PMIx_Init, PMIx_Get, PMIx_Put,
// PMIx_Commit, PMIx_Fence), through libpmix loaded when a PMIx server started
// this process (launcher_exchange.hpp). One exchange is a put of this rank's
// bytes under a key of its own, a commit, a fence that collects the data, and
// a get of every rank's: an allgather, with PMIX_TIMEOUT on every wait.
#ifdef RAILCOLL_HAVE_PMIX  // cmake/launchers.cmake: the header was found
#include <pmix.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <unistd.h>

#include "runtime/bootstrap/launcher_exchange.hpp"
#include "runtime/bootstrap/net.hpp"

namespace railcoll::rt {

namespace {

// libpmix and this process's connection to its server: opened once, closed
// (PMIx_Finalize) at exit, as a launcher expects of a process that registered.
class PmixClient {
 public:
  static PmixClient& get() {
    static PmixClient client;  // thread-safe; a failure throws and the next call retries
    return client;
  }
  ~PmixClient() {
    if (lib_) finalize_(nullptr, 0);
  }
  const pmix_proc_t& me() const { return me_; }

  decltype(&PMIx_Get) get_ = nullptr;
  decltype(&PMIx_Put) put_ = nullptr;
  decltype(&PMIx_Commit) commit_ = nullptr;
  decltype(&PMIx_Fence) fence_ = nullptr;
  decltype(&PMIx_Error_string) error_string_ = nullptr;
  decltype(&PMIx_Value_destruct) value_destruct_ = nullptr;

  std::string why(const std::string& call, pmix_status_t rc) const {
    return "PMIx: " + call + " failed: " + error_string_(rc) + " (" + std::to_string(rc) + ")";
  }

 private:
  PmixClient() {
    void* lib = load_client_library("libpmix.so.2", "a PMIx server started this process (PMIX_NAMESPACE is set)",
                                    "Debian: libpmix2");
    auto sym = [lib](const char* name) { return client_symbol(lib, "libpmix.so.2", name); };
    auto init = reinterpret_cast<decltype(&PMIx_Init)>(sym("PMIx_Init"));
    finalize_ = reinterpret_cast<decltype(&PMIx_Finalize)>(sym("PMIx_Finalize"));
    get_ = reinterpret_cast<decltype(&PMIx_Get)>(sym("PMIx_Get"));
    put_ = reinterpret_cast<decltype(&PMIx_Put)>(sym("PMIx_Put"));
    commit_ = reinterpret_cast<decltype(&PMIx_Commit)>(sym("PMIx_Commit"));
    fence_ = reinterpret_cast<decltype(&PMIx_Fence)>(sym("PMIx_Fence"));
    error_string_ = reinterpret_cast<decltype(&PMIx_Error_string)>(sym("PMIx_Error_string"));
    value_destruct_ = reinterpret_cast<decltype(&PMIx_Value_destruct)>(sym("PMIx_Value_destruct"));
    if (pmix_status_t rc = init(&me_, nullptr, 0); rc != PMIX_SUCCESS)
      throw RuntimeError(Status::Bootstrap, why("PMIx_Init", rc) + " (is the PMIx server of this job reachable?)");
    lib_ = lib;
  }
  void* lib_ = nullptr;
  decltype(&PMIx_Finalize) finalize_ = nullptr;
  pmix_proc_t me_{};
};

// A process of the namespace `nspace` (PMIX_RANK_WILDCARD: all of them).
pmix_proc_t proc(const char (&nspace)[PMIX_MAX_NSLEN + 1], pmix_rank_t rank) {
  pmix_proc_t p{};
  memcpy(p.nspace, nspace, sizeof p.nspace);
  p.rank = rank;
  return p;
}

pmix_info_t info_flag(const char* key, bool value) {
  pmix_info_t i{};
  snprintf(i.key, sizeof i.key, "%s", key);
  i.value.type = PMIX_BOOL;
  i.value.data.flag = value;
  return i;
}

pmix_info_t info_int(const char* key, int value) {
  pmix_info_t i{};
  snprintf(i.key, sizeof i.key, "%s", key);
  i.value.type = PMIX_INT;
  i.value.data.integer = value;
  return i;
}

class PmixExchange final : public LauncherExchange {
 public:
  explicit PmixExchange(double deadline) : c_(PmixClient::get()), deadline_(deadline) {
    static std::atomic<unsigned> instances{0};  // every rank makes communicators in the same order
    instance_ = instances++;
    pmix_value_t* v = fetch(proc(c_.me().nspace, PMIX_RANK_WILDCARD), PMIX_JOB_SIZE);
    size_ = v->type == PMIX_UINT32 ? static_cast<int>(v->data.uint32) : -1;
    release(v);
    if (size_ < 1) throw RuntimeError(Status::Bootstrap, "PMIx: the job size is not a positive uint32");
    try {  // the node's name as the launcher knows it, where it says (Slurm, PRRTE do)
      v = fetch(c_.me(), PMIX_HOSTNAME);
      if (v->type == PMIX_STRING && v->data.string) host_ = v->data.string;
      release(v);
    } catch (const RuntimeError&) {
    }
    if (host_.empty()) {  // else the process's own, which is what a node is without PMIx
      char host[256] = {0};
      gethostname(host, sizeof host - 1);
      host_ = host;
    }
  }
  const char* name() const override { return "PMIx"; }
  int rank() const override { return static_cast<int>(c_.me().rank); }
  int size() const override { return size_; }
  std::string node() const override { return host_; }
  std::string job() const override { return c_.me().nspace; }

  void allgather(const void* mine, size_t bytes, void* all) override {
    const std::string key = "railcoll." + std::to_string(instance_) + "." + std::to_string(exchanges_++);
    pmix_value_t v{};
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = const_cast<char*>(static_cast<const char*>(mine));
    v.data.bo.size = bytes;
    if (pmix_status_t rc = c_.put_(PMIX_GLOBAL, key.c_str(), &v); rc != PMIX_SUCCESS)
      throw RuntimeError(Status::Bootstrap, c_.why("PMIx_Put", rc));
    if (pmix_status_t rc = c_.commit_(); rc != PMIX_SUCCESS)
      throw RuntimeError(Status::Bootstrap, c_.why("PMIx_Commit", rc));
    const pmix_proc_t everyone = proc(c_.me().nspace, PMIX_RANK_WILDCARD);
    pmix_info_t fence[2] = {info_flag(PMIX_COLLECT_DATA, true), info_int(PMIX_TIMEOUT, seconds_left())};
    if (pmix_status_t rc = c_.fence_(&everyone, 1, fence, 2); rc != PMIX_SUCCESS)
      throw RuntimeError(rc == PMIX_ERR_TIMEOUT ? Status::Timeout : Status::Bootstrap,
                         c_.why("PMIx_Fence", rc) + " (a rank missing from set-up?)");
    for (int r = 0; r < size_; ++r) {
      pmix_value_t* got = fetch(proc(c_.me().nspace, static_cast<pmix_rank_t>(r)), key.c_str());
      const bool fits = got->type == PMIX_BYTE_OBJECT && got->data.bo.size == bytes;
      if (fits && bytes > 0) memcpy(static_cast<char*>(all) + r * bytes, got->data.bo.bytes, bytes);
      release(got);
      if (!fits)
        throw RuntimeError(Status::Protocol, "PMIx: rank " + std::to_string(r) + "'s set-up record is not " +
                                                 std::to_string(bytes) + " bytes");
    }
  }

 private:
  int seconds_left() const {
    return std::max(1, static_cast<int>(std::ceil(deadline_ - now_seconds())));
  }
  pmix_value_t* fetch(const pmix_proc_t& proc, const char* key) {
    pmix_info_t wait[1] = {info_int(PMIX_TIMEOUT, seconds_left())};
    pmix_value_t* v = nullptr;
    if (pmix_status_t rc = c_.get_(&proc, key, wait, 1, &v); rc != PMIX_SUCCESS || !v)
      throw RuntimeError(rc == PMIX_ERR_TIMEOUT ? Status::Timeout : Status::Bootstrap,
                         c_.why(std::string("PMIx_Get(") + key + ")", rc));
    return v;
  }
  void release(pmix_value_t* v) {
    c_.value_destruct_(v);
    free(v);
  }

  PmixClient& c_;
  double deadline_;
  unsigned instance_ = 0;
  uint64_t exchanges_ = 0;
  int size_ = 0;
  std::string host_;
};

}  // namespace

std::unique_ptr<LauncherExchange> open_pmix(double deadline) { return std::make_unique<PmixExchange>(deadline); }

}  // namespace railcoll::rt

#endif  // RAILCOLL_HAVE_PMIX
