// Job authentication: HMAC-SHA256 over a per-job secret (RAILCOLL_JOB_KEY),
// computed by OpenSSL's libcrypto (a maintained implementation, not our own):
// the handshakes of the store and of every data connection prove knowledge of
// the key without sending it.
#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace railcoll::rt {

using Digest = std::array<uint8_t, 32>;

Digest sha256(const void* data, size_t n);
Digest hmac_sha256(const std::string& key, const void* data, size_t n);
inline Digest hmac_sha256(const std::string& key, const std::string& msg) {
  return hmac_sha256(key, msg.data(), msg.size());
}
// Compares without an early exit (CRYPTO_memcmp), so timing tells nothing about
// where they differ.
bool equal_constant_time(const void* a, const void* b, size_t n);
// n bytes from the kernel's random source (getrandom); throws on failure.
std::string random_bytes(size_t n);
std::string to_hex(const void* data, size_t n);
// The bytes of a hex string; "" if it is not one.
std::string from_hex(const std::string& hex);

}  // namespace railcoll::rt
