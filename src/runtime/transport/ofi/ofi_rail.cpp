// One rail's libfabric objects (ofi_rail.hpp). The calls and the modes they
// honour follow fi_getinfo(3), fi_domain(3), fi_endpoint(3), fi_av(3),
// fi_cq(3) and fi_mr(3); docs/runtime.md lists the provider assumptions.
#include "runtime/transport/ofi/ofi_rail.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/errors.hpp"

namespace railcoll::rt {

namespace {

std::string fi_text(int rc) { return fi_strerror(rc < 0 ? -rc : rc); }

std::string mr_mode_text(uint64_t m) {
  std::string s;
  auto add = [&](uint64_t bit, const char* name) {
    if (m & bit) s += (s.empty() ? "" : "|") + std::string(name);
  };
  add(FI_MR_LOCAL, "local");
  add(FI_MR_VIRT_ADDR, "virt_addr");
  add(FI_MR_ALLOCATED, "allocated");
  add(FI_MR_PROV_KEY, "prov_key");
  add(FI_MR_ENDPOINT, "endpoint");
  add(FI_MR_RAW, "raw");
  add(FI_MR_HMEM, "hmem");
  return s.empty() ? "none" : s;
}

fi_info* query(const std::string& addr, const std::string& provider, bool want_source, int* rc) {
  fi_info* hints = fi_allocinfo();
  if (!hints) throw RuntimeError(Status::Network, "fi_allocinfo: out of memory");
  hints->caps = FI_MSG | FI_RMA | (want_source ? FI_SOURCE : 0);
  hints->ep_attr->type = FI_EP_RDM;
  // FI_RX_CQ_DATA: a write carrying CQ data may consume a posted receive
  // (verbs asks for it); the transport's receives are always posted.
  hints->mode = FI_CONTEXT | FI_CONTEXT2 | FI_RX_CQ_DATA;
  hints->domain_attr->mr_mode = kHonouredMrModes;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  if (!provider.empty()) hints->fabric_attr->prov_name = strdup(provider.c_str());
  fi_info* list = nullptr;
  *rc = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), addr.c_str(), nullptr, FI_SOURCE, hints, &list);
  fi_freeinfo(hints);
  if (*rc) return nullptr;
  // The first the library offers (its preference order), but never shm: it
  // answers for any address and cannot leave the node.
  fi_info* pick = nullptr;
  for (fi_info* i = list; i && !pick; i = i->next)
    if (!provider.empty() || strncmp(i->fabric_attr->prov_name, "shm", 3) != 0) pick = i;
  fi_info* mine = pick ? fi_dupinfo(pick) : nullptr;
  fi_freeinfo(list);
  if (!mine) *rc = -FI_ENODATA;
  return mine;
}

}  // namespace

fi_info* fabric_info_for(const std::string& addr, const std::string& provider) {
  int rc = 0;
  // FI_SOURCE in caps gives the sender's address with every completion; a
  // provider without it still works (the chunk's token and header name the sender).
  fi_info* info = query(addr, provider, true, &rc);
  if (!info) info = query(addr, provider, false, &rc);
  if (!info)
    throw RuntimeError(Status::Network, "libfabric offers no RDM endpoint with FI_MSG|FI_RMA on " + addr +
                                            (provider.empty() ? "" : " from provider '" + provider + "'") + ": " +
                                            fi_text(rc) + " (check RAILCOLL_OFI_PROVIDER and RAILCOLL_RAILS)");
  return info;
}

