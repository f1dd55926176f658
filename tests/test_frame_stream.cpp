// Frames over a stream socket (stream/frame_stream.hpp) on a real socketpair:
// frames arriving whole, split at every byte, several in one read, a given-up
// connection read exactly to its end, a malformed header refused, and what a
// small frame costs in reads (one, with no EAGAIN: the read-ahead).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/transport/stream/frame_stream.hpp"

using namespace railcoll::rt;

// Every recv/recvmsg of this program is counted (the runtime's library is
// linked in statically, so its calls bind here), and those that said EAGAIN.
namespace {
int g_reads = 0, g_eagain = 0;
}  // namespace

extern "C" ssize_t recvmsg(int fd, struct msghdr* m, int flags) {
  ++g_reads;
  const ssize_t r = syscall(SYS_recvmsg, fd, m, flags);
  if (r < 0 && errno == EAGAIN) ++g_eagain;
  return r;
}

extern "C" ssize_t recv(int fd, void* buf, size_t len, int flags) {
  ++g_reads;
  const ssize_t r = syscall(SYS_recvfrom, fd, buf, len, flags, nullptr, nullptr);
  if (r < 0 && errno == EAGAIN) ++g_eagain;
  return r;
}

namespace {

// The frames a stream handed up, each payload placed into two pieces (Place),
// or held (Hold: frames with op < 0); a header whose magic is wrong is refused.
struct Recorder final : LinkEvents {
  struct Got {
    FrameHeader h;
    std::string payload;
  };
  std::vector<Got> got;
  std::string a, b;  // the current frame's two pieces (Place)

  Landing frame_header(int, int, const FrameHeader& h, std::vector<iovec>* place) override {
    if (h.magic != kWireMagic) throw std::runtime_error("malformed header");
    if (h.op < 0) return Landing::Hold;
    a.assign(h.length / 3, '\0');
    b.assign(h.length - a.size(), '\0');
    place->push_back({a.data(), a.size()});
    place->push_back({b.data(), b.size()});
    return Landing::Place;
  }
  void frame_done(int, int, const FrameHeader& h, std::vector<char>* held) override {
    got.push_back({h, held ? std::string(held->begin(), held->end()) : a + b});
  }
  void link_broken(int, int, const std::string&, bool) override {}
  void link_closed(int, int) override {}
  void link_restored(int, int) override {}
  bool may_restore(int, int) override { return true; }
  void interface_changed(int, bool) override {}
};

std::string payload_of(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + static_cast<size_t>(seed) * 7) & 0xff);
  return s;
}

std::string frame(int seq, size_t n, int op = 0) {
  FrameHeader h = make_header(Frame::Data, 42, 1);
  h.seq = static_cast<uint64_t>(seq);
  h.op = op;
  h.length = n;
  return std::string(reinterpret_cast<const char*>(&h), sizeof h) + payload_of(n, seq);
}

struct Pair {
  int fd[2];
  FrameStream s;
  Pair() {
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fd), 0);
    s.fd = fd[0];
    s.peer = 1;
    s.can_read = true;
  }
  ~Pair() {
    ::close(fd[0]);
    ::close(fd[1]);
  }
  void put(const std::string& bytes) {
    ASSERT_EQ(::write(fd[1], bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    s.can_read = true;  // what epoll would say
  }
  FrameStream::Read read(Recorder& r) {
    std::string error;
    const auto got = s.read(r, &error);
    EXPECT_NE(got, FrameStream::Read::Closed) << error;
    return got;
  }
};

void expect_frames(const Recorder& r, const std::vector<std::pair<int, size_t>>& want) {
  ASSERT_EQ(r.got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(r.got[i].h.seq, static_cast<uint64_t>(want[i].first)) << "frame " << i;
    EXPECT_EQ(r.got[i].payload, payload_of(want[i].second, want[i].first)) << "frame " << i;
  }
}

}  // namespace

// Small frames that came together cost one read, not a header read, a payload
// read and an EAGAIN each: a read that comes back short says the socket is empty.
TEST(FrameStream, SmallFramesThatCameTogetherCostOneRead) {
  Pair p;
  Recorder r;
  p.put(frame(1, 8) + frame(2, 0) + frame(3, 100) + frame(4, 8, -1));
  g_reads = g_eagain = 0;
  EXPECT_EQ(p.read(r), FrameStream::Read::Idle);
  expect_frames(r, {{1, 8}, {2, 0}, {3, 100}, {4, 8}});
  EXPECT_EQ(g_reads, 1);
  EXPECT_EQ(g_eagain, 0);
  EXPECT_FALSE(p.s.can_read);
}

