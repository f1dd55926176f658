// libfabric (OFI) links: one fabric/domain/endpoint per rail (FI_EP_RDM, a
// completion queue and an address vector each), opened on the rail's local
// address (fi_getinfo with FI_SOURCE); a link is (peer, rail) on that rail's
// endpoint. Only the mechanics; the rails layer above decides what to do
// about a link that fails (rails/rail_transport.hpp), and the node room
// carries the node's ranks (local/).
//
// Two paths (docs/runtime.md, "The libfabric links"). Messages: a frame goes as
// fi_send messages on its rail, each a chunk of the frame with the frame
// header, a chunk header and a per-sender token that only holders of the job
// key can compute. The receiver posts registered bounce buffers, checks every
// chunk (token, the address it came from, the header through the rails layer
// and the executor) and copies the payload into place. One-sided writes: a
// data frame of at least RAILCOLL_OFI_RMA_BYTES (unset: 32 KiB, off over the
// socket providers) announces itself (RTS), the receiver registers where the
// sink places it and answers with addresses and keys (CTS), and the sender
// writes the payload there with fi_writedata, whose 4 bytes of CQ data name
// the receiver's slot and the number of writes, so the receiver counts
// arrivals on its completion queue without another message. Memory
// registration honours what the provider asks for (FI_MR_LOCAL: descriptors
// for every buffer; FI_MR_ENDPOINT: regions bound to the endpoint;
// FI_MR_PROV_KEY: the provider's key; FI_MR_ALLOCATED, FI_MR_VIRT_ADDR), and
// RAILCOLL_OFI_STRICT_MR=1 takes every one of those paths (but VIRT_ADDR) as if
// the provider had asked (the test of portability on a provider that asks for none).
//
// What a link shows the rails layer: delivery from send completions (a link
// with chunks queued or in flight and no completion for the rail timeout
// stalls); a failed send or write breaks it; a peer whose sends every rail has
// refused and whose endpoint refuses connections is gone. A given-up link
// hands back its queued frames, the chunks still in flight (copies of the
// bounce buffers: the receiver places each chunk once) and its frames on the
// write path; reconnecting is a hello on the rail that the peer answers.
//
// Files by topic:
//   ofi_rail.cpp     one rail's libfabric objects, their set-up and the
//                    provider listing (`railcoll info`)
//   ofi_links.cpp    set-up (addresses, warm-up), sending in chunks,
//                    completions, reassembly, giving up, reconnecting, the goodbye
//   ofi_writes.cpp   the one-sided path: RTS, CTS, writes, slots
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

#include "core/topology.hpp"
#include "runtime/transport/transport_settings.hpp"
#include "runtime/transport/link.hpp"

namespace railcoll::rt {

class FabricRail;

class OfiLinks final : public Links {
 public:
  // Opens one endpoint per rail address. settings.ofi_provider: the provider
  // asked for ("" = the first libfabric offers on the rails' addresses).
  OfiLinks(const TransportSettings& settings, int me, int nranks, std::vector<std::string> rail_addr);
  ~OfiLinks() override;
  OfiLinks(const OfiLinks&) = delete;
  OfiLinks& operator=(const OfiLinks&) = delete;

  void attach(LinkEvents* ev) override { ev_ = ev; }
  std::string contact() const override;
  void connect(const LinkSetup& s, double deadline) override;
  std::string describe() const override;

  void send(int peer, int rail, OutFrame f) override;
  void send_urgent(int peer, int rail, const OutFrame& f) override;
  void flush_urgent(double until) override;
  bool sends_pending() const override;
  void end_call() override;
  void forget_call_memory() override;

  void poll(bool* progressed) override { drive(progressed); }
  double before_wait(double wait_s) override;
  void drive(double now) override;
  bool needs_heartbeat() const override { return true; }

  LinkSigns signs(int peer, int rail) override;
  GivenUp give_up(int peer, int rail) override;
  void peer_gave_up(int, int, uint64_t) override {}
  bool closed(int peer, int rail) const override { return down_[peer][rail] != 0; }
  bool reconnect(int peer, int rail, double now) override;
  bool reconnecting(int peer, int rail) const override { return connect_until_[peer][rail] > 0; }
  void stop_reconnect(int peer, int rail) override { connect_until_[peer][rail] = 0; }
  void goodbye(double deadline) override;

