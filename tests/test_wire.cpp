// The socket-free parts of the runtime's defences: libcrypto's HMAC-SHA256 against RFC 4231,
// the store's handshake and request decoder, and the checks every frame passes
// against the receiver's plan before a byte of payload is written.
#include <gtest/gtest.h>

#include "runtime/bootstrap/auth.hpp"
#include "runtime/engine/plan.hpp"
#include "runtime/bootstrap/store.hpp"
#include "runtime/transport/wire.hpp"

using namespace railcoll;
using namespace railcoll::rt;

namespace {
std::string hex(const Digest& d) { return to_hex(d.data(), d.size()); }
}  // namespace

TEST(Auth, Sha256AndHmacMatchPublishedVectors) {
  // FIPS 180-2 examples.
  EXPECT_EQ(hex(sha256("abc", 3)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256("", 0)), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // RFC 4231 test cases 1, 2, 3, 4, 6 and 7 (6 and 7: a key longer than the block is hashed first).
  EXPECT_EQ(hex(hmac_sha256(std::string(20, '\x0b'), std::string("Hi There"))),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hex(hmac_sha256("Jefe", std::string("what do ya want for nothing?"))),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(hex(hmac_sha256(std::string(20, '\xaa'), std::string(50, '\xdd'))),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  std::string key4;
  for (char c = 1; c <= 25; ++c) key4 += c;
  EXPECT_EQ(hex(hmac_sha256(key4, std::string(50, '\xcd'))),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  EXPECT_EQ(hex(hmac_sha256(std::string(131, '\xaa'),
                            std::string("Test Using Larger Than Block-Size Key - Hash Key First"))),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(hex(hmac_sha256(std::string(131, '\xaa'),
                            std::string("This is a test using a larger than block-size key and a larger than "
                                        "block-size data. The key needs to be hashed before being used by the HMAC "
                                        "algorithm."))),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
  // A job without RAILCOLL_JOB_KEY authenticates with the empty key (Python's hmac agrees).
  EXPECT_EQ(hex(hmac_sha256("", std::string())), "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
  std::string a = "0123456789abcdef", b = a;
  EXPECT_TRUE(equal_constant_time(a.data(), b.data(), a.size()));
  b[15] = 'g';
  EXPECT_FALSE(equal_constant_time(a.data(), b.data(), a.size()));
  EXPECT_EQ(from_hex(to_hex(a.data(), a.size())), a);
  EXPECT_EQ(from_hex("zz"), "");
}

namespace {
// Drives one client, rank `rank`, through the store's handshake with `key` and `job`.
bool authenticate(StoreServerCore& core, int client, const std::string& key, const std::string& job,
                  std::vector<std::pair<int, std::string>>* out, std::string* why, int rank = 1) {
  std::string nonce(kStoreNonce, 'n'), mine(kStoreNonce, 'm');
  std::string challenge = core.open(client, nonce);
  EXPECT_EQ(challenge.substr(0, 4), "RCS3");
  std::string answer = store_answer(key, job, nonce, mine, rank);
  why->clear();
  bool ok = core.feed(client, answer.data(), answer.size(), out, why);
  if (ok) {
    EXPECT_EQ(out->back().second, "RCO3" + store_server_proof(key, job, nonce, mine, rank));
  }
  return ok;
}
std::string request(char op, const std::string& body) {
  std::string b = std::string(1, op) + body;
  uint32_t n = static_cast<uint32_t>(b.size());
  return std::string(reinterpret_cast<char*>(&n), 4) + b;
}
}  // namespace

TEST(Store, OnlyAuthenticatedClientsReadOrWrite) {
  StoreServerCore core("secret", "job1", 8);
  std::vector<std::pair<int, std::string>> out;
  std::string why;
  ASSERT_TRUE(authenticate(core, 1, "secret", "job1", &out, &why)) << why;
  EXPECT_FALSE(authenticate(core, 2, "wrong", "job1", &out, &why));
  EXPECT_NE(why.find("wrong job key"), std::string::npos);
  EXPECT_FALSE(authenticate(core, 3, "secret", "job2", &out, &why));
  // A request before the handshake is refused, and nothing is stored or answered.
  core.open(4, std::string(kStoreNonce, 'x'));
  out.clear();
  std::string set = request('S', std::string("k\0v", 3));
  EXPECT_FALSE(core.feed(4, set.data(), set.size(), &out, &why));
  EXPECT_TRUE(out.empty());
  // A get waits for the set, then both the early and a late reader get the value.
  std::string get = request('G', "k");
  ASSERT_TRUE(core.feed(1, get.data(), get.size(), &out, &why));
  EXPECT_TRUE(out.empty());
  ASSERT_TRUE(core.feed(1, set.data(), set.size(), &out, &why));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].second, std::string("\x01\0\0\0v", 5));
  // Byte by byte works as well as whole messages.
  out.clear();
  for (char c : get) ASSERT_TRUE(core.feed(1, &c, 1, &out, &why));
  ASSERT_EQ(out.size(), 1u);
  // Malformed requests drop the client.
  std::string zero(4, '\0');
  EXPECT_FALSE(core.feed(1, zero.data(), zero.size(), &out, &why));
  ASSERT_TRUE(authenticate(core, 5, "secret", "job1", &out, &why));
  std::string unknown = request('X', "k");
  EXPECT_FALSE(core.feed(5, unknown.data(), unknown.size(), &out, &why));
  ASSERT_TRUE(authenticate(core, 6, "secret", "job1", &out, &why));
  std::string novalue = request('S', "k");
  EXPECT_FALSE(core.feed(6, novalue.data(), novalue.size(), &out, &why));
}

// A rank of the job that has not joined fails the handshake: it is told why
// (nothing about the key), and every get waiting now or later, of a key not
// set, is answered with the failure at once; a set key still reads. A wrong
// claim for a rank that already joined, or for no rank, fails nothing.
TEST(Store, ARankWithAnotherKeyFailsEveryRankAtOnce) {
  StoreServerCore core("secret", "job1", 4);
  std::vector<std::pair<int, std::string>> out;
  std::string why;
  ASSERT_TRUE(authenticate(core, 1, "secret", "job1", &out, &why, 0));
  ASSERT_TRUE(authenticate(core, 2, "secret", "job1", &out, &why, 1));
  std::string set = request('S', std::string("k\0v", 3)), get_k = request('G', "k"), get_x = request('G', "x");
  ASSERT_TRUE(core.feed(1, set.data(), set.size(), &out, &why));
  out.clear();
  ASSERT_TRUE(core.feed(2, get_x.data(), get_x.size(), &out, &why));  // waits
  EXPECT_TRUE(out.empty());
  // Wrong claims that fail nothing: rank 1 is in, rank 9 is no rank.
  EXPECT_FALSE(authenticate(core, 3, "stranger", "job1", &out, &why, 1));
  EXPECT_FALSE(authenticate(core, 4, "stranger", "job1", &out, &why, 9));
  EXPECT_EQ(core.failed(), "");
  for (auto& o : out) EXPECT_TRUE(o.first == 3 || o.first == 4) << "told someone else";
  out.clear();
  // Rank 3 with another key: refused with the reason, and the waiting get fails.
  EXPECT_FALSE(authenticate(core, 5, "other", "job1", &out, &why, 3));
  EXPECT_NE(why.find("its key differs"), std::string::npos) << why;
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].first, 5);
  EXPECT_EQ(out[0].second.substr(0, 4), "RCN3");
  EXPECT_NE(out[0].second.find("the ranks' RAILCOLL_JOB_KEY differ"), std::string::npos);
  EXPECT_EQ(out[0].second.find("secret"), std::string::npos);
  EXPECT_EQ(out[1].first, 2);
  EXPECT_EQ(out[1].second.substr(0, 4), std::string("\xff\xff\xff\xff"));
  EXPECT_NE(out[1].second.find("rank 3 cannot join: the ranks' RAILCOLL_JOB_KEY differ"), std::string::npos);
  out.clear();
  ASSERT_TRUE(core.feed(2, get_k.data(), get_k.size(), &out, &why));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].second, std::string("\x01\0\0\0v", 5));
  out.clear();
  ASSERT_TRUE(core.feed(1, get_x.data(), get_x.size(), &out, &why));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].second.find("rank 3 cannot join"), std::string::npos);
  // Another job id is named as such.
  StoreServerCore other("secret", "job1", 2);
  EXPECT_FALSE(authenticate(other, 1, "secret", "job2", &out, &why, 1));
  EXPECT_NE(other.failed().find("its RAILCOLL_JOB_ID differs"), std::string::npos) << other.failed();
}

