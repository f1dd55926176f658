#include "runtime/transport/transport_settings.hpp"

namespace railcoll::rt {

TransportSettings TransportSettings::from(const Settings& s) {
  TransportSettings t;
  t.job_key = s.text(Setting::JobKey);
  t.timeout = s.seconds(Setting::Timeout);
  t.rail_timeout = s.seconds(Setting::RailTimeout);
  t.shm_bytes = static_cast<uint64_t>(s.integer(Setting::ShmMib)) << 20;
  t.notsent_lowat = static_cast<int>(s.integer(Setting::NotsentLowat));
  t.tcp_congestion = s.text(Setting::TcpCongestion);
  t.ofi_provider = s.text(Setting::OfiProvider);
  t.ofi_strict_mr = s.flag(Setting::OfiStrictMr);
  t.ofi_verbose = s.flag(Setting::OfiVerbose);
  t.ofi_rma_bytes = s.given(Setting::OfiRmaBytes) ? s.integer(Setting::OfiRmaBytes) : -1;
  return t;
}

}  // namespace railcoll::rt