 private:
  // A frame on its way out: its header and payload, cut into chunks as send
  // buffers come free. The payload is read in place until the call ends.
  struct OutChunks {
    int peer = -1;
    uint64_t id = 0;  // unique among this rank's frames: the receiver's reassembly key
    FrameHeader hdr{};
    std::vector<iovec> iov;
    std::string owned;  // the payload from offset `base`, once copied (end_call, control frames, a chunk again)
    uint64_t base = 0;
    uint64_t sent = 0;  // the payload's offset cut into chunks so far
    uint64_t end = 0;   // where this send stops (the payload's end; a chunk sent again: its own)
    uint32_t kind = 0;  // ChunkHeader::kind: a chunk of the payload, an RTS or a CTS (body in `owned`)
  };
  // A data frame going by one-sided writes: announced, then answered, then written.
  struct RmaWrite {
    fi_context2 ctx;  // the write's completion context (first: the provider's scratch)
    uint64_t frame = 0;
    const char* src = nullptr;
    size_t len = 0;
    void* desc = nullptr;
    uint64_t addr = 0, key = 0;
  };
  struct RmaOut {
    OutChunks f;  // the frame (its id: the receiver's key for it, on either path)
    int rail = -1;
    bool answered = false;  // its CTS came
    bool messages = false;  // it went (or goes) by messages after all: a CTS is ignored
    uint32_t data = 0;      // the writes' CQ data: the receiver's slot | their number << 16
    std::vector<RmaWrite> writes;  // sized once (the contexts must not move)
    size_t posted = 0;
    int in_flight = 0;
    double announced_at = 0, answered_at = 0;  // for RAILCOLL_OFI_VERBOSE's totals
  };
  // A receiver's slot for a frame coming by writes: which frame, how many came.
  struct InSlot {
    uint64_t key = 0;  // the frame's key in in_
    int sender = -1;
    uint32_t arrived = 0;
    bool used = false;
    bool dead = false;  // the frame came by messages after all: never used again
  };
  // A frame coming in: where its payload goes, and how much of it came.
  struct InFrame {
    FrameHeader hdr{};
    int rail = -1;
    Landing landing = Landing::Place;
    std::vector<iovec> dst;
    std::vector<char> held;
    std::vector<char> seen;  // [chunk] arrived (a frame sent again may repeat chunks)
    uint64_t got = 0;
    int slot = -1;    // the writes' slot (RMA path)
    std::string cts;  // the answer to its RTS, given again to an RTS sent again
  };

  FrameHeader header(Frame type) const { return make_header(type, comm_id_, me_); }
  bool remote(int peer) const;
  bool lost(int peer) const;  // every link to it given up
  int live_rail(int peer, int rail) const;  // rail, or another not given up (-1: none)
  void queue(int peer, int rail, OutChunks f);
  void queue_control(int peer, int rail, Frame type, uint64_t seq = 0);
  void drive(bool* progressed);
  bool queued(int rail) const;
  void check_refused(double now);
  void finish_probe(int peer, double now);
  void peer_gone(int peer, double now);
  void post_sends(int rail);
  void poll_completions(int rail, bool* progressed);
  void completion_error(int rail);
  void on_chunk(int rail, const char* buf, size_t len, uint64_t src);
  void on_hello(int rail, int from, const FrameHeader& h);
  void on_frame_chunk(int rail, const FrameHeader& h, uint64_t id, uint64_t off, const char* data, size_t len);
  void link_failed(int peer, int rail, const std::string& why);
  void restored(int peer, int rail);
  // The RMA path (ofi_writes.cpp).
  static uint64_t in_key(int sender, uint64_t id) { return (static_cast<uint64_t>(sender) << 44) ^ id; }
  InFrame& new_in_frame(uint64_t key, int rail, const FrameHeader& h);
  void start_rma(int peer, int rail, OutChunks f);
  void queue_special(int peer, int rail, uint32_t kind, const FrameHeader& h, uint64_t id, std::string body);
  void on_rts(int rail, int from, const FrameHeader& h, uint64_t id);
  std::string answer_rts(int rail, int from, uint64_t key, InFrame& f);
  void on_cts(int rail, int from, uint64_t id, const char* body, size_t len);
  void rma_by_messages(RmaOut& o);
  void post_writes(RmaOut& o);
  void write_done(int rail, RmaWrite* w, const std::string* error);
  void on_write_arrived(int rail, uint64_t data);
  void frame_complete(std::unordered_map<uint64_t, InFrame>::iterator it);
  bool writes_to_post() const;
  bool writes_outstanding() const;
  void warm_up(double deadline);
  [[noreturn]] void protocol_error(int peer, int rail, const std::string& what) const;

