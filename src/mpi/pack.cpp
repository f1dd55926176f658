// Non-contiguous buffers: MPI lets every rank describe the same type signature
// with its own layout (a vector of 12 doubles with a stride on one rank, 12
// doubles in a row on another), so the layout never decides the route
// (layer.hpp). A rank whose buffer has gaps packs it into a staging buffer
// before the call and unpacks what landed there after it, with MPI's own
// PMPI_Pack / PMPI_Unpack (the bytes of the signature, back to back, on a
// homogeneous machine: exactly what a contiguous rank sends). A thread's
// staging buffers are kept across its blocking calls, so a program that calls
// with the same layout again pays the copies and no allocation (docs/mpi.md,
// "Datatypes"); a nonblocking or persistent call has its own (call.hpp).
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "mpi/layer.hpp"

namespace railcoll::mpi {

namespace {

// MPI's pack count and position are ints: pack at most this many bytes at once.
constexpr uint64_t kPackChunk = uint64_t{1} << 30;

uint64_t chunk_elements(const DataView& v) {
  return v.type_size >= kPackChunk ? 1 : kPackChunk / v.type_size;
}

// Packing produced other than the signature's bytes: a heterogeneous MPI,
// which this layer cannot serve correctly. End the job rather than move
// wrong bytes.
[[noreturn]] void wrong_pack_size(const char* what, int got, uint64_t want) {
  std::string msg = std::string("railcoll-mpi: rank ") + std::to_string(layer().world_rank) + ": " + what + " gave " +
                    std::to_string(got) + " bytes for a signature of " + std::to_string(want) +
                    " (a heterogeneous MPI?); ending the job\n";
  if (write(2, msg.data(), msg.size()) < 0) {
  }
  PMPI_Abort(MPI_COMM_WORLD, 1);
  abort();
}

// MPICH 4.0's MPI_Pack and MPI_Unpack refuse a null buffer, MPI_BOTTOM
// included (its datatype then holds absolute addresses). Such a buffer is
// described to them from its first byte instead: n elements of the type in a
// struct placed at minus that address. `run` packs or unpacks 1 element of
// the type it is given at the pointer it is given.
template <class Run>
void at_bottom(const char* base, uint64_t n, const DataView& v, Run run) {
  if (base) return run(base, static_cast<int>(n), v.type);
  MPI_Datatype placed;
  int block = static_cast<int>(n);
  MPI_Aint displ = -v.offset;
  MPI_Datatype type = v.type;
  PMPI_Type_create_struct(1, &block, &displ, &type, &placed);
  PMPI_Type_commit(&placed);
  run(reinterpret_cast<const char*>(static_cast<uintptr_t>(v.offset)), 1, placed);  // its first byte
  PMPI_Type_free(&placed);
}

}  // namespace

char* Stage::get(Staging slot, uint64_t bytes) {
  Buffer& b = buffers_[static_cast<int>(slot)];
  if (bytes > b.capacity) {
    free(b.data);
    b.capacity = bytes;
    b.data = static_cast<char*>(malloc(bytes ? bytes : 1));
    if (!b.data) {
      b.capacity = 0;
      wrong_pack_size("allocating a staging buffer", 0, bytes);
    }
  }
  return b.data;
}

void pack_into(char* to, const void* buf, uint64_t count, const DataView& v) {
  if (v.contiguous) {
    if (count) memcpy(to, static_cast<const char*>(buf) + v.offset, count * v.type_size);
    return;
  }
  const uint64_t step = chunk_elements(v);
  for (uint64_t done = 0; done < count;) {
    const uint64_t n = count - done < step ? count - done : step;
    int position = 0;
    at_bottom(static_cast<const char*>(buf) + static_cast<MPI_Aint>(done) * v.extent, n, v,
              [&](const char* from, int count, MPI_Datatype type) {
                PMPI_Pack(from, count, type, to + done * v.type_size, static_cast<int>(n * v.type_size), &position,
                          MPI_COMM_SELF);
              });
    if (static_cast<uint64_t>(position) != n * v.type_size) wrong_pack_size("MPI_Pack", position, n * v.type_size);
    done += n;
  }
}

void unpack_from(const char* from, void* buf, uint64_t count, const DataView& v) {
  if (v.contiguous) {
    if (count) memcpy(static_cast<char*>(buf) + v.offset, from, count * v.type_size);
    return;
  }
  const uint64_t step = chunk_elements(v);
  for (uint64_t done = 0; done < count;) {
    const uint64_t n = count - done < step ? count - done : step;
    int position = 0;
    at_bottom(static_cast<const char*>(buf) + static_cast<MPI_Aint>(done) * v.extent, n, v,
              [&](const char* into, int count, MPI_Datatype type) {
                PMPI_Unpack(from + done * v.type_size, static_cast<int>(n * v.type_size), &position,
                            const_cast<char*>(into), count, type, MPI_COMM_SELF);
              });
    if (static_cast<uint64_t>(position) != n * v.type_size) wrong_pack_size("MPI_Unpack", position, n * v.type_size);
    done += n;
  }
}

void Stage::release() {
  for (Buffer& b : buffers_) {
    free(b.data);
    b = {};
  }
}

Stage& thread_stage() {
  static RAILCOLL_MPI_THREAD_LOCAL Stage stage;
  return stage;
}

}  // namespace railcoll::mpi
