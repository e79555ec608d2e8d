#include "common/formats/inflate.h"

#include <libdeflate.h>

#include <memory>

#include <fmt/format.h>

#include "common/base/error.h"

namespace tpuperf {

namespace {

struct DecompressorFree {
  void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
};

// One per thread, kept: allocating it costs more than inflating a small member.
libdeflate_decompressor& decompressor() {
  thread_local std::unique_ptr<libdeflate_decompressor, DecompressorFree> d(
      libdeflate_alloc_decompressor());
  if (!d) throw Error("cannot allocate a libdeflate decompressor (out of memory)");
  return *d;
}

}  // namespace

void inflate_exact(const uint8_t* in, size_t in_n, uint8_t* out, size_t out_n) {
  size_t got = 0;
  // With actual_out given, a stream shorter than out_n succeeds and says how long it was.
  libdeflate_result rc =
      libdeflate_deflate_decompress_ex(&decompressor(), in, in_n, out, out_n, nullptr, &got);
  switch (rc) {
    case LIBDEFLATE_SUCCESS:
      if (got != out_n)
        throw Error(fmt::format("deflate stream ends after {} bytes, but the member declares {}", got,
                                out_n));
      return;
    case LIBDEFLATE_INSUFFICIENT_SPACE:
      throw Error(fmt::format("deflate stream holds more than the declared {} bytes", out_n));
    default:
      // libdeflate does not tell a damaged stream from one cut short: both end in bits
      // that decode to nothing valid.
      throw Error(fmt::format("corrupt or truncated deflate data: its {} compressed bytes do not "
                              "inflate to the declared {} bytes",
                              in_n, out_n));
  }
}

uint32_t crc32_of(const uint8_t* p, size_t n, uint32_t crc) {
  // libdeflate (like zlib) answers a null buffer with the initial value 0, which would
  // drop the CRC so far when an empty array's data pointer is null.
  return n == 0 ? crc : libdeflate_crc32(crc, p, n);
}

}  // namespace tpuperf
