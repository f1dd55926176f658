// Frames over one stream socket: a Unix socket to a rank of this node (local/)
// or a TCP connection on a rail (tcp/). The queue is written with sendmsg
// straight from the payloads' memory; a header is read, the link's owner
// (LinkEvents) says where its payload goes, and the payload is read there with
// scatter reads. Every read also asks for up to kReadAhead bytes more into a
// buffer of the stream's: the next frame's header, and a small frame whole, come
// with the read before, so a read that returns less than it asked for says the
// socket is empty and no read is tried that would only say EAGAIN (a small
// frame: one recvmsg, where a header read, a payload read and an EAGAIN were
// three). Readiness is edge-triggered (epoll): can_read/can_write hold until a
// read or write says EAGAIN or a read comes back short. And the Hello that
// opens a connection, and the goodbye that ends a set of them.
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "runtime/transport/link.hpp"

namespace railcoll::rt {

// A frame in a stream's queue: how much of it is written, and (once written)
// the stream's byte count at its end, to tell when the peer confirmed it.
struct StreamFrame {
  OutFrame f;
  size_t done = 0;
  uint64_t end = 0;
  size_t total() const { return sizeof(FrameHeader) + f.payload_bytes(); }
};

class FrameStream {
 public:
  enum class Read { Idle, Limit, Closed };
  // Bytes a read asks for beyond the frame it is in: a frame of up to this
  // size less its header arrives with one read; a larger one's first bytes
  // are copied from the buffer, the rest read in place.
  static constexpr size_t kReadAhead = 4096;

  int fd = -1, peer = -1, rail = -1;  // rail -1: a local peer's Unix socket
  std::deque<StreamFrame> out;         // queued, the first maybe partly written
  std::deque<StreamFrame> unacked;     // written, kept (keep_written) until the peer confirmed them
  bool keep_written = false;           // frames that move with a rail are kept once written
  uint64_t written = 0, nread = 0;     // bytes through this connection each way
  int64_t read_limit = -1;             // read no further than this byte count (-1: no limit)
  bool closed = false;
  bool bye = false;                    // the peer said goodbye: nothing more follows
  double heard_at = 0;                 // last byte received
  // Edge-triggered readiness, and the fd registered for it (-1: none).
  bool can_read = false, can_write = true;
  // epoll said the peer closed its side (or the socket failed): a short read
  // no longer means "nothing more", as the end itself is still to be read.
  bool hung_up = false;
  int ep_fd = -1;

  std::string name() const;
  // What epoll said of the fd (its event bits): readable, writable, hung up.
  void note_ready(uint32_t events);
  // Writes what the socket takes. false: it refused; *error says why.
  bool write(std::string* error);
  // Reads and hands up frames until the socket is empty (or 64 rounds): Idle;
  // Limit: read_limit reached; Closed: end of stream or an error (*error:
  // why, "" for an orderly end). Throws what the events throw.
  Read read(LinkEvents& ev, std::string* error);
  // A new connection replaces the old one: the stream starts again.
  void restart(int new_fd, double now);
  // The call returns: queued payloads stop pointing into its memory.
  void keep_payloads();
  // Sends a whole frame at once, past the queue, best effort (an abort).
  void send_now(const OutFrame& f) const;
  // Bytes read ahead and not yet handed up, between frames (the start of a
  // header; the goodbye reads on from them); "" inside a frame's payload.
  std::string read_ahead() const;

 private:
  void on_header(LinkEvents& ev);
  void on_payload_done(LinkEvents& ev);
  void place(const char* from, size_t n);
  bool hand_up_read_ahead(LinkEvents& ev);
  bool took(ssize_t r, size_t want, std::string* error);

  FrameHeader hdr_{};
  bool in_payload_ = false;
  Landing mode_ = Landing::Place;
  std::vector<iovec> dst_;
  size_t payload_got_ = 0;
  std::vector<char> buffer_;  // held or dropped payloads
  std::vector<char> ahead_;   // read ahead: [ahead_at_, ahead_end_) not yet handed up
  size_t ahead_at_ = 0, ahead_end_ = 0;
  bool ended_ = false;        // the last read saw the end of the stream
};

// The Hello that opens a connection to `peer` on `rail` (-1: local): its seq is
// the connection's generation, so an old Hello cannot open a new one.
std::string hello_frame(const std::string& job_key, uint64_t comm, int me, int peer, int rail, uint32_t generation,
                        const std::string& nonce);

// A goodbye on every open stream, then reading until every peer said goodbye
// or closed (whole frames only; anything else is dropped), until `deadline`
// at most, so no close resets a peer; then every stream closed.
void goodbye_streams(const std::vector<FrameStream*>& streams, const FrameHeader& bye, double deadline);

}  // namespace railcoll::rt
