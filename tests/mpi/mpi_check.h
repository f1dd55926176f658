/* What the MPI test programs share: a failure report that stops printing after
 * ten (each program keeps `world_rank` and `errors`), and the byte pattern that
 * differs per rank, call and byte. */
#pragma once
#include <stdint.h>
#include <stdio.h>

#define FAIL(...)                                     \
  do {                                                \
    if (errors++ < 10) {                              \
      fprintf(stderr, "rank %d: FAIL: ", world_rank); \
      fprintf(stderr, __VA_ARGS__);                   \
      fputc('\n', stderr);                            \
    }                                                 \
  } while (0)

static inline unsigned char pattern(int rank, uint64_t j, int call) {
  uint32_t x = (uint32_t)rank * 0x9E3779B1u ^ (uint32_t)call * 0x85EBCA77u ^ (uint32_t)j * 0xC2B2AE3Du;
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 13;
  return (unsigned char)x;
}
