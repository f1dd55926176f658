// libFuzzer target for everything that decodes bytes from the network: the
// store's handshake and requests (StoreServerCore), the frame checks
// (header_problem, match_frame, Arrivals) with the payload written where the
// runtime would write it, and the set-up records of the out-of-band exchange
// (unpack_fields). A write outside the buffers the schedule sizes is a crash;
// so is any ASan/UBSan report.
//
// Input: byte 0 picks the mode (0xff: 3, else byte 0 mod 3, so the corpus
// of the first three modes kept its meaning), the rest is the stream.
//   0: raw bytes to the store, in chunks (the handshake decoder)
//   1: a valid handshake first, then raw requests (the request decoder)
//   2: 72-byte frame headers against the plans below (the frame checks)
//   3: a set-up record (unpack_fields): what it accepts must pack back to the same bytes
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/bootstrap/oob.hpp"
#include "runtime/engine/plan.hpp"
#include "runtime/bootstrap/store.hpp"
#include "runtime/transport/wire.hpp"

using namespace railcoll;
using namespace railcoll::rt;

namespace {

void fuzz_store(const uint8_t* d, size_t n, bool authenticate) {
  StoreServerCore core("key", "job", 4);
  std::vector<std::pair<int, std::string>> out;
  std::string why, nonce(kStoreNonce, 's'), mine(kStoreNonce, 'c');
  core.open(1, nonce);
  core.open(2, nonce);  // a second client that may be woken by a set
  if (authenticate) {
    std::string answer = store_answer("key", "job", nonce, mine, 1);
    if (!core.feed(1, answer.data(), answer.size(), &out, &why)) __builtin_trap();
    std::string get = std::string("\x02\0\0\0Gk", 6);
    core.feed(2, answer.data(), answer.size(), &out, &why);
    core.feed(2, get.data(), get.size(), &out, &why);
  }
  // Chunk sizes from the data itself, so split messages are exercised.
  size_t at = 0;
  while (at < n) {
    size_t chunk = 1 + d[at] % 64;
    chunk = std::min(chunk, n - at);
    out.clear();
    bool ok = core.feed(1, reinterpret_cast<const char*>(d) + at, chunk, &out, &why);
    if (!authenticate && !core.authenticated(1))
      for (auto& o : out)  // a stranger may be told it is refused, nothing else
        if (o.first == 1 && o.second.compare(0, 4, "RCN3") != 0) __builtin_trap();
    if (!ok) return;
    at += chunk;
  }
}

struct Case {
  Topology topo;
  int me;
  std::unique_ptr<Plan> plan;
  std::vector<uint64_t> counts;
};

std::vector<Case>& cases() {
  static std::vector<Case> v = [] {
    std::vector<Case> c;
    struct Spec {
      std::vector<int> nodes;
      int rails, me;
      const char* algo;
      uint64_t bytes;
    } specs[] = {{{0, 0, 1, 1}, 2, 2, "direct", 4096},   {{0, 0, 1, 1}, 2, 1, "bruck", 1000},
                 {{0, 0, 1, 1, 2}, 2, 0, "smp_direct", 3000}, {{0, 1, 2}, 3, 1, "ring", 5000},
                 {{0, 0, 0, 1}, 1, 3, "smp_gather_bcast", 64}};
    for (auto& s : specs) {
      Case k{Topology::from_node_map(s.nodes, s.rails), s.me, nullptr,
             std::vector<uint64_t>(s.nodes.size(), s.bytes)};
      k.plan = make_plan(k.topo, s.me, railcoll::Collective::Allgather, s.algo, k.counts, {}, s.algo);
      c.push_back(std::move(k));
    }
    return c;
  }();
  return v;
}

void fuzz_frames(const uint8_t* d, size_t n) {
  if (n < 1) return;
  Case& k = cases()[d[0] % cases().size()];
  const Schedule& s = k.plan->sched;
  uint64_t total = 0;
  for (auto c : k.counts) total += c;
  int node = k.topo.node_of(k.me);
  std::vector<char> region[4];
  region[static_cast<int>(Region::Send)].resize(k.counts[k.me]);
  region[static_cast<int>(Region::Recv)].resize(total);
  region[static_cast<int>(Region::Scratch)].resize(s.scratch_bytes[k.me]);
  region[static_cast<int>(Region::Shared)].resize(s.shared_bytes[node]);
  Arrivals arrivals;
  for (size_t at = 1; at + sizeof(FrameHeader) + 2 <= n; at += sizeof(FrameHeader) + 2) {
    FrameHeader h;
    memcpy(&h, d + at, sizeof h);
    uint8_t flags = d[at + sizeof h], pick = d[at + sizeof h + 1];
    // Help the fuzzer past the 64-bit fields it cannot guess.
    if (flags & 1) h.call_sig = k.plan->sig;
    if ((flags & 2) && !k.plan->incoming.empty()) {
      auto it = k.plan->incoming.begin();
      std::advance(it, pick % k.plan->incoming.size());
      h.sender = static_cast<int32_t>(it->first >> 32);
      h.op = static_cast<int32_t>(it->first & 0xffffffff);
    }
    if (flags & 4) h.magic = kWireMagic, h.version = kWireVersion, h.comm = 0;
    int peer = h.sender;
    int rail = (flags >> 3) % (k.topo.rails() + 1) - 1;
    if (!header_problem(h, 0, peer).empty()) continue;
    if (h.type != static_cast<uint16_t>(Frame::Data) && h.type != static_cast<uint16_t>(Frame::Notify)) continue;
    std::string why;
    bool mismatch;
    const Op* op = match_frame(*k.plan, k.topo, k.me, h, rail, &why, &mismatch);
    if (!op) continue;
    if (h.type == static_cast<uint16_t>(Frame::Data)) {
      uint64_t written = 0;
      for_each_piece(*op, h.offset, h.length, true, [&](const Span& sp) {
        auto& buf = region[static_cast<int>(sp.region)];
        if (sp.offset > buf.size() || sp.length > buf.size() - sp.offset) __builtin_trap();  // out of bounds
        memset(buf.data() + sp.offset, 0xAB, sp.length);
        written += sp.length;
      });
      if (written != h.length) __builtin_trap();  // payload would not all land in the op's spans
    }
    bool complete;
    arrivals.add(h, &complete);
  }
}

void fuzz_record(const uint8_t* d, size_t n) {
  std::string packed(reinterpret_cast<const char*>(d), n);
  std::vector<std::string> fields;
  if (unpack_fields(packed, &fields) && pack_fields(fields) != packed) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  switch (data[0] == 0xff ? 3 : data[0] % 3) {
    case 0: fuzz_store(data + 1, size - 1, false); break;
    case 1: fuzz_store(data + 1, size - 1, true); break;
    case 2: fuzz_frames(data + 1, size - 1); break;
    case 3: fuzz_record(data + 1, size - 1); break;
  }
  return 0;
}