// A joined rank that gives up set-up fails every waiting get with its reason;
// the store may stop once every rank has come and gone.
TEST(Store, ARankThatGivesUpFailsTheOthersAtOnce) {
  StoreServerCore core("secret", "job1", 3);
  std::vector<std::pair<int, std::string>> out;
  std::string why;
  ASSERT_TRUE(authenticate(core, 1, "secret", "job1", &out, &why, 0));
  ASSERT_TRUE(authenticate(core, 2, "secret", "job1", &out, &why, 1));
  std::string get = request('G', "x"), give_up = request('F', "RAILCOLL_BCAST_ALGO names no algorithm");
  out.clear();
  ASSERT_TRUE(core.feed(1, get.data(), get.size(), &out, &why));
  EXPECT_FALSE(core.everyone_left());
  ASSERT_TRUE(core.feed(2, give_up.data(), give_up.size(), &out, &why));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, 1);
  EXPECT_NE(out[0].second.find("rank 1 gave up set-up: RAILCOLL_BCAST_ALGO names no algorithm"), std::string::npos);
  core.close(1);
  core.close(2);
  EXPECT_FALSE(core.everyone_left()) << "rank 2 has not come yet";
  ASSERT_TRUE(authenticate(core, 3, "secret", "job1", &out, &why, 2));
  core.close(3);
  EXPECT_TRUE(core.everyone_left());
}