// Every frame split at every byte: a header or payload in pieces, a header's
// start read ahead with another frame's end, all whole in order.
TEST(FrameStream, FramesSplitAtEveryByteArriveWhole) {
  const std::string all = frame(1, 5) + frame(2, 0) + frame(3, FrameStream::kReadAhead + 333) + frame(4, 70, -1) +
                          frame(5, 3 * FrameStream::kReadAhead) + frame(6, 1);
  const std::vector<std::pair<int, size_t>> want{{1, 5},
                                                 {2, 0},
                                                 {3, FrameStream::kReadAhead + 333},
                                                 {4, 70},
                                                 {5, 3 * FrameStream::kReadAhead},
                                                 {6, 1}};
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{71}, size_t{72}, size_t{73}, size_t{1000}, size_t{4096}}) {
    Pair p;
    Recorder r;
    for (size_t at = 0; at < all.size(); at += chunk) {
      p.put(all.substr(at, chunk));
      p.read(r);
    }
    expect_frames(r, want);
    EXPECT_EQ(p.s.nread, all.size()) << "chunks of " << chunk;
  }
}

// A read hands up at most 64 reads' worth, then lets the other links have
// their turn; the frames read ahead by the last of those are handed up too,
// though the socket is empty now and epoll will not say so again.
TEST(FrameStream, FramesReadAheadByTheLastReadOfATurnAreHandedUp) {
  Pair p;
  Recorder r;
  int big = 1 << 20;
  setsockopt(p.fd[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  std::string all;
  std::vector<std::pair<int, size_t>> want;
  for (int i = 1; i <= 63; ++i) {  // each fills one read exactly
    all += frame(i, FrameStream::kReadAhead - sizeof(FrameHeader));
    want.push_back({i, FrameStream::kReadAhead - sizeof(FrameHeader)});
  }
  all += frame(64, 100);  // the 64th read comes back short
  want.push_back({64, 100});
  p.put(all);
  g_reads = 0;
  p.read(r);
  EXPECT_EQ(g_reads, 64);
  EXPECT_FALSE(p.s.can_read);
  expect_frames(r, want);
}

// A given-up connection is read up to where the peer says it ends and no
// further, even with room left in the read-ahead: the rest stays in the socket.
TEST(FrameStream, AReadLimitIsNotPassed) {
  Pair p;
  Recorder r;
  const std::string first = frame(1, 10) + frame(2, 20);
  const std::string third = frame(3, 30);
  p.put(first + third);
  p.s.read_limit = static_cast<int64_t>(first.size());
  EXPECT_EQ(p.read(r), FrameStream::Read::Limit);
  expect_frames(r, {{1, 10}, {2, 20}});
  EXPECT_EQ(p.s.nread, first.size());
  std::string rest(third.size() + 1, '\0');
  EXPECT_EQ(::recv(p.fd[0], rest.data(), rest.size(), MSG_DONTWAIT), static_cast<ssize_t>(third.size()));
  EXPECT_EQ(rest.substr(0, third.size()), third);
}

// A malformed header after a good frame: the good one is handed up, the
// refusal reaches the caller, and not a byte of the bad frame lands.
TEST(FrameStream, AMalformedHeaderIsRefusedAfterTheFramesBefore) {
  Pair p;
  Recorder r;
  std::string bad = frame(2, 16);
  bad[0] ^= 0x5a;  // the magic
  p.put(frame(1, 12) + bad);
  std::string error;
  EXPECT_THROW(p.s.read(r, &error), std::runtime_error);
  expect_frames(r, {{1, 12}});
}

// The stream's end after whole frames is an orderly close; in a frame's middle too
// (the events above decide what a missing rest means), with everything before handed up.
TEST(FrameStream, TheEndOfTheStreamIsSeenAfterTheFramesBefore) {
  Pair p;
  Recorder r;
  p.put(frame(1, 9));
  ::shutdown(p.fd[1], SHUT_WR);
  p.s.hung_up = true;  // what epoll says (EPOLLRDHUP)
  std::string error = "x";
  EXPECT_EQ(p.s.read(r, &error), FrameStream::Read::Closed);
  EXPECT_EQ(error, "");
  expect_frames(r, {{1, 9}});
}
