// One rail of the libfabric links (ofi_links.hpp): its fabric, domain, RDM
// endpoint, completion queue and address vector, opened on the rail's local
// address, and the registered memory the links send from and receive into
// (bounce buffers: one region per rail, registered once).
#pragma once
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>

#include <cstdint>
#include <string>
#include <vector>

namespace railcoll::rt {

// The memory-registration modes railcoll knows how to honour; hints carry all
// of them, and the provider says which it needs (fi_mr(3), "MR Modes").
constexpr uint64_t kHonouredMrModes = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |
                                      FI_MR_ENDPOINT;

// The first fi_info libfabric offers for an RDM endpoint with FI_MSG | FI_RMA
// on local address `addr` (FI_SOURCE), of `provider` ("" = any but shm, which
// cannot leave the node). Throws RuntimeError(Network) naming what was asked.
fi_info* fabric_info_for(const std::string& addr, const std::string& provider);

// What the fabric offers on each rail address: one line per rail (provider,
// fabric, domain, memory-registration mode), for `railcoll info`.
std::vector<std::string> describe_fabric_rails(const std::vector<std::string>& rail_addr, const std::string& provider);

class FabricRail {
 public:
  // One chunk: headers and payload. Below rxm's eager limit (FI_OFI_RXM_BUFFER_SIZE, 16 KiB
  // with its own header inside): larger chunks went by SAR at 1.5-3.8x the native
  // transport's time for 64 KiB-1 MiB (2 ranks, loopback), these at 1.0-3.6x.
  static constexpr size_t kBufBytes = (16 << 10) - 256;
  static constexpr int kRecvBufs = 64;
  static constexpr int kSendBufs = 64;

  // A buffer's completion context (FI_CONTEXT2: the provider's scratch first).
  struct Buf {
    fi_context2 ctx;
    int index = 0;
    bool send = false;
    bool busy = false;
    int peer = -1;  // send: to whom
    size_t len = 0;
    char* data = nullptr;
  };

  // strict_mr: take every registration path of kHonouredMrModes whether or not
  // the provider asked for it (FI_MR_VIRT_ADDR excepted: it is how the peer's
  // provider reads an address, not a path of ours).
  FabricRail(int index, const std::string& addr, const std::string& provider, bool strict_mr);
  ~FabricRail();
  FabricRail(const FabricRail&) = delete;
  FabricRail& operator=(const FabricRail&) = delete;

  int index() const { return index_; }
  std::string provider() const;  // "tcp;ofi_rxm"
  std::string domain() const;
  uint64_t mr_mode() const { return mr_mode_; }
  bool has_source() const { return has_source_; }
  // This endpoint's address (opaque bytes, for the peers' address vectors).
  const std::string& address() const { return address_; }
  // Every rank's address on this rail, in rank order.
  void insert_peers(const std::vector<std::string>& addrs);
  fi_addr_t addr_of(int rank) const { return peer_addr_[rank]; }
  int rank_of(fi_addr_t a) const;  // -1: not a rank of this communicator
  // A non-blocking TCP connect to rank's endpoint when the provider's addresses
  // are IP socket addresses (FI_SOCKADDR_IN/IN6, as tcp's); -1 otherwise,
  // kProbeRefused when the connect was refused at once.
  static constexpr int kProbeRefused = -2;
  int probe_connect(int rank) const;

  // ---- one-sided writes (the RMA path, ofi_writes.cpp)
  // Whether this rail can carry them: FI_RMA granted and at least 4 bytes of
  // remote CQ data (fi_getinfo(3), cq_data_size).
  bool rma_ok() const;
  // A write must not exceed this (ep_attr->max_msg_size).
  size_t max_write() const { return max_write_; }
  // A registered region of memory on this rail's domain.
  struct Region {
    char* base = nullptr;
    size_t len = 0;
    fid_mr* mr = nullptr;
    void* desc = nullptr;  // for FI_MR_LOCAL (nullptr otherwise)
    uint64_t key = 0;
    bool kept = false;  // kept for the rail's life (the node segment), else released with release_call_regions
  };
  // The region that holds [p, p+len): from the cache, else registered now (the
  // whole of `keep_range` if it holds the piece: registered once and kept).
  // Every region allows both directions: a buffer is a source in one put and a
  // destination in the next.
  Region region_for(const void* p, size_t len);
  void set_kept_range(char* base, size_t len) { kept_base_ = base, kept_len_ = len; }
  // The address a peer writes to for p inside r (fi_mr(3): the virtual address
  // under FI_MR_VIRT_ADDR, else the offset from the region's start).
  uint64_t remote_addr(const Region& r, const void* p) const;
  // Drops the regions of user memory (a call's buffers may be freed after it).
  void release_call_regions();
  int regions_registered() const { return registrations_; }
  // A write with 4 bytes of remote CQ data; ctx: the completion's context.
  ssize_t write(const void* buf, size_t len, void* desc, uint32_t data, int peer, uint64_t addr, uint64_t key,
                fi_context2* ctx);
  // Whether a completion context is one of the rail's buffers (else: a write's).
  bool is_buf(const void* ctx) const;
  // FI_RX_CQ_DATA: a write with CQ data consumes one of our posted receives.
  bool rx_cq_data() const { return rx_cq_data_; }

  // Sending: a free buffer (nullptr: none until a send completes), then send it.
  Buf* free_send_buf();
  // Returns the provider's code (0, -FI_EAGAIN, or an error). delivered: the
  // completion waits until the peer's provider has the message.
  ssize_t send(Buf* b, int peer, size_t len, bool delivered = false);
  void repost(Buf* b);  // a receive buffer, back to the provider
  bool sends_in_flight() const;
  // The send buffers still in flight to `peer` (their chunks, not yet completed).
  std::vector<const Buf*> sends_to(int peer) const;

  // Completions: fills up to n entries; returns their number, 0, or -FI_EAVAIL.
  ssize_t read_cq(fi_cq_data_entry* e, fi_addr_t* src, size_t n);
  // After -FI_EAVAIL: the failed op (*buf, or for a write its *ctx).
  std::string cq_error(Buf** buf, void** ctx, int* err);
  // Sleeping: the CQ's file descriptor (-1: none), and whether poll may sleep on it now.
  int wait_fd() const { return wait_fd_; }
  bool try_wait();

 private:
  void check(int rc, const char* what) const;
  void release();  // every object, in order (the destructor, and a constructor that failed)
  void register_buffers(bool strict_mr);
  fid_mr* register_memory(void* p, size_t len, uint64_t access, uint64_t* key);

  const int index_;
  const std::string addr_;
  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_ep* ep_ = nullptr;
  fid_mr* mr_ = nullptr;
  void* desc_ = nullptr;
  uint64_t mr_mode_ = 0;
  bool has_source_ = false;
  bool strict_mr_ = false;
  bool rx_cq_data_ = false;
  size_t max_write_ = 0;
  uint64_t next_key_ = 1;  // the next key asked for: unique in the domain (FI_MR_PROV_KEY: ignored)
  std::vector<Region> regions_;
  char* kept_base_ = nullptr;
  size_t kept_len_ = 0;
  int registrations_ = 0;
  int wait_fd_ = -1;
  std::string address_;
  char* slab_ = nullptr;
  std::vector<Buf> bufs_;  // receive buffers, then send buffers
  std::vector<fi_addr_t> peer_addr_;
  std::vector<std::string> peer_name_;  // [rank] its endpoint's address bytes
  std::vector<std::pair<fi_addr_t, int>> rank_by_addr_;  // sorted
};

}  // namespace railcoll::rt
