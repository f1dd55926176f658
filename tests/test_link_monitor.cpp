// The link monitor (src/runtime/transport/rails/link_monitor.hpp): the hold-down policy on a
// made-up clock, the netlink parser on made-up messages, and (as root) real
// link messages from a veth pair in a network namespace of its own.
#include "runtime/transport/rails/link_monitor.hpp"

#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/bootstrap/net.hpp"

using railcoll::rt::HoldDown;
using railcoll::rt::LinkMonitor;

TEST(HoldDown, FirstOutageHoldsOneSecondAfterTheLinkIsBack) {
  HoldDown h;
  EXPECT_TRUE(h.usable());
  EXPECT_TRUE(h.link_down(10.0));  // give the rail up
  EXPECT_FALSE(h.usable());
  EXPECT_FALSE(h.expire(30.0));  // the link is still down: however long
  h.link_up(40.0);
  EXPECT_FALSE(h.expire(40.9));
  EXPECT_TRUE(h.expire(41.0));
  EXPECT_TRUE(h.usable());
  EXPECT_FALSE(h.expire(41.1));  // once
  EXPECT_EQ(h.hold(), HoldDown::kFirst);
}

TEST(HoldDown, AFlappingLinkIsNotTakenBackWhileItFlaps) {
  HoldDown h;
  double t = 0;
  EXPECT_TRUE(h.link_down(t));
  // 10 s of down/up every 0.25 s (times that add up exactly in binary)
  for (int i = 0; i < 40; ++i) {
    h.link_up(t += 0.25);
    EXPECT_FALSE(h.expire(t + 0.24));
    EXPECT_FALSE(h.link_down(t += 0.25)) << "a down while held gives nothing up again";
    EXPECT_FALSE(h.usable());
  }
  h.link_up(t += 0.25);  // the flapping ends up
  EXPECT_FALSE(h.expire(t + 0.99));
  EXPECT_TRUE(h.expire(t + 1.0));
  EXPECT_EQ(h.hold(), HoldDown::kFirst) << "downs while held cost nothing, so they do not lengthen the hold";
}

TEST(HoldDown, FailingSoonAfterTakenBackDoublesTheHoldUpToTheCap) {
  HoldDown h;
  double t = 0, expected = HoldDown::kFirst;
  EXPECT_TRUE(h.link_down(t));
  for (int round = 0; round < 6; ++round) {
    h.link_up(t += 0.125);
    EXPECT_FALSE(h.expire(t + h.hold() - 0.01));
    EXPECT_TRUE(h.expire(t += h.hold()));
    EXPECT_EQ(h.hold(), expected);
    EXPECT_TRUE(h.link_down(t += 3.0));  // 3 s after it was taken back: a flap
    expected = std::min(2 * expected, HoldDown::kMax);
    EXPECT_EQ(h.hold(), expected);
  }
  EXPECT_EQ(h.hold(), HoldDown::kMax);
  // Back, and carrying traffic for longer than the flap window: the next failure is a new incident.
  h.link_up(t += 0.125);
  EXPECT_TRUE(h.expire(t += HoldDown::kMax));
  EXPECT_TRUE(h.link_down(t + HoldDown::kFlapWindow + 0.125));
  EXPECT_EQ(h.hold(), HoldDown::kFirst);
}

namespace {

// One RTM_NEWLINK (or RTM_DELLINK) message for interface `index` with `flags`,
// and its name as an IFLA_IFNAME attribute when given.
void add_link_message(std::vector<char>* buf, uint16_t type, int index, unsigned flags, const std::string& name = "") {
  const size_t attr = name.empty() ? 0 : RTA_SPACE(name.size() + 1);
  nlmsghdr nh{};
  nh.nlmsg_len = NLMSG_LENGTH(sizeof(ifinfomsg)) + attr;
  nh.nlmsg_type = type;
  ifinfomsg ifi{};
  ifi.ifi_index = index;
  ifi.ifi_flags = flags;
  size_t at = buf->size();
  buf->resize(at + NLMSG_ALIGN(nh.nlmsg_len), 0);
  memcpy(buf->data() + at, &nh, sizeof nh);
  memcpy(buf->data() + at + NLMSG_HDRLEN, &ifi, sizeof ifi);
  if (attr) {
    rtattr a{};
    a.rta_len = RTA_LENGTH(name.size() + 1);
    a.rta_type = IFLA_IFNAME;
    char* where = buf->data() + at + NLMSG_LENGTH(sizeof(ifinfomsg));
    memcpy(where, &a, sizeof a);
    memcpy(where + RTA_LENGTH(0), name.c_str(), name.size() + 1);
  }
}

}  // namespace

