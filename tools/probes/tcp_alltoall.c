// What the rails give a plain program: an all-to-all of raw TCP between the
// emulated cluster's nodes, no railcoll inside (docs/runtime.md, "Rails kept
// full"). Run one process per node (and per local index) through
// scripts/tcp-alltoall.sh, which starts them in the nodes' namespaces.
//
// Every process sends BYTES to the process of the same local index on every
// other node, on every rail it uses, and receives as much from each. Call i
// starts at the shared-clock time T0 + i * PERIOD (CLOCK_MONOTONIC is one clock
// in every namespace), so no barrier is needed; the process prints
// "node call microseconds" when its part of the call is done.
//   TCP_A2A_MODE=once   every send and receive at once (default)
//   TCP_A2A_MODE=steps  step d: send to node + d, receive from node - d; the
//                       next step when both are done
//   TCP_A2A_LOWAT=N     TCP_NOTSENT_LOWAT on every socket (railcoll's default 32768)
//   TCP_A2A_CC=NAME     the congestion control of every socket, set before it
//                       connects (default cubic, as railcoll's rails; "" keeps
//                       the system's, which may pace: BBR)
// Usage: railcoll-tcp-alltoall NODE NODES LOCAL_INDEX FIRST_RAIL RAILS BYTES CALLS PERIOD_MS T0_NS
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { kMaxNodes = 64, kMaxRails = 8, kPortBase = 47000 };

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char* what) {
  fprintf(stderr, "railcoll-tcp-alltoall: %s: %s\n", what, strerror(errno));
  exit(1);
}

// The cluster's addressing (src/testbed/cluster.cpp): rail r of node n is 198.18.r.(n+1).
static struct sockaddr_in address_of(int rail, int node, int port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  char text[32];
  snprintf(text, sizeof text, "198.18.%d.%d", rail, node + 1);
  inet_pton(AF_INET, text, &a.sin_addr);
  return a;
}

// Before connect or listen: a congestion control set later leaves a socket
// that started with BBR paced by the kernel (docs/runtime.md).
static void set_congestion(int s, const char* cc) {
  if (*cc && setsockopt(s, IPPROTO_TCP, TCP_CONGESTION, cc, (socklen_t)strlen(cc)) != 0) die("TCP_CONGESTION");
}

