/* railcoll: collective communication for multi-rail SMP clusters.
 *
 * C API. Every call returns a railcoll_status_t; railcoll_strerror() turns it
 * into text and railcoll_last_error() gives the detailed message of the last
 * failed call on this thread. No call aborts the process on bad input. */
#ifndef RAILCOLL_RAILCOLL_H
#define RAILCOLL_RAILCOLL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RAILCOLL_VERSION_MAJOR 0
#define RAILCOLL_VERSION_MINOR 1

typedef enum {
  RAILCOLL_OK = 0,
  RAILCOLL_ERR_ARG = 1,        /* an argument is invalid (null, out of range, unknown name) */
  RAILCOLL_ERR_UNSUPPORTED = 2, /* the algorithm does not take this option or input */
  RAILCOLL_ERR_VERIFY = 3,     /* a schedule failed verification */
  RAILCOLL_ERR_NOMEM = 4,      /* out of memory */
  RAILCOLL_ERR_INTERNAL = 5    /* a bug in railcoll: please report it */
} railcoll_status_t;

const char* railcoll_version(void);
const char* railcoll_strerror(railcoll_status_t status);
/* Detailed message of the last failed call on this thread ("" if none). */
const char* railcoll_last_error(void);

/* Algorithms, by index: 0 <= i < railcoll_algorithm_count(). */
int railcoll_algorithm_count(void);
railcoll_status_t railcoll_algorithm_name(int index, const char** collective, const char** name);

/* Builds the all-gather schedule of `algorithm` for `nranks` ranks, where rank r
 * lives on node node_of[r] (node_of may be NULL: one rank per node), with `rails`
 * rails and `bytes` per rank, and verifies it symbolically. RAILCOLL_OK when it
 * is correct; RAILCOLL_ERR_VERIFY with the verifier's message otherwise. */
railcoll_status_t railcoll_verify_allgather(const char* algorithm, int nranks, const int* node_of, int rails,
                                            size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* RAILCOLL_RAILCOLL_H */