namespace {
// 2 nodes x 2 ranks, 2 rails; rank 2 receives rank 0's striped 4 KiB block.
struct DirectPlan : ::testing::Test {
  Topology topo = Topology::from_node_map({0, 0, 1, 1}, 2);
  std::unique_ptr<Plan> plan = make_plan(topo, 2, Collective::Allgather, "direct", {4096, 4096, 4096, 4096}, {}, "k");
  FrameHeader frame_from_0(int part) {
    for (auto& kv : plan->incoming) {
      if ((kv.first >> 32) != 0 || kv.second.kind != OpKind::Put) continue;
      auto parts = put_parts(*plan, topo, 0, kv.second);
      FrameHeader h{};
      h.magic = kWireMagic, h.version = kWireVersion, h.type = static_cast<uint16_t>(Frame::Data);
      h.call_sig = plan->sig, h.sender = 0, h.op = static_cast<int32_t>(kv.first & 0xffffffff);
      h.part = static_cast<uint16_t>(part), h.nparts = static_cast<uint16_t>(parts.size());
      for (int p = 0; p < part; ++p) h.offset += parts[p].second;
      h.length = parts[part].second, h.total = kv.second.bytes();
      return h;
    }
    ADD_FAILURE() << "no put from rank 0 to rank 2";
    return {};
  }
  bool accepted(const FrameHeader& h, int rail) {
    std::string why;
    bool mismatch;
    return match_frame(*plan, topo, 2, h, rail, &why, &mismatch) != nullptr;
  }
};
}  // namespace

TEST_F(DirectPlan, FramesMustMatchTheScheduleExactly) {
  FrameHeader h = frame_from_0(1);
  ASSERT_EQ(h.nparts, 2);  // striped over both rails
  EXPECT_TRUE(accepted(h, 1));
  EXPECT_FALSE(accepted(h, 0)) << "part on the wrong rail";
  EXPECT_FALSE(accepted(h, -1)) << "a remote part on the local socket";
  FrameHeader bad = h;
  bad.offset += 1;
  EXPECT_FALSE(accepted(bad, 1)) << "offset";
  bad = h, bad.length += 1;
  EXPECT_FALSE(accepted(bad, 1)) << "length past the part";
  bad = h, bad.total = 1ull << 40;
  EXPECT_FALSE(accepted(bad, 1)) << "total";
  bad = h, bad.part = 2;
  EXPECT_FALSE(accepted(bad, 1)) << "part index";
  bad = h, bad.nparts = 3;
  EXPECT_FALSE(accepted(bad, 1)) << "part count";
  bad = h, bad.op = 9999;
  EXPECT_FALSE(accepted(bad, 1)) << "an op that is no message to this rank";
  bad = h, bad.type = static_cast<uint16_t>(Frame::Notify), bad.length = 0;
  EXPECT_FALSE(accepted(bad, 1)) << "a notify for a put";
  bad = h, bad.call_sig ^= 1;
  std::string why;
  bool mismatch = false;
  EXPECT_EQ(match_frame(*plan, topo, 2, bad, 1, &why, &mismatch), nullptr);
  EXPECT_TRUE(mismatch);
}

TEST_F(DirectPlan, APartArrivingTwiceIsAReplay) {
  Arrivals a;
  FrameHeader p0 = frame_from_0(0), p1 = frame_from_0(1);
  bool complete = false;
  EXPECT_TRUE(a.add(p0, &complete));
  EXPECT_FALSE(complete);
  EXPECT_FALSE(a.add(p0, &complete)) << "the same part again";
  EXPECT_TRUE(a.add(p1, &complete));
  EXPECT_TRUE(complete);
  EXPECT_FALSE(a.add(p1, &complete)) << "a part of a message already complete";
  a.clear();  // the next call
  EXPECT_TRUE(a.add(p0, &complete));
}

TEST(Wire, HeaderChecksAndHelloProofs) {
  FrameHeader h{};
  h.magic = kWireMagic, h.version = kWireVersion, h.type = static_cast<uint16_t>(Frame::Data), h.comm = 7, h.sender = 3;
  EXPECT_EQ(header_problem(h, 7, 3), "");
  EXPECT_NE(header_problem(h, 8, 3), "");
  EXPECT_NE(header_problem(h, 7, 2), "");
  FrameHeader v = h;
  v.version = 1;
  EXPECT_NE(header_problem(v, 7, 3).find("wire version 1"), std::string::npos);
  v = h, v.type = 99;
  EXPECT_NE(header_problem(v, 7, 3), "");
  v = h, v.length = kMaxFrameLength + 1;
  EXPECT_NE(header_problem(v, 7, 3), "");
  // The proof binds key, header, receiver and the receiver's nonce.
  std::string p = hello_proof("k", h, 1, "nonce");
  EXPECT_EQ(p.size(), kHelloProof);
  EXPECT_NE(p, hello_proof("k2", h, 1, "nonce"));
  EXPECT_NE(p, hello_proof("k", h, 2, "nonce"));
  EXPECT_NE(p, hello_proof("k", h, 1, "other"));
  v = h, v.op = 1;
  EXPECT_NE(p, hello_proof("k", v, 1, "nonce"));
}
