// SHA-256, HMAC and the constant-time compare come from libcrypto (OpenSSL).
#include "runtime/bootstrap/auth.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace railcoll::rt {

Digest sha256(const void* data, size_t n) {
  Digest d;
  unsigned int len = 0;
  static const unsigned char kEmpty = 0;
  if (EVP_Digest(n ? data : &kEmpty, n, d.data(), &len, EVP_sha256(), nullptr) != 1 || len != d.size())
    throw std::runtime_error("libcrypto: SHA-256 failed");
  return d;
}

Digest hmac_sha256(const std::string& key, const void* data, size_t n) {
  Digest d;
  unsigned int len = 0;
  // An empty key (a job without RAILCOLL_JOB_KEY) is valid HMAC input; libcrypto
  // wants a non-null pointer for it.
  static const unsigned char kEmpty = 0;
  const void* k = key.empty() ? static_cast<const void*>(&kEmpty) : key.data();
  const auto* msg = n ? static_cast<const unsigned char*>(data) : &kEmpty;
  if (!HMAC(EVP_sha256(), k, static_cast<int>(key.size()), msg, n, d.data(), &len) ||
      len != d.size())
    throw std::runtime_error("libcrypto: HMAC-SHA256 failed");
  return d;
}

bool equal_constant_time(const void* a, const void* b, size_t n) { return CRYPTO_memcmp(a, b, n) == 0; }

std::string random_bytes(size_t n) {
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(out.data() + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) throw std::runtime_error(std::string("getrandom failed: ") + strerror(errno));
    got += static_cast<size_t>(r);
  }
  return out;
}

std::string to_hex(const void* data, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  auto p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) s += digits[p[i] >> 4], s += digits[p[i] & 15];
  return s;
}

std::string from_hex(const std::string& hex) {
  auto nibble = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
  if (hex.size() % 2) return "";
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return "";
    out += static_cast<char>(hi << 4 | lo);
  }
  return out;
}

}  // namespace railcoll::rt
