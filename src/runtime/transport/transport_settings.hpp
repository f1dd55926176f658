// What the transports read of the settings (core/settings.hpp): their own
// struct, so that a transport sees its knobs and nothing else. The defaults
// are the table's: from(Settings()).
#pragma once
#include <cstdint>
#include <string>

#include "core/settings.hpp"

namespace railcoll::rt {

struct TransportSettings {
  std::string job_key;   // RAILCOLL_JOB_KEY: every connection proves it ("": none)
  double timeout = 0;   // RAILCOLL_TIMEOUT: connecting, and the goodbye at the end
  // RAILCOLL_RAIL_TIMEOUT: a rail silent this long while another rail to the
  // same peer answers is given up. Long enough to ride out TCP's
  // retransmission back-offs after a loss at a shaper (docs/runtime.md,
  // "Rail failover", has what shorter ones did).
  double rail_timeout = 0;
  uint64_t shm_bytes = 0;  // RAILCOLL_SHM_MIB: the node segment's shared buffer
  // RAILCOLL_NOTSENT_LOWAT: a rail socket takes more bytes only while fewer
  // than this are unsent (TCP_NOTSENT_LOWAT; 0: the kernel's default), so a
  // rank that puts to several peers on one rail hands the kernel one stream
  // after the other (docs/runtime.md, "Rails kept full").
  int notsent_lowat = 0;
  // RAILCOLL_TCP_CONGESTION: congestion controls tried in order, set before a
  // rail connects ("": the system's). Not BBR, whose pacing stalls frames
  // without a loss (docs/runtime.md, "Tails").
  std::string tcp_congestion;
  // libfabric (RAILCOLL_OFI_*): the provider ("" = the first offered on the
  // rails' addresses, shm excepted); memory registered as strictly as any
  // provider asks (tests); say when a rail is given up; frames to another node
  // of at least rma_bytes by one-sided writes (-1: the transport's default).
  std::string ofi_provider;
  bool ofi_strict_mr = false;
  bool ofi_verbose = false;
  int64_t ofi_rma_bytes = -1;

  static TransportSettings from(const Settings& s);
};

}  // namespace railcoll::rt
