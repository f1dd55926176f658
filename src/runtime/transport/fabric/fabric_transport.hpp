// The libfabric (OFI) transport: between nodes, one fabric/domain/endpoint per
// rail (FI_EP_RDM, a completion queue and an address vector each), opened on the
// rail's local address (fi_getinfo with FI_SOURCE); inside a node, the socket
// transport's local part as it is (the node's shared memory, Unix sockets to
// the local peers), which this transport owns and forwards to.
//
// Two paths (docs/runtime.md, "The libfabric transport"). Messages: a frame
// to a peer on another node goes as fi_send messages
// on the frame's rail (the executor's striping gives each part its rail, so a
// striped put uses every rail's domain), each message a chunk of the frame
// with the frame header, a chunk header and a per-sender token that only
// holders of the job key can compute. The receiver posts registered bounce
// buffers, checks every chunk (token, the address it came from, the header
// against its own schedule through the FrameSink) and copies the payload into
// place. One-sided writes: a data frame of at least RAILCOLL_OFI_RMA_BYTES
// (unset: 32 KiB, off over the socket providers) announces itself (RTS), the
// receiver registers where the sink places it and answers with addresses and
// keys (CTS), and the sender writes the payload there with fi_writedata, whose
// 4 bytes of CQ data name the receiver's slot and the number of writes, so the
// receiver counts arrivals on its completion queue without another message.
// Memory registration honours what the provider asks for (FI_MR_LOCAL:
// descriptors for every buffer; FI_MR_ENDPOINT: regions bound to the endpoint;
// FI_MR_PROV_KEY: the provider's key; FI_MR_ALLOCATED, FI_MR_VIRT_ADDR), and
// RAILCOLL_OFI_STRICT_MR=1 takes every one of those paths (but VIRT_ADDR) as if the provider
// had asked (the test of portability on a provider that asks for none).
//
// Files by topic:
//   fabric_rail.cpp       one rail's libfabric objects, their set-up and the
//                         provider listing (`railcoll info`)
//   fabric_transport.cpp  set-up (addresses, warm-up), sending in chunks,
//                         completions, reassembly, liveness, the goodbye
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

#include "runtime/transport/transport_settings.hpp"
#include "runtime/transport/transport.hpp"

namespace railcoll::rt {

class SocketTransport;
class FabricRail;

// What the fabric offers on each rail address: one line per rail (provider,
// fabric, domain, memory-registration mode), for `railcoll info`.
std::vector<std::string> describe_fabric_rails(const std::vector<std::string>& rail_addr, const std::string& provider);

class FabricTransport final : public ProcessTransport {
 public:
  // Opens one endpoint per rail address (and the local part: node memory and
  // Unix sockets). settings.ofi_provider: the provider asked for ("" = the
  // first libfabric offers on the rails' addresses).
  FabricTransport(const TransportSettings& settings, int me, int nranks, std::vector<std::string> rail_addr);
  ~FabricTransport() override;
  FabricTransport(const FabricTransport&) = delete;
  FabricTransport& operator=(const FabricTransport&) = delete;

  // ---- ProcessTransport
  std::string contact() const override;
  void connect(const Topology& topo, uint64_t comm_id, const std::string& job, const std::string& tag,
               const std::vector<std::string>& contacts, OutOfBand& oob, double deadline) override;
  std::string describe() const override;

  // ---- Transport
  void attach(FrameSink* sink) override;
  NodeSegment node() const override;
  void wake_node_sleepers() override;
  void send(int peer, int rail, const FrameHeader& h, const iovec* payload, size_t n) override;
  bool sends_pending() const override;
  void begin_call() override;
  void end_call() override;
  void progress(double wait_s, const NodeWait* sleep_on) override;
  int rails_up() const override;
  void probe_peers() override;
  bool answered_probe(int peer) const override;
  void abort_peers(uint64_t call, const std::string& why) override;
  void close(double deadline) override;

 private:
  // A frame on its way out: its header and payload, cut into chunks as send
  // buffers come free. The payload is read in place until the call ends.
  struct OutFrame {
    int peer = -1;
    uint64_t id = 0;  // unique among this rank's frames: the receiver's reassembly key
    FrameHeader hdr{};
    std::vector<iovec> iov;
    std::string owned;  // the payload from offset `base`, once copied (end_call, transport frames, a chunk again)
    uint64_t base = 0;
    uint64_t sent = 0;  // the payload's offset cut into chunks so far
    uint64_t end = 0;   // where this send stops (the payload's end; a chunk sent again: its own)
    bool started = false;
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
    OutFrame f;      // the frame (its id: the receiver's key for it, on either path)
    int rail = -1;
    bool answered = false;    // its CTS came
    bool messages = false;    // it went (or goes) by messages after all: a CTS is ignored
    uint32_t data = 0;        // the writes' CQ data: the receiver's slot | their number << 16
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
    int slot = -1;     // the writes' slot (RMA path)
    std::string cts;   // the answer to its RTS, given again to an RTS sent again
  };