FabricRail::FabricRail(int index, const std::string& addr, const std::string& provider, bool strict_mr)
    : index_(index), addr_(addr) {
  try {
    info_ = fabric_info_for(addr, provider);
    mr_mode_ = info_->domain_attr->mr_mode | (strict_mr ? kHonouredMrModes : 0);
    has_source_ = (info_->caps & FI_SOURCE) != 0;
    strict_mr_ = strict_mr;
    rx_cq_data_ = (info_->mode & FI_RX_CQ_DATA) != 0;
    max_write_ = info_->ep_attr->max_msg_size ? info_->ep_attr->max_msg_size : (1 << 20);
    check(fi_fabric(info_->fabric_attr, &fabric_, nullptr), "fi_fabric");
    check(fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain");
    fi_av_attr av{};
    av.type = info_->domain_attr->av_type;
    check(fi_av_open(domain_, &av, &av_, nullptr), "fi_av_open");
    // A file descriptor to sleep on (poll with the node's other fds); a
    // provider without one is polled instead (the transport caps its sleeps).
    fi_cq_attr cq{};
    cq.format = FI_CQ_FORMAT_DATA;
    cq.size = 4096;  // room for the writes' completions at both ends as well
    cq.wait_obj = FI_WAIT_FD;
    if (fi_cq_open(domain_, &cq, &cq_, nullptr) != 0) {
      cq.wait_obj = FI_WAIT_NONE;
      check(fi_cq_open(domain_, &cq, &cq_, nullptr), "fi_cq_open");
    } else if (fi_control(&cq_->fid, FI_GETWAIT, &wait_fd_) != 0) {
      wait_fd_ = -1;
    }
    check(fi_endpoint(domain_, info_, &ep_, nullptr), "fi_endpoint");
    check(fi_ep_bind(ep_, &av_->fid, 0), "fi_ep_bind (address vector)");
    check(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind (completion queue)");
    check(fi_enable(ep_), "fi_enable");
    char name[256];
    size_t len = sizeof name;
    check(fi_getname(&ep_->fid, name, &len), "fi_getname");
    address_.assign(name, len);
    register_buffers(strict_mr);
    for (int i = 0; i < kRecvBufs; ++i) repost(&bufs_[i]);
  } catch (...) {
    release();
    throw;
  }
}

FabricRail::~FabricRail() { release(); }

void FabricRail::release() {
  // Endpoint first (it holds the regions, the queue and the vector), the fabric last.
  if (ep_) fi_close(&ep_->fid);
  ep_ = nullptr;
  for (auto& r : regions_) fi_close(&r.mr->fid);
  regions_.clear();
  for (fid* f : {mr_ ? &mr_->fid : nullptr, cq_ ? &cq_->fid : nullptr, av_ ? &av_->fid : nullptr,
                 domain_ ? &domain_->fid : nullptr, fabric_ ? &fabric_->fid : nullptr})
    if (f) fi_close(f);
  mr_ = nullptr, cq_ = nullptr, av_ = nullptr, domain_ = nullptr, fabric_ = nullptr;
  free(slab_);
  slab_ = nullptr;
  if (info_) fi_freeinfo(info_);
  info_ = nullptr;
}

void FabricRail::check(int rc, const char* what) const {
  if (rc)
    throw RuntimeError(Status::Network, std::string(what) + " on rail " + std::to_string(index_) + " (" + addr_ +
                                            "): " + fi_text(rc));
}

// One registration, as every mode asks (fi_mr(3), "MR Modes"): the key asked
// for is one this domain has not used (a provider with FI_MR_PROV_KEY ignores
// it; under RAILCOLL_OFI_STRICT_MR a provider that did not ask would take it,
// and a repeated key fails), and the key used is always the one read back;
// FI_MR_ENDPOINT: bound to the endpoint and enabled before use.
// FI_MR_ALLOCATED holds for every caller (allocated memory only); FI_MR_LOCAL
// and FI_MR_VIRT_ADDR are the callers' (descriptors, remote_addr).
fid_mr* FabricRail::register_memory(void* p, size_t len, uint64_t access, uint64_t* key) {
  const uint64_t requested_key = next_key_++;
  fid_mr* mr = nullptr;
  check(fi_mr_reg(domain_, p, len, access, 0, requested_key, 0, &mr, nullptr), "fi_mr_reg");
  if (mr_mode_ & FI_MR_ENDPOINT) {
    int rc = fi_mr_bind(mr, &ep_->fid, 0);
    // A provider that did not ask for FI_MR_ENDPOINT may not implement the
    // bind at all; under strict_mr that is the only failure allowed.
    const bool asked = (info_->domain_attr->mr_mode & FI_MR_ENDPOINT) != 0;
    if (rc == -FI_ENOSYS && !asked && strict_mr_) rc = 0;
    else if (rc == 0) rc = fi_mr_enable(mr);
    if (rc == -FI_ENOSYS && !asked && strict_mr_) rc = 0;
    if (rc) fi_close(&mr->fid);
    check(rc, "fi_mr_bind/fi_mr_enable (FI_MR_ENDPOINT)");
  }
  *key = fi_mr_key(mr);
  if (*key == FI_KEY_NOTAVAIL) {  // a raw key (FI_MR_RAW), which the hints do not allow
    fi_close(&mr->fid);
    check(-FI_ENOSYS, "fi_mr_key (raw keys are not supported)");
  }
  ++registrations_;
  return mr;
}

// One region over every bounce buffer, registered once; under FI_MR_LOCAL
// its descriptor goes with every send and receive. The access flags allow
// what a layered provider (rxm's rendezvous) does with our buffers: the peer
// reads a send buffer.
void FabricRail::register_buffers(bool) {
  const size_t n = kRecvBufs + kSendBufs, bytes = n * kBufBytes;
  if (posix_memalign(reinterpret_cast<void**>(&slab_), 4096, bytes) != 0)
    throw RuntimeError(Status::Network, "no memory for the rail's buffers");
  memset(slab_, 0, bytes);
  const uint64_t access = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
  uint64_t key;  // the message path sends no key
  mr_ = register_memory(slab_, bytes, access, &key);
  desc_ = (mr_mode_ & FI_MR_LOCAL) ? fi_mr_desc(mr_) : nullptr;
  bufs_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    Buf& b = bufs_[i];
    b.index = static_cast<int>(i);
    b.send = i >= static_cast<size_t>(kRecvBufs);
    b.data = slab_ + i * kBufBytes;
  }
}

bool FabricRail::rma_ok() const {
  return (info_->caps & FI_RMA) && info_->domain_attr->cq_data_size >= 4;
}

FabricRail::Region FabricRail::region_for(const void* p, size_t len) {
  const char* c = static_cast<const char*>(p);
  for (auto& r : regions_)
    if (c >= r.base && c + len <= r.base + r.len) return r;
  Region r;
  // FI_MR_ALLOCATED: pages must be backed when registered. The piece's own
  // bytes are touched (a byte per page, rewritten with its value: nobody else
  // writes a piece while it is a source, and a destination piece is the
  // frame's alone until the frame lands). The node segment is then registered
  // piece by piece as user memory is (touching all of it would back all of it).
  const bool allocated = (mr_mode_ & FI_MR_ALLOCATED) != 0;
  if (allocated) {
    volatile char* v = const_cast<char*>(c);
    for (size_t off = 0; off < len; off += 4096 - (reinterpret_cast<uintptr_t>(c + off) & 4095)) v[off] = v[off];
  }
  r.kept = !allocated && kept_base_ && c >= kept_base_ && c + len <= kept_base_ + kept_len_;
  r.base = r.kept ? kept_base_ : const_cast<char*>(c);
  r.len = r.kept ? kept_len_ : len;
  r.mr = register_memory(r.base, r.len, FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, &r.key);
  r.desc = (mr_mode_ & FI_MR_LOCAL) ? fi_mr_desc(r.mr) : nullptr;
  regions_.push_back(r);
  return regions_.back();
}

// The provider's own mode, not the one strict_mr forces: FI_MR_VIRT_ADDR says
// how the target's provider reads an address, so it cannot be taken as a path
// of ours (an offset sent to a provider that expects a virtual address, or the
// reverse, lands nowhere).
uint64_t FabricRail::remote_addr(const Region& r, const void* p) const {
  const char* c = static_cast<const char*>(p);
  return (info_->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? reinterpret_cast<uint64_t>(c)
                                                          : static_cast<uint64_t>(c - r.base);
}

void FabricRail::release_call_regions() {
  auto keep = std::remove_if(regions_.begin(), regions_.end(), [](const Region& r) {
    if (!r.kept) fi_close(&r.mr->fid);
    return !r.kept;
  });
  regions_.erase(keep, regions_.end());
}

ssize_t FabricRail::write(const void* buf, size_t len, void* desc, uint32_t data, int peer, uint64_t addr,
                          uint64_t key, fi_context2* ctx) {
  return fi_writedata(ep_, buf, len, desc, data, peer_addr_[peer], addr, key, ctx);
}

bool FabricRail::is_buf(const void* ctx) const {
  const char* c = static_cast<const char*>(ctx);
  return !bufs_.empty() && c >= reinterpret_cast<const char*>(bufs_.data()) &&
         c < reinterpret_cast<const char*>(bufs_.data() + bufs_.size());
}

std::string FabricRail::provider() const { return info_->fabric_attr->prov_name; }
std::string FabricRail::domain() const { return info_->domain_attr->name ? info_->domain_attr->name : ""; }

void FabricRail::insert_peers(const std::vector<std::string>& addrs) {
  std::string all;
  for (auto& a : addrs) {
    if (a.size() != address_.size())
      throw RuntimeError(Status::Protocol, "a peer's fabric address on rail " + std::to_string(index_) + " has " +
                                               std::to_string(a.size()) + " bytes, this rank's " +
                                               std::to_string(address_.size()) + " (different providers?)");
    all += a;
  }
  peer_name_ = addrs;
  peer_addr_.assign(addrs.size(), FI_ADDR_NOTAVAIL);
  int n = fi_av_insert(av_, all.data(), addrs.size(), peer_addr_.data(), 0, nullptr);
  if (n != static_cast<int>(addrs.size()))
    throw RuntimeError(Status::Network, "fi_av_insert on rail " + std::to_string(index_) + " took " +
                                            std::to_string(n) + " of " + std::to_string(addrs.size()) + " addresses");
  rank_by_addr_.clear();
  for (size_t r = 0; r < addrs.size(); ++r) rank_by_addr_.push_back({peer_addr_[r], static_cast<int>(r)});
  std::sort(rank_by_addr_.begin(), rank_by_addr_.end());
}

int FabricRail::rank_of(fi_addr_t a) const {
  auto it = std::lower_bound(rank_by_addr_.begin(), rank_by_addr_.end(), std::make_pair(a, -1));
  return it != rank_by_addr_.end() && it->first == a ? it->second : -1;
}

int FabricRail::probe_connect(int rank) const {
  const std::string& name = peer_name_[rank];
  const uint32_t format = info_->addr_format;
  if (!((format == FI_SOCKADDR_IN && name.size() >= sizeof(sockaddr_in)) ||
        (format == FI_SOCKADDR_IN6 && name.size() >= sizeof(sockaddr_in6))))
    return -1;
  const sockaddr* sa = reinterpret_cast<const sockaddr*>(name.data());
  int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const socklen_t len = format == FI_SOCKADDR_IN ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  if (connect(fd, sa, len) == 0 || errno == EINPROGRESS) return fd;
  const int err = errno;
  close(fd);
  return err == ECONNREFUSED ? kProbeRefused : -1;
}

FabricRail::Buf* FabricRail::free_send_buf() {
  for (int i = kRecvBufs; i < kRecvBufs + kSendBufs; ++i)
    if (!bufs_[i].busy) return &bufs_[i];
  return nullptr;
}

ssize_t FabricRail::send(Buf* b, int peer, size_t len, bool delivered) {
  ssize_t rc;
  if (delivered) {  // completes once the peer's provider has it (fi_cq(3), FI_DELIVERY_COMPLETE)
    iovec v{b->data, len};
    void* desc = desc_;
    fi_msg m{};
    m.msg_iov = &v;
    m.desc = &desc;
    m.iov_count = 1;
    m.addr = peer_addr_[peer];
    m.context = &b->ctx;
    rc = fi_sendmsg(ep_, &m, FI_DELIVERY_COMPLETE | FI_COMPLETION);
  } else {
    rc = fi_send(ep_, b->data, len, desc_, peer_addr_[peer], &b->ctx);
  }
  if (rc == 0) b->busy = true, b->peer = peer, b->len = len;
  return rc;
}

void FabricRail::repost(Buf* b) {
  ssize_t rc;
  // The queue of receives is as deep as kRecvBufs; EAGAIN only while the
  // provider catches up with its own progress.
  while ((rc = fi_recv(ep_, b->data, kBufBytes, desc_, FI_ADDR_UNSPEC, &b->ctx)) == -FI_EAGAIN) {
    fi_cq_data_entry e;
    fi_cq_read(cq_, &e, 0);  // progress only
  }
  check(static_cast<int>(rc), "fi_recv");
  b->busy = true;
}

bool FabricRail::sends_in_flight() const {
  for (int i = kRecvBufs; i < kRecvBufs + kSendBufs; ++i)
    if (bufs_[i].busy) return true;
  return false;
}

std::vector<const FabricRail::Buf*> FabricRail::sends_to(int peer) const {
  std::vector<const Buf*> v;
  for (int i = kRecvBufs; i < kRecvBufs + kSendBufs; ++i)
    if (bufs_[i].busy && bufs_[i].peer == peer) v.push_back(&bufs_[i]);
  return v;
}

ssize_t FabricRail::read_cq(fi_cq_data_entry* e, fi_addr_t* src, size_t n) {
  ssize_t got = has_source_ ? fi_cq_readfrom(cq_, e, n, src) : fi_cq_read(cq_, e, n);
  if (!has_source_ && got > 0)
    for (ssize_t i = 0; i < got; ++i) src[i] = FI_ADDR_NOTAVAIL;
  if (got == -FI_EAGAIN) return 0;
  if (got < 0 && got != -FI_EAVAIL) check(static_cast<int>(got), "fi_cq_read");
  return got;
}

std::string FabricRail::cq_error(Buf** buf, void** ctx, int* err) {
  fi_cq_err_entry e{};
  ssize_t rc = fi_cq_readerr(cq_, &e, 0);
  *buf = nullptr;
  *ctx = nullptr;
  *err = 0;
  if (rc != 1) return "a completion error that could not be read";
  *err = e.err;
  *ctx = e.op_context;
  for (auto& b : bufs_)
    if (&b.ctx == e.op_context) *buf = &b;
  const char* prov = fi_cq_strerror(cq_, e.prov_errno, e.err_data, nullptr, 0);
  return fi_text(e.err) + (prov && *prov ? std::string(" (") + prov + ")" : "");
}

bool FabricRail::try_wait() {
  if (wait_fd_ < 0) return false;
  fid* f = &cq_->fid;
  return fi_trywait(fabric_, &f, 1) == FI_SUCCESS;
}

std::vector<std::string> describe_fabric_rails(const std::vector<std::string>& rail_addr,
                                               const std::string& provider) {
  std::vector<std::string> lines;
  for (size_t r = 0; r < rail_addr.size(); ++r) {
    std::string line = "rail " + std::to_string(r) + " " + rail_addr[r] + ": ";
    try {
      fi_info* i = fabric_info_for(rail_addr[r], provider);
      line += "provider " + std::string(i->fabric_attr->prov_name) + ", fabric " + i->fabric_attr->name +
              ", domain " + (i->domain_attr->name ? i->domain_attr->name : "?") + ", mr_mode " +
              mr_mode_text(i->domain_attr->mr_mode) + ", cq data " + std::to_string(i->domain_attr->cq_data_size) +
              " B";
      fi_freeinfo(i);
    } catch (const std::exception& e) {
      line += e.what();
    }
    lines.push_back(line);
  }
  return lines;
}

}  // namespace railcoll::rt