  const TransportSettings settings_;
  const int me_, n_;
  const std::vector<std::string> rail_addr_;
  const std::string nonce_;  // this rank's token seed, published in its contact
  std::vector<std::unique_ptr<FabricRail>> rails_;
  Topology topo_;
  uint64_t comm_id_ = 0;
  LinkEvents* ev_ = nullptr;
  uint64_t my_token_ = 0;
  std::vector<uint64_t> token_of_;                // [peer] the token its chunks carry
  std::vector<std::vector<char>> down_;           // [peer][rail] given up
  std::vector<std::vector<double>> connect_until_;  // [peer][rail] a reconnect's hello awaits its answer until
  std::vector<std::vector<char>> heard_;          // [peer][rail] its hello arrived (warm-up)
  std::vector<std::vector<double>> heard_at_;     // [peer][rail] last chunk or write from it
  std::vector<std::vector<double>> moving_at_;    // [peer][rail] last completion of ours to it (or idle since)
  std::vector<char> bye_;                         // [peer] it said goodbye
  std::vector<std::vector<std::deque<OutChunks>>> out_;  // [rail][peer] frames to cut into chunks
  std::vector<std::vector<int>> in_flight_;              // [rail][peer] our sends not yet completed
  std::vector<std::vector<double>> refused_since_;       // [rail][peer] sends refused since (0: not)
  std::vector<std::vector<OutChunks>> failed_;           // [rail * n + peer] chunks whose send failed, to go again
  int next_peer_ = 0;                                    // whose queue is cut first
  int chunks_per_link_ = 1;                              // chunks in flight per (rail, peer) at most
  struct Probe {  // a connect to a refusing peer's endpoint (check_refused)
    int fd = -1;
    double started = 0, since = 0, next = 0;
  };
  std::vector<Probe> probe_;  // [peer]
  bool warming_up_ = false;
  std::vector<std::deque<std::pair<fi_cq_data_entry, fi_addr_t>>> unhandled_;  // [rail] completions read, not handled
  std::unordered_map<uint64_t, InFrame> in_;  // (sender, frame id) -> a frame partly arrived
  static constexpr size_t kRememberDone = 1 << 16;
  std::unordered_set<uint64_t> done_;  // keys of the last kRememberDone frames made whole
  std::deque<uint64_t> done_order_;
  uint64_t next_frame_id_ = 1;
  uint64_t rma_bytes_ = 0;                    // data frames this large go by writes (0: never)
  std::unordered_map<uint64_t, RmaOut> rma_;  // frame id -> a frame on the RMA path
  std::vector<InSlot> slots_;                 // the receiver's slots for frames coming by writes
  uint32_t next_slot_ = 0;
  std::vector<std::vector<uint64_t>> write_bytes_in_flight_;  // [rail][peer]
  uint64_t link_write_budget_ = 0;                            // bytes of writes in flight per link (0: any)
  uint64_t write_bytes_ = 0;                                  // a write's largest size
  uint64_t rma_frames_ = 0, rma_writes_ = 0, rma_declined_ = 0;  // for RAILCOLL_OFI_VERBOSE
  double rma_wait_s_ = 0, rma_write_s_ = 0;  // RTS to CTS, CTS to the last write's completion (summed)
  bool closing_ = false;  // goodbye(), or the call's memory forgotten: writes arriving are no longer looked at
  std::vector<std::string> unplaced_;  // strangers' chunks dropped (said once each)
};

}  // namespace railcoll::rt