  FrameHeader header(Frame type) const { return make_header(type, comm_id_, me_); }
  bool remote(int peer) const;
  bool lost(int peer) const;  // every rail to it given up
  void queue(int peer, int rail, const FrameHeader& h, const iovec* payload, size_t n, std::string owned);
  void queue_control(int peer, int rail, Frame type, std::string text = "");
  int usable_rail(int peer, int rail, bool* moved) const;
  void advance(double wait_s, const NodeWait* sleep_on);  // progress(), whose throws break the communicator
  void drive(bool* progressed);
  bool queued(int rail) const;
  void check_refused(double now);
  void finish_probe(int peer, double now);
  void peer_gone(int peer, double now);
  void post_sends(int rail);
  void poll_completions(int rail, bool* progressed);
  void completion_error(int rail);
  void on_chunk(int rail, const char* buf, size_t len, uint64_t src);
  void on_frame_chunk(int rail, const FrameHeader& h, uint64_t id, uint64_t off, const char* data, size_t len);
  void link_failed(int peer, int rail, const std::string& why);
  // The RMA path.
  static uint64_t in_key(int sender, uint64_t id) { return (static_cast<uint64_t>(sender) << 44) ^ id; }
  InFrame& new_in_frame(uint64_t key, int rail, const FrameHeader& h);
  void start_rma(int peer, int rail, const FrameHeader& h, const iovec* payload, size_t n);
  void queue_special(int peer, int rail, uint32_t kind, const FrameHeader& h, uint64_t id, std::string body);
  void on_rts(int rail, int from, const FrameHeader& h, uint64_t id);
  std::string answer_rts(int rail, int from, uint64_t key, InFrame& f);
  void on_cts(int rail, int from, uint64_t id, const char* body, size_t len);
  void rma_by_messages(RmaOut& o, bool moved);
  void post_writes(RmaOut& o);
  void write_done(int rail, RmaWrite* w, const std::string* error);
  void on_write_arrived(int rail, uint64_t data);
  void frame_complete(std::unordered_map<uint64_t, InFrame>::iterator it);
  bool writes_to_post() const;
  bool writes_outstanding() const;
  void forget_call_memory();
  void heartbeat(double now);
  void warm_up(double deadline);
  [[noreturn]] void protocol_error(int peer, int rail, const std::string& what) const;

  const TransportSettings settings_;
  const int me_, n_;
  const std::vector<std::string> rail_addr_;
  const std::string nonce_;  // this rank's token seed, published in its contact
  std::unique_ptr<SocketTransport> local_;  // node memory and local peers
  std::vector<std::unique_ptr<FabricRail>> rails_;
  Topology topo_;
  uint64_t comm_id_ = 0;
  FrameSink* sink_ = nullptr;
  uint64_t my_token_ = 0;
  std::vector<uint64_t> token_of_;             // [peer] the token its chunks carry
  std::vector<std::vector<char>> link_down_;   // [peer][rail] given up after a completion error
  std::vector<std::vector<char>> heard_;       // [peer][rail] its hello arrived (warm-up)
  std::vector<char> answered_, bye_;           // [peer]
  std::vector<double> heard_at_;               // [peer] last chunk from it
  std::vector<std::vector<std::deque<OutFrame>>> out_;  // [rail][peer] frames to cut into chunks
  std::vector<std::vector<int>> in_flight_;             // [rail][peer] our sends not yet completed
  std::vector<std::vector<double>> refused_since_;      // [rail][peer] sends refused since (0: not)
  int next_peer_ = 0;                                   // whose queue is cut first
  int chunks_per_link_ = 1;                             // chunks in flight per (rail, peer) at most
  struct Probe {  // a connect to a refusing peer's endpoint (check_refused)
    int fd = -1;
    double started = 0, since = 0, next = 0;
  };
  std::vector<Probe> probe_;  // [peer]
  bool warming_up_ = false;
  std::vector<std::deque<std::pair<fi_cq_data_entry, fi_addr_t>>> unhandled_;  // [rail] completions read, not handled
  std::unordered_map<uint64_t, InFrame> in_;   // (sender, frame id) -> a frame partly arrived
  uint64_t next_frame_id_ = 1;
  uint64_t rma_bytes_ = 0;                      // data frames this large go by writes (0: never)
  std::unordered_map<uint64_t, RmaOut> rma_;    // frame id -> a frame on the RMA path
  std::vector<InSlot> slots_;                   // the receiver's slots for frames coming by writes
  uint32_t next_slot_ = 0;
  std::vector<std::vector<uint64_t>> write_bytes_in_flight_;  // [rail][peer]
  uint64_t link_write_budget_ = 0;                            // bytes of writes in flight per link (0: any)
  uint64_t write_bytes_ = 0;                                  // a write's largest size
  uint64_t rma_frames_ = 0, rma_writes_ = 0, rma_declined_ = 0;  // for RAILCOLL_OFI_VERBOSE
  double rma_wait_s_ = 0, rma_write_s_ = 0;  // RTS to CTS, CTS to the last write's completion (summed)
  double next_heartbeat_ = 0;
  bool in_call_ = false;
  bool closing_ = false;  // close(): frames of calls and aborts are no longer looked at
  bool broken_ = false;   // a call threw, or abort_peers was called: close waits for nobody
  std::vector<std::string> unplaced_;  // strangers' chunks dropped (said once each)
};

}  // namespace railcoll::rt
