// Byte collectives over MPI, 64-bit safe: gather of every rank's bytes to a root,
// allgather, and broadcast. MPI's counts and displacements are int, so sizes here are
// int64 and every transfer goes in pieces of at most chunk_bytes (<= INT_MAX); a total
// that this process cannot hold in memory is an Error, not a truncation. All functions are
// collective over comm: every rank calls them with the same root and chunk_bytes.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tpuperf {

// The largest single MPI transfer: 1 GiB, well below INT_MAX bytes, so that no count
// overflows whatever the element size. Tests pass tiny chunks to exercise the pieces.
constexpr int64_t kMpiChunkBytes = int64_t{1} << 30;

// Every rank's contribution, concatenated in rank order.
struct RankBytes {
  std::string bytes;
  std::vector<int64_t> offsets;  // size + 1 entries: rank r holds [offsets[r], offsets[r + 1])
  std::string_view of(int rank) const;
  int ranks() const { return static_cast<int>(offsets.size()) - 1; }
};

// Every rank's bytes to root. Only root's result holds them; other ranks get an empty one.
RankBytes gather_bytes(std::string_view mine, int root, MPI_Comm comm,
                       int64_t chunk_bytes = kMpiChunkBytes);
// Every rank's bytes to every rank.
RankBytes allgather_bytes(std::string_view mine, MPI_Comm comm,
                          int64_t chunk_bytes = kMpiChunkBytes);
// root's bytes to every rank; the others' are replaced (resized to root's size).
void broadcast_bytes(std::string& bytes, int root, MPI_Comm comm,
                     int64_t chunk_bytes = kMpiChunkBytes);
// The same into a buffer of n bytes that every rank already has (n equal on all ranks).
void broadcast_bytes(char* data, int64_t n, int root, MPI_Comm comm,
                     int64_t chunk_bytes = kMpiChunkBytes);

}  // namespace tpuperf