TEST(LinkMonitor, ParsesLinkMessagesOfTheWatchedInterfacesOnly) {
  LinkMonitor m({"203.0.113.1", "203.0.113.2", "203.0.113.3"});  // on no interface here: none watched
  m.watch(1, 7, "rail1");
  m.watch(2, 7, "rail1");  // two rails on one interface: both follow it
  std::vector<char> buf;
  add_link_message(&buf, RTM_NEWLINK, 3, IFF_UP);                // another interface
  add_link_message(&buf, RTM_NEWLINK, 7, IFF_UP | IFF_RUNNING);  // up: nothing to do
  add_link_message(&buf, RTM_NEWLINK, 7, IFF_UP);                // up but no carrier: down
  add_link_message(&buf, RTM_NEWLINK, 7, IFF_UP);                // the same again: nothing new
  std::vector<LinkMonitor::Change> changes;
  m.on_messages(buf.data(), buf.size(), 5.0, &changes);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].rail, 1);
  EXPECT_EQ(changes[1].rail, 2);
  EXPECT_FALSE(changes[0].usable);
  EXPECT_NE(changes[0].why.find("rail1"), std::string::npos) << changes[0].why;
  EXPECT_TRUE(m.usable(0));
  EXPECT_FALSE(m.usable(1));

  buf.clear();
  changes.clear();
  add_link_message(&buf, RTM_NEWLINK, 7, IFF_UP | IFF_RUNNING);
  m.on_messages(buf.data(), buf.size(), 6.0, &changes);
  EXPECT_TRUE(changes.empty());
  m.expire(6.5, &changes);
  EXPECT_TRUE(changes.empty());
  m.expire(7.0, &changes);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_TRUE(changes[0].usable);
  EXPECT_TRUE(m.usable(1) && m.usable(2));

  // A deleted interface is a lost link; a truncated message is ignored whole.
  buf.clear();
  changes.clear();
  add_link_message(&buf, RTM_DELLINK, 7, IFF_UP | IFF_RUNNING);
  m.on_messages(buf.data(), buf.size() - 1, 8.0, &changes);
  EXPECT_TRUE(changes.empty());
  m.on_messages(buf.data(), buf.size(), 8.0, &changes);
  EXPECT_EQ(changes.size(), 2u);
}

TEST(LinkMonitor, FollowsAnInterfaceMadeAgainUnderItsName) {
  LinkMonitor m({"203.0.113.1"});
  m.watch(0, 7, "rail0");
  std::vector<char> buf;
  add_link_message(&buf, RTM_DELLINK, 7, 0);                               // the old one goes: lost
  add_link_message(&buf, RTM_NEWLINK, 12, IFF_UP | IFF_RUNNING, "other");  // not ours
  add_link_message(&buf, RTM_NEWLINK, 9, IFF_UP | IFF_RUNNING, "rail0");   // made again, up
  std::vector<LinkMonitor::Change> changes;
  m.on_messages(buf.data(), buf.size(), 1.0, &changes);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_FALSE(changes[0].usable);
  m.expire(2.0, &changes);
  ASSERT_EQ(changes.size(), 2u) << "the new interface's up counts";
  EXPECT_TRUE(changes[1].usable);
  buf.clear();
  add_link_message(&buf, RTM_NEWLINK, 9, 0);
  m.on_messages(buf.data(), buf.size(), 3.0, &changes);
  EXPECT_EQ(changes.size(), 3u) << "and so does its down";
}

// As root: a veth pair in a network namespace of its own, rail address on one
// end; taking the OTHER end down takes this end's carrier (IFF_RUNNING), as a
// switch port going dark does. The monitor must report it from the kernel's
// messages at once.
TEST(LinkMonitor, SeesACarrierLossFromTheKernel) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a network namespace)";
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // in a namespace of its own, so nothing outside sees these interfaces
    close(pipefd[0]);
    auto say = [&](const std::string& s) {
      if (write(pipefd[1], s.data(), s.size()) < 0) _exit(3);
    };
    if (unshare(CLONE_NEWNET) != 0) say("unshare failed"), _exit(2);
    if (system("ip link add rctest0 type veth peer name rctest1 && ip addr add 192.0.2.1/24 dev rctest0 && "
               "ip link set rctest0 up && ip link set rctest1 up") != 0)
      say("cannot make a veth pair"), _exit(2);
    for (int i = 0; i < 100 && !(if_nametoindex("rctest0") && system("ip link show rctest0 | grep -q LOWER_UP") == 0); ++i)
      usleep(20000);
    LinkMonitor m({"192.0.2.1"});
    if (m.fd() < 0) say("no netlink socket"), _exit(1);
    if (m.interface_of(0) != "rctest0") say("rail address not on rctest0: '" + m.interface_of(0) + "'"), _exit(1);
    std::vector<LinkMonitor::Change> changes;
    double t0 = railcoll::rt::now_seconds();
    if (system("ip link set rctest1 down") != 0) say("ip link set down failed"), _exit(2);
    while (changes.empty() && railcoll::rt::now_seconds() < t0 + 2) {
      pollfd p{m.fd(), POLLIN, 0};
      poll(&p, 1, 100);
      m.read_events(railcoll::rt::now_seconds(), &changes);
    }
    if (changes.size() != 1 || changes[0].usable || m.usable(0)) say("no lost link reported within 2 s"), _exit(1);
    char took[64];
    snprintf(took, sizeof took, "lost link seen after %.1f ms", 1e3 * (railcoll::rt::now_seconds() - t0));
    say(took);
    _exit(0);
  }
  close(pipefd[1]);
  std::string said;
  char b[256];
  for (ssize_t r; (r = read(pipefd[0], b, sizeof b)) > 0;) said.append(b, static_cast<size_t>(r));
  close(pipefd[0]);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << said;
  if (WEXITSTATUS(status) == 2) GTEST_SKIP() << said;
  EXPECT_EQ(WEXITSTATUS(status), 0) << said;
  printf("%s\n", said.c_str());
}