int main(int argc, char** argv) {
  if (argc != 10) {
    fprintf(stderr, "usage: railcoll-tcp-alltoall NODE NODES LOCAL_INDEX FIRST_RAIL RAILS BYTES CALLS PERIOD_MS T0_NS\n");
    return 2;
  }
  const int me = atoi(argv[1]), nodes = atoi(argv[2]), local = atoi(argv[3]), first_rail = atoi(argv[4]),
            rails = atoi(argv[5]), calls = atoi(argv[7]);
  const long bytes = atol(argv[6]);
  const double period = atof(argv[8]) / 1e3, t0 = atof(argv[9]) / 1e9;
  const char* mode = getenv("TCP_A2A_MODE");
  const int steps = mode && strcmp(mode, "steps") == 0;
  const int lowat = getenv("TCP_A2A_LOWAT") ? atoi(getenv("TCP_A2A_LOWAT")) : 0;
  if (nodes < 2 || nodes > kMaxNodes || me < 0 || me >= nodes || rails < 1 || rails > kMaxRails || bytes < 1) {
    fprintf(stderr, "railcoll-tcp-alltoall: bad arguments\n");
    return 2;
  }
  const char* cc = getenv("TCP_A2A_CC") ? getenv("TCP_A2A_CC") : "cubic";
  static int fd[kMaxNodes][kMaxRails];
  int listener[kMaxRails];
  for (int r = 0; r < rails; ++r) {
    listener[r] = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listener[r], SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    set_congestion(listener[r], cc);  // accepted sockets inherit it
    struct sockaddr_in a = address_of(first_rail + r, me, kPortBase + 10 * local + first_rail + r);
    if (bind(listener[r], (struct sockaddr*)&a, sizeof a) || listen(listener[r], kMaxNodes)) die("listen");
  }
  // The lower node connects, the higher accepts; the first 4 bytes name the connecting node.
  for (int p = me + 1; p < nodes; ++p)
    for (int r = 0; r < rails; ++r) {
      struct sockaddr_in to = address_of(first_rail + r, p, kPortBase + 10 * local + first_rail + r);
      struct sockaddr_in from = address_of(first_rail + r, me, 0);
      int s = -1;
      for (double give_up = now_s() + 10;;) {
        s = socket(AF_INET, SOCK_STREAM, 0);
        set_congestion(s, cc);
        if (bind(s, (struct sockaddr*)&from, sizeof from)) die("bind");
        if (connect(s, (struct sockaddr*)&to, sizeof to) == 0) break;
        close(s);
        if (now_s() > give_up) die("connect");
        usleep(10000);
      }
      int32_t id = me;
      if (write(s, &id, 4) != 4) die("write");
      fd[p][r] = s;
    }
  for (int i = 0; i < me * rails; ++i) {
    int r = i % rails, s = accept(listener[r], NULL, NULL);
    int32_t id = -1;
    if (s < 0 || read(s, &id, 4) != 4 || id < 0 || id >= me) die("accept");
    fd[id][r] = s;
  }
  int ep = epoll_create1(0);
  for (int p = 0; p < nodes; ++p)
    for (int r = 0; r < rails && p != me; ++r) {
      int one = 1;
      setsockopt(fd[p][r], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      if (lowat > 0) setsockopt(fd[p][r], IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof lowat);
      fcntl(fd[p][r], F_SETFL, O_NONBLOCK);
      struct epoll_event e = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.u32 = (uint32_t)(p * kMaxRails + r)};
      epoll_ctl(ep, EPOLL_CTL_ADD, fd[p][r], &e);
    }
  char* out = malloc((size_t)bytes);
  char* in = malloc((size_t)bytes);
  if (!out || !in) die("malloc");
  memset(out, 1, (size_t)bytes);
  static long sent[kMaxNodes][kMaxRails], got[kMaxNodes][kMaxRails];
  for (int call = 0; call < calls; ++call) {
    const double start = t0 + call * period;
    for (double left; (left = start - now_s()) > 0;)
      if (left > 0.002) usleep((useconds_t)((left - 0.001) * 1e6));
    for (int step = 1; step < (steps ? nodes : 2); ++step) {
      long due = 0;
      for (int p = 0; p < nodes; ++p)
        for (int r = 0; r < rails; ++r) {
          int to = p != me && (!steps || p == (me + step) % nodes);
          int from = p != me && (!steps || p == (me - step + nodes) % nodes);
          sent[p][r] = to ? 0 : bytes;
          got[p][r] = from ? 0 : bytes;
          due += (to ? bytes : 0) + (from ? bytes : 0);
        }
      while (due > 0) {
        for (int p = 0; p < nodes; ++p)
          for (int r = 0; r < rails && p != me; ++r) {
            for (ssize_t w; sent[p][r] < bytes && (w = send(fd[p][r], out + sent[p][r], (size_t)(bytes - sent[p][r]), MSG_DONTWAIT)) > 0;)
              sent[p][r] += w, due -= w;
            for (ssize_t w; got[p][r] < bytes && (w = recv(fd[p][r], in + got[p][r], (size_t)(bytes - got[p][r]), MSG_DONTWAIT)) > 0;)
              got[p][r] += w, due -= w;
          }
        if (due > 0) {
          struct epoll_event ev[64];
          if (epoll_wait(ep, ev, 64, 1000) < 0 && errno != EINTR) die("epoll_wait");
          if (now_s() > start + 60) {
            fprintf(stderr, "railcoll-tcp-alltoall: call %d took more than 60 s\n", call);
            return 1;
          }
        }
      }
    }
    printf("%d %d %.1f\n", me, call, (now_s() - start) * 1e6);
  }
  return 0;
}
