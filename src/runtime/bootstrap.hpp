// The settings a communicator starts from: who this process is (rank, size,
// store), and the RAILCOLL_* tunables, read from the environment of whichever
// launcher started it. Apart from comm.hpp because reading them needs no
// communicator (the C API reads the settings alone for an explicit init).
#pragma once
#include <cstdint>
#include <exception>
#include <string>

namespace railcoll::rt {

struct Bootstrap {
  int rank = 0, size = 1;
  std::string store;        // host:port
  std::string job_id;       // empty: the store makes one
  std::string job_key;      // RAILCOLL_JOB_KEY: the secret every connection proves; empty: none
  std::string node_id;      // identity of this node (RAILCOLL_NODE or hostname)
  std::string rails_spec;   // RAILCOLL_RAILS
  double timeout = 60;      // RAILCOLL_TIMEOUT, seconds
  uint64_t shm_bytes = 256ull << 20;
  // RAILCOLL_SPIN_US: how long a wait spins (yielding the core) before it sleeps.
  // Unset (spin_given false): 2 ms where every rank of the node has a core of
  // its own; where they outnumber the cores (Executor, spin_budget) none, since
  // a spinning waiter takes the core from the rank it waits for and calls back
  // to back grew tails of 10-200x their median, except 200 us in calls of at
  // most 16 KiB a rank, whose waits are short (docs/runtime.md, "Tails").
  double spin_seconds = 0.002;
  bool spin_given = false;
  // RAILCOLL_PROGRESS_THREAD=0: nonblocking and persistent calls advance only
  // inside railcoll calls; else (default) also on a thread of the communicator,
  // made at its first such call, asleep while nothing arrives (requests.hpp).
  bool progress_thread = true;
  // RAILCOLL_PROGRESS_NICE: the progress thread's nice value (-20..19; unset:
  // the process's). A negative one needs the right to raise priority
  // (CAP_SYS_NICE or RLIMIT_NICE); without it the thread keeps the default.
  int progress_nice = 0;
  bool progress_nice_given = false;
  // RAILCOLL_RAIL_TIMEOUT: a rail that carries nothing this long while another
  // rail to the same peer answers is given up (its traffic moves to the others).
  // 0.5 s gave up healthy rails in make run (4 times in 13 minutes, 16 ranks on
  // 2 cores): TCP's retransmission back-off after a loss at the shaper
  // (200, 400, 800 ms) outlasts it. 2 s rides out three back-offs.
  double rail_timeout = 2.0;
  // RAILCOLL_STRIPE_BYTES: puts above this many bytes are split over all rails
  // (the schedules' striping threshold). Every rank must use the same value: it
  // is part of the call's signature. Seed 000 §6.4 uses 1 KiB (as railcoll show
  // and sim do); over TCP a part costs a frame, a send and a receiver's wake-up
  // on each rail, more than half of 16 KiB's 130 us on a 1 Gbit/s rail saves:
  // 2 KiB all-gathers on 4 x 4 ranks took 106-122 us with 16 KiB against
  // 154-177 us with 1 KiB (docs/runtime.md, "Striping threshold").
  uint64_t stripe_bytes = 16 << 10;
  // RAILCOLL_NOTSENT_LOWAT: a rail socket takes more bytes only when fewer than
  // this many of its bytes are still unsent (TCP_NOTSENT_LOWAT; 0: the kernel's
  // default, everything up to the send buffer). The rest waits in the rank's own
  // queue, so a rank that puts to several peers on one rail hands the kernel one
  // stream after the other instead of all at once, and each rail carries about
  // one stream into each receiver. 4 x 1 ranks, 2 rails, 1 MiB all-gathers: 13.8
  // ms against 16.2 (91% of the rail bound against 78%); 32 KiB measured as good
  // as 4 or 16 KiB, better than 128 KiB (docs/runtime.md, "Rails kept full").
  int notsent_lowat = 32 << 10;
  // RAILCOLL_TCP_CONGESTION: the congestion controls a rail socket tries, in
  // order, before it keeps the system's default ("": keep it). Not BBR, which
  // machines often default to: back to back, 64 KiB all-gathers had one call in
  // ten 5-50x the median, every stall a share handed to the kernel that arrived
  // 15-190 ms later without a loss (BBR's pacing timer and its 200 ms
  // PROBE_RTT); with cubic or reno p99/p50 went from 18-31 to 1.2-2.3
  // (docs/runtime.md, "Tails"). Set before a rail connects: a socket BBR has
  // initialised stays paced by the kernel after it switches (a frame's tail
  // held 2-4 ms after a rest). reno is there because unprivileged processes
  // may only pick what net.ipv4.tcp_allowed_congestion_control allows.
  std::string tcp_congestion = "cubic,reno";
  // RAILCOLL_TRANSPORT: "tcp" (the native socket transport) or "ofi" (libfabric
  // between nodes, docs/runtime.md "The libfabric transport"). Every rank must agree.
  std::string transport = "tcp";
  // RAILCOLL_OFI_PROVIDER: the libfabric provider ("" = the first libfabric
  // offers on the rails' addresses, shm excepted); RAILCOLL_OFI_STRICT_MR=1:
  // register and describe memory as if the provider required every mode railcoll
  // honours (tests); RAILCOLL_OFI_VERBOSE=1: say when a rail is given up.
  std::string ofi_provider;
  bool ofi_strict_mr = false;
  bool ofi_verbose = false;
  // RAILCOLL_OFI_RMA_BYTES: a data frame to a peer on another node of at least
  // this many bytes goes by one-sided writes (0: every frame by messages);
  // -1 (unset): 32 KiB, but none over the socket providers (docs/runtime.md).
  int64_t ofi_rma_bytes = -1;
  std::string source;       // which launcher's variables were used
  // RAILCOLL_TEST_REPLAY_CALL=n (tests only): send one data frame of call n
  // again at the start of call n+2, which its receiver must refuse.
  uint64_t replay_call = 0;
};
// Reads the environment of railcoll's launchers, torchrun, Open MPI, Hydra, Slurm.
// Throws RuntimeError(Bootstrap) on a wrong value; with `bad`, a wrong value of
// a RAILCOLL_* setting (RAILCOLL_TIMEOUT, RAILCOLL_SHM_MIB, ...) is kept there
// instead and its default used, so that the rank can still take part in
// set-up and fail it on every rank at once (rt::Comm's Check); who the
// process is (rank, size, store) still throws, since no peer can be told.
Bootstrap bootstrap_from_env(std::exception_ptr* bad = nullptr);
// Only the settings that do not say who the process is (node, rails, key, job
// id, timeouts): for a communicator whose rank, size and store are given.
Bootstrap settings_from_env(std::exception_ptr* bad = nullptr);

}  // namespace railcoll::rt
